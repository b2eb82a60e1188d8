"""MAX_POOL_2D: TFLM's reference max pooling (float32, int8, int16).

Taps outside the input never win (the padding holds -inf or the type's minimum). For float32 the running
maximum is C's ``std::max(running, x)``, i.e. ``x`` replaces it only when ``running < x``: NaN inputs are
skipped and, between equal zeros, the first tap's sign is kept, exactly as in TFLM.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels._conv_util import FLOAT_MAX, Pool2D, clamp_float
from micronn.kernels.base import Node, register


@register
class MaxPool2D(Pool2D):
    op = "MAX_POOL_2D"
    pad_fill = {"float32": -np.inf, "int8": -128, "int16": -32768}

    def invoke(self, node: Node) -> None:
        x = node.input(0)
        out = node.output(0)
        if self.kind == "float32":
            best = np.full(out.shape, -FLOAT_MAX, np.float32)
            for view in self.taps(x):
                np.copyto(best, view, where=best < view)
            out[...] = clamp_float(best, self.fact_min, self.fact_max)
            return
        best = np.full(out.shape, np.iinfo(x.dtype).min, x.dtype)
        for view in self.taps(x):
            np.maximum(best, view, out=best)
        np.clip(best, self.act_min, self.act_max, out=best)
        out[...] = best
