"""ARG_MIN: the index of the smallest value along an axis, like TFLM (see ``_reduce.ArgMinMax``)."""

from __future__ import annotations

from micronn.kernels._reduce import ArgMinMax
from micronn.kernels.base import register


@register
class ArgMin(ArgMinMax):
    """TFLM ARG_MIN for float32 and int8 inputs, int32 output."""

    op = "ARG_MIN"
    is_max = False
