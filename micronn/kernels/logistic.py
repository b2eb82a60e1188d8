"""LOGISTIC (sigmoid), like TFLM's reference kernel: float32, int8 and int16.

* float32: ``1 / (1 + expf(-x))`` in float32, with TFLM's cut-offs: 1 above 16.619047, ``expf(x)``
  below -9.
* int8: TFLM ignores the output scale (the result is in 1/256 steps from -128, and the output zero
  point must be -128). Inputs beyond the radius saturate; the rest are scaled into Q4.27 and go
  through gemmlowp's fixed-point logistic (``micronn.fixedpoint.logistic``).
* int16: TFLM's 256-entry sigmoid table with linear interpolation (``micronn.fixedpoint.logistic_int16``);
  zero points of 0 and an output scale of 2**-15 are required.
"""

from __future__ import annotations

from micronn import fixedpoint as fp
from micronn.kernels._unary import Squashing
from micronn.kernels.base import register


@register
class Logistic(Squashing):
    op = "LOGISTIC"
    float_fn = staticmethod(fp.logistic_float)
    int16_fn = staticmethod(fp.logistic_int16)
    int8_fn = staticmethod(fp.logistic)
    int8_fraction_bits = 8
    int8_zero_point = -128
