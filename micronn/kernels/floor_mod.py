"""FLOOR_MOD of float32 tensors, like TFLM's reference kernel (TFLM has no integer FLOOR_MOD).

TFLM takes the truncated remainder ``fmod(a, b)`` (exact, with the dividend's sign) and, when it is non-zero
and its sign differs from the divisor's, adds the divisor in float32. A zero divisor is not checked: the
remainder is NaN. Zero remainders keep their sign (-0.0 stays -0.0).

The wheel's compiler inlines that float ``fmod`` as the x87 ``fprem`` instruction, not glibc's ``fmodf``:
the results agree except for which NaN comes out when both operands are NaN. x87 loads quiet both, then
keeps the one with the larger significand (the positive one on a tie); this is reproduced here.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels import _extra
from micronn.kernels.base import Node, register

QUIET_BIT = np.uint32(0x00400000)
SIGNIFICAND = np.uint32(0x007FFFFF)


def x87_fmod(x1: np.ndarray, x2: np.ndarray) -> np.ndarray:
    """float32 ``fmod`` as x87 ``fprem`` computes it (see the module docstring for the NaN rule)."""
    r = np.fmod(x1, x2, out=np.empty(np.broadcast_shapes(x1.shape, x2.shape), np.float32))
    both = np.isnan(x1) & np.isnan(x2)
    if both.any():
        x1, x2 = np.broadcast_arrays(x1, x2)
        q1, q2 = x1[both].view(np.uint32) | QUIET_BIT, x2[both].view(np.uint32) | QUIET_BIT
        s1, s2 = q1 & SIGNIFICAND, q2 & SIGNIFICAND
        first = (s1 > s2) | ((s1 == s2) & (q1 < q2))  # equal significands: the one without the sign bit
        r[both] = np.where(first, q1, q2).view(np.float32)
    return r


@register
class FloorMod(_extra.FloatBinary):
    op = "FLOOR_MOD"

    def apply(self, node: Node, x1: np.ndarray, x2: np.ndarray) -> np.ndarray:
        trunc = x87_fmod(x1, x2)
        flip = (trunc != 0) & ((x2 < 0) != (trunc < 0))
        return np.where(flip, trunc + x2, trunc)
