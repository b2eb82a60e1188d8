"""LOGICAL_OR of two bool tensors with numpy broadcasting, like TFLM's reference kernel (see logical_and.py)."""

from __future__ import annotations

import numpy as np

from micronn.kernels.base import register
from micronn.kernels.logical_and import LogicalAnd


@register
class LogicalOr(LogicalAnd):
    op = "LOGICAL_OR"
    reads_input_first = True  # computes the whole result before writing

    @staticmethod
    def combine(x1: np.ndarray, x2: np.ndarray) -> np.ndarray:
        return np.logical_or(x1, x2)
