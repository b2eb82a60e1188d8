"""AVERAGE_POOL_2D: TFLM's reference average pooling (float32, int8, int16).

Only window taps inside the input count: the divisor is the per-pixel count of such taps. Quantized averages
round half away from zero ((sum +- count/2) / count with C's truncating division); float32 sums in TFLM's tap
order (padding adds +0.0, which never changes a float32 sum started at +0.0) and divides in float32.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels._conv_util import FloatSum, Pool2D, clamp_float, float_kernel
from micronn.kernels.base import Node, register


@register
class AveragePool2D(Pool2D):
    op = "AVERAGE_POOL_2D"
    pad_fill = {"float32": 0.0, "int8": 0, "int16": 0}

    def prepare(self, node: Node) -> None:
        super().prepare(node)
        counts = self.win.counts()
        if not counts.all():  # TFLM returns at the first such window, leaving the rest of the output unwritten
            raise node.fail("a pooling window lies entirely in the padding, where TFLM leaves the output unwritten")
        self.counts = counts[None, :, :, None]
        self.fcounts = self.counts.astype(np.float32)
        self.half = self.counts // 2

    def invoke(self, node: Node) -> None:
        x = node.input(0)
        out = node.output(0)
        if self.kind == "float32":
            avg = float_kernel(lambda exact: self._float_average(x, out.shape, exact))
            out[...] = clamp_float(avg, self.fact_min, self.fact_max)
            return
        acc = np.zeros(out.shape, np.int64)
        for view in self.taps(x):
            acc += view
        # C: acc > 0 ? (acc + n/2) / n : (acc - n/2) / n, dividing with truncation toward zero
        pos = acc > 0
        num = np.where(pos, acc + self.half, self.half - acc)  # |numerator|
        q = num // self.counts
        np.negative(q, out=q, where=~pos)
        np.clip(q, self.act_min, self.act_max, out=q)
        out[...] = q

    def _float_average(self, x: np.ndarray, shape: tuple[int, ...], exact: bool) -> np.ndarray:
        """TFLM's float32 sum in tap order (padding adds +0.0, a no-op), divided in float32 by the count."""
        acc = FloatSum(shape, exact)
        for view in self.taps(x):
            acc.add(view)
        return acc.total / self.fcounts
