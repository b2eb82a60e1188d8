"""CEIL of a float32 tensor, like TFLM's reference kernel (C's ceilf); TFLM requires equal shapes."""

from __future__ import annotations

import numpy as np

from micronn.kernels.base import register
from micronn.kernels.floor import Floor


@register
class Ceil(Floor):
    op = "CEIL"
    same_shape = True

    @staticmethod
    def apply(x: np.ndarray) -> np.ndarray:
        return np.ceil(x)
