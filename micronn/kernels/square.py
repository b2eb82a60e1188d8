"""SQUARE of a float32 tensor, like TFLM's reference kernel (``x * x`` in float32). TFLM has no integer SQUARE."""

from __future__ import annotations

import numpy as np

from micronn.kernels import _unary as un
from micronn.kernels.base import Kernel, Node, register


@register
class Square(Kernel):
    op = "SQUARE"
    dtypes = frozenset({"float32"})
    reads_input_first = True

    def prepare(self, node: Node) -> None:
        un.unary_operands(node)

    def invoke(self, node: Node) -> None:
        x, out = node.input(0), node.output(0)
        with np.errstate(all="ignore"):
            out[...] = (x * x).reshape(out.shape)
