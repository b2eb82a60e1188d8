"""LOG of a float32 tensor, like TFLM's reference kernel: C's ``logf`` bit for bit.

Zero gives -inf, negative inputs NaN. TFLM has no integer LOG.
"""

from __future__ import annotations

from micronn.kernels import _unary as un
from micronn.kernels.base import register


@register
class Log(un.FloatUnary):
    op = "LOG"
    apply = staticmethod(un.logf)
