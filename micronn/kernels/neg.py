"""NEG of a float32 tensor, like TFLM's reference kernel (flips the sign bit, of NaNs too).

TFLM has no integer NEG (it fails at invoke for every other type).
"""

from __future__ import annotations

import numpy as np

from micronn.kernels import _unary as un
from micronn.kernels.base import register


@register
class Neg(un.FloatUnary):
    op = "NEG"
    apply = staticmethod(np.negative)
