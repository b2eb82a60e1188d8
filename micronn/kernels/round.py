"""ROUND of a float32 tensor, like TFLM's reference kernel: halves go to the even neighbour.

TFLM computes ``f = floor(x)``, ``d = x - f`` and returns ``f`` when ``d < 0.5`` (or ``d == 0.5`` and ``f``
even), else ``f + 1``. This differs from numpy's rint in the sign of zero: -0.3 rounds to +0.0
(``-1 + 1``), and -0.0 stays -0.0. Infinities give ``inf - inf = NaN`` as ``d`` and so ``f + 1``, which is
the same infinity. TFLM requires equal input and output shapes.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels.base import register
from micronn.kernels.floor import Floor


@register
class Round(Floor):
    op = "ROUND"
    same_shape = True

    @staticmethod
    def apply(x: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore"):
            f = np.floor(x)
            d = x - f
            # TFLM tests evenness through an int cast; beyond 2**23 every float is an integer and d == 0
            even = np.fmod(f, np.float32(2)) == 0
        keep = (d < np.float32(0.5)) | ((d == np.float32(0.5)) & even)
        return np.where(keep, f, f + np.float32(1))
