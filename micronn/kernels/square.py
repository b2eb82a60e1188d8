"""SQUARE of a float32 tensor, like TFLM's reference kernel (``x * x`` in float32). TFLM has no integer SQUARE."""

from __future__ import annotations

import numpy as np

from micronn.kernels import _unary as un
from micronn.kernels.base import register


@register
class Square(un.FloatUnary):
    op = "SQUARE"

    @staticmethod
    def apply(x: np.ndarray) -> np.ndarray:
        return x * x
