"""SIN of a float32 tensor, like TFLM's reference kernel: C's ``sinf`` bit for bit. TFLM has no integer SIN."""

from __future__ import annotations

from micronn.kernels import _extra
from micronn.kernels._unary import FloatUnary
from micronn.kernels.base import register


@register
class Sin(FloatUnary):
    op = "SIN"
    apply = staticmethod(_extra.sinf)
