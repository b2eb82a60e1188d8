"""FLOOR of a float32 tensor, like TFLM's reference kernel (C's floorf, elementwise)."""

from __future__ import annotations

import numpy as np

from micronn.kernels import _elementwise as ew
from micronn.kernels.base import Kernel, Node, register


@register
class Floor(Kernel):
    """TFLM FLOOR for float32. TFLM checks only the element count of the output, not its shape."""

    op = "FLOOR"
    dtypes = frozenset({"float32"})
    reads_input_first = True  # computes the whole result before writing
    same_shape = False

    def prepare(self, node: Node) -> None:
        (a,), out = ew.operands(node, 1)
        ew.same_types(node, [a, out], ["the input", "the output"])
        if self.same_shape and tuple(a.shape) != tuple(out.shape):
            raise node.fail(f"the output shape {tuple(out.shape)} differs from the input's {tuple(a.shape)}")
        ew.check_broadcast(node, [a], out, max_dims=None)

    @staticmethod
    def apply(x: np.ndarray) -> np.ndarray:
        return np.floor(x)

    def invoke(self, node: Node) -> None:
        out = node.output(0)
        out[...] = self.apply(node.input(0)).reshape(out.shape)
