"""FLOOR_DIV of float32 tensors, like TFLM's reference kernel (TFLM has no integer FLOOR_DIV).

TFLM divides in double, ``floor((double)a / (double)b)``, and rounds that to float32: not the same as
flooring the float32 quotient, which can round up to the next integer. It first checks every divisor
and fails the invoke on any zero (-0.0 included), so a constant zero divisor is refused at prepare.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels import _extra
from micronn.kernels.base import Node, register


@register
class FloorDiv(_extra.FloatBinary):
    op = "FLOOR_DIV"

    def prepare(self, node: Node) -> None:
        super().prepare(node)
        if node.inputs[1].is_constant and np.any(node.input(1) == 0):
            raise node.fail("the divisor holds a zero (TFLM fails the invoke: division by 0)")

    def apply(self, node: Node, x1: np.ndarray, x2: np.ndarray) -> np.ndarray:
        if np.any(x2 == 0):
            raise _extra.invoke_error(node, "division by 0 (the divisor holds a zero)")
        return np.floor(x1.astype(np.float64) / x2.astype(np.float64)).astype(np.float32)
