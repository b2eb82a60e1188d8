"""SQRT of a float32 tensor, like TFLM's reference kernel: ``sqrtf`` (IEEE, correctly rounded).

Negative inputs give NaN, -0.0 stays -0.0. TFLM has no integer SQRT.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels import _unary as un
from micronn.kernels.base import Kernel, Node, register


@register
class Sqrt(Kernel):
    op = "SQRT"
    dtypes = frozenset({"float32"})
    reads_input_first = True

    def prepare(self, node: Node) -> None:
        un.unary_operands(node)

    def invoke(self, node: Node) -> None:
        out = node.output(0)
        with np.errstate(all="ignore"):
            out[...] = np.sqrt(node.input(0)).reshape(out.shape)
