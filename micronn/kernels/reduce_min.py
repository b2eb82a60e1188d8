"""REDUCE_MIN: the minimum over some axes, like TFLM's reference kernel (see ``_reduce.MaxOrMin``)."""

from __future__ import annotations

from micronn.kernels._reduce import MaxOrMin
from micronn.kernels.base import register


@register
class ReduceMin(MaxOrMin):
    """TFLM REDUCE_MIN for float32 and int8."""

    op = "REDUCE_MIN"
    is_max = False
