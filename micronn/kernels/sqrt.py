"""SQRT of a float32 tensor, like TFLM's reference kernel: ``sqrtf`` (IEEE, correctly rounded).

Negative inputs give NaN, -0.0 stays -0.0. TFLM has no integer SQRT.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels import _unary as un
from micronn.kernels.base import register


@register
class Sqrt(un.FloatUnary):
    op = "SQRT"
    apply = staticmethod(np.sqrt)
