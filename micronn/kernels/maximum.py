"""MAXIMUM: the larger of two operands with numpy broadcasting, like TFLM's reference kernel.

TFLM compares the raw values, whatever the quantization (int8/int16 operands are not rescaled), and
picks ``x1 if x1 > x2 else x2``: a NaN in the first operand yields the second, and max(0.0, -0.0) is -0.0.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels import _elementwise as ew
from micronn.kernels.base import register


@register
class Maximum(ew.Binary):
    """TFLM MAXIMUM for float32, int8, int16, int32 and int64."""

    op = "MAXIMUM"
    dtypes = frozenset({"float32", "int8", "int16", "int32", "int64"})

    @staticmethod
    def apply(x1: np.ndarray, x2: np.ndarray) -> np.ndarray:
        return np.where(x1 > x2, x1, x2)
