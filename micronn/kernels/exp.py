"""EXP of a float32 tensor, like TFLM's reference kernel: C's ``expf`` bit for bit.

TFLM's EXP is float32 only, and its prepare insists on an output of exactly the input's shape.
"""

from __future__ import annotations

import numpy as np

from micronn import fixedpoint as fp
from micronn.kernels import _unary as un
from micronn.kernels.base import Kernel, Node, register


@register
class Exp(Kernel):
    op = "EXP"
    dtypes = frozenset({"float32"})
    reads_input_first = True

    def prepare(self, node: Node) -> None:
        un.unary_operands(node, same_shape=True)

    def invoke(self, node: Node) -> None:
        with np.errstate(all="ignore"):  # signaling NaNs and overflow behave like C, silently
            node.output(0)[...] = fp.expf(node.input(0))
