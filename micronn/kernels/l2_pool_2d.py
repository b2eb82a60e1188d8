"""L2_POOL_2D: TFLM's reference L2 pooling, float32 only (TFLM has no quantized L2 pooling).

Each output is ``sqrt(sum of squares / count)`` over the window taps inside the input, summed in TFLM's tap
order in float32 (padding contributes +0.0, which never changes a sum started at +0.0), divided by the tap
count in float32 and clamped to the fused activation's range. TFLM computes the output shape itself from the
padding, filter and strides (and rewrites the output's dims): micronn requires the model's shape to match.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels._conv_util import FloatSum, Pool2D, clamp_float, compute_out_size, float_kernel
from micronn.kernels.base import Node, register


@register
class L2Pool2D(Pool2D):
    """TFLM L2_POOL_2D: float32 NHWC, any padding, filter and strides; the fused activation clamps."""

    op = "L2_POOL_2D"
    dtypes = frozenset({"float32"})
    pad_fill = {"float32": 0.0}

    def prepare(self, node: Node) -> None:
        super().prepare(node)
        o = node.options
        n, h, w, c = node.inputs[0].shape
        expected = (n, compute_out_size(o.padding, h, o.filter_height, o.stride_h),
                    compute_out_size(o.padding, w, o.filter_width, o.stride_w), c)
        if tuple(node.outputs[0].shape) != expected:
            raise node.fail(f"output shape {node.outputs[0].shape} does not match the shape TFLM computes, "
                            f"{expected}")
        self.fcounts = self.win.counts()[None, :, :, None].astype(np.float32)

    def invoke(self, node: Node) -> None:
        x = node.input(0)
        out = node.output(0)
        mean = float_kernel(lambda exact: self._mean_square(x, out.shape, exact))
        with np.errstate(invalid="ignore"):
            out[...] = clamp_float(np.sqrt(mean), self.fact_min, self.fact_max)

    def _mean_square(self, x: np.ndarray, shape: tuple[int, ...], exact: bool) -> np.ndarray:
        acc = FloatSum(shape, exact)
        for view in self.taps(x):
            acc.add(view * view)
        return acc.total / self.fcounts
