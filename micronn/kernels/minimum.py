"""MINIMUM: the smaller of two operands with numpy broadcasting, like TFLM's reference kernel.

As MAXIMUM (see maximum.py), on raw values: ``x1 if x1 < x2 else x2``.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels.base import register
from micronn.kernels.maximum import Maximum


@register
class Minimum(Maximum):
    """TFLM MINIMUM for float32, int8, int16, int32 and int64."""

    op = "MINIMUM"

    @staticmethod
    def apply(x1: np.ndarray, x2: np.ndarray) -> np.ndarray:
        return np.where(x1 < x2, x1, x2)
