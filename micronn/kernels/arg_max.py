"""ARG_MAX: the index of the largest value along an axis, like TFLM (see ``_reduce.ArgMinMax``)."""

from __future__ import annotations

from micronn.kernels._reduce import ArgMinMax
from micronn.kernels.base import register


@register
class ArgMax(ArgMinMax):
    """TFLM ARG_MAX for float32 and int8 inputs, int32 output."""

    op = "ARG_MAX"
    is_max = True
