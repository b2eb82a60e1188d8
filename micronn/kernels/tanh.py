"""TANH, like TFLM's reference kernel: float32, int8 and int16.

* float32: C's ``tanhf``, bit for bit.
* int8: TFLM ignores the output quantization (the result is in 1/128 steps around 0). Inputs beyond
  the radius saturate; the rest are scaled into Q4.27 and go through gemmlowp's fixed-point tanh
  (``micronn.fixedpoint.tanh``).
* int16: TFLM's sigmoid table, ``tanh(x) = 2 sigmoid(2x) - 1`` (``micronn.fixedpoint.tanh_int16``);
  zero points of 0 and an output scale of 2**-15 are required.
"""

from __future__ import annotations

from micronn import fixedpoint as fp
from micronn.kernels._unary import Squashing, tanhf
from micronn.kernels.base import register


@register
class Tanh(Squashing):
    op = "TANH"
    float_fn = staticmethod(tanhf)
    int16_fn = staticmethod(fp.tanh_int16)
    int8_fn = staticmethod(fp.tanh)
    int8_fraction_bits = 7
