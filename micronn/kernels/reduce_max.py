"""REDUCE_MAX: the maximum over some axes, like TFLM's reference kernel (see ``_reduce.MaxOrMin``)."""

from __future__ import annotations

from micronn.kernels._reduce import MaxOrMin
from micronn.kernels.base import register


@register
class ReduceMax(MaxOrMin):
    """TFLM REDUCE_MAX for float32 and int8."""

    op = "REDUCE_MAX"
    is_max = True
