"""COS of a float32 tensor, like TFLM's reference kernel: C's ``cosf`` bit for bit. TFLM has no integer COS."""

from __future__ import annotations

from micronn.kernels import _extra
from micronn.kernels._unary import FloatUnary
from micronn.kernels.base import register


@register
class Cos(FloatUnary):
    op = "COS"
    apply = staticmethod(_extra.cosf)
