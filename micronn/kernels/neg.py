"""NEG of a float32 tensor, like TFLM's reference kernel (flips the sign bit, of NaNs too).

TFLM has no integer NEG (it fails at invoke for every other type).
"""

from __future__ import annotations

import numpy as np

from micronn.kernels import _unary as un
from micronn.kernels.base import Kernel, Node, register


@register
class Neg(Kernel):
    op = "NEG"
    dtypes = frozenset({"float32"})
    reads_input_first = True

    def prepare(self, node: Node) -> None:
        un.unary_operands(node)

    def invoke(self, node: Node) -> None:
        out = node.output(0)
        out[...] = np.negative(node.input(0)).reshape(out.shape)
