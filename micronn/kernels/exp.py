"""EXP of a float32 tensor, like TFLM's reference kernel: C's ``expf`` bit for bit.

TFLM's EXP is float32 only, and its prepare insists on an output of exactly the input's shape.
"""

from __future__ import annotations

from micronn import fixedpoint as fp
from micronn.kernels import _unary as un
from micronn.kernels.base import register


@register
class Exp(un.FloatUnary):
    op = "EXP"
    same_shape = True
    apply = staticmethod(fp.expf)
