"""LOGICAL_OR of two bool tensors with numpy broadcasting, like TFLM's reference kernel (see logical_and.py)."""

from __future__ import annotations

import numpy as np

from micronn.kernels.base import register
from micronn.kernels.logical_and import LogicalAnd


@register
class LogicalOr(LogicalAnd):
    op = "LOGICAL_OR"
    apply = staticmethod(np.logical_or)
