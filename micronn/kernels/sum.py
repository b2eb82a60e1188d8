"""SUM: the sum over some axes, like TFLM's reference kernel (see ``_reduce.MeanOrSum``)."""

from __future__ import annotations

from micronn.kernels._reduce import MeanOrSum
from micronn.kernels.base import register


@register
class Sum(MeanOrSum):
    """TFLM SUM for float32, int8 and int16."""

    op = "SUM"
    is_mean = False
