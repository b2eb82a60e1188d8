"""LOGICAL_AND of two bool tensors with numpy broadcasting, like TFLM's reference kernel.

TFLM checks no types here and reads any operand as bytes of bool; micronn accepts bool only.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels import _elementwise as ew
from micronn.kernels.base import register


@register
class LogicalAnd(ew.Binary):
    op = "LOGICAL_AND"
    dtypes = frozenset({"bool"})
    apply = staticmethod(np.logical_and)
