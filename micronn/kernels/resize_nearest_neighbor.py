"""RESIZE_NEAREST_NEIGHBOR: TFLM's reference kernel, a gather of whole pixels.

Each output row (and column) reads the input row TFLM's float32 arithmetic picks: the scale is
``in / out`` (``(in - 1) / (out - 1)`` with align_corners), the source is ``(y + offset) * scale``
(offset 0.5 with half_pixel_centers), rounded half away from zero with align_corners and floored
otherwise, then clamped to the input. The indices depend only on the shapes, so prepare computes
them once and invoke is a single gather. Quantized values are copied, never requantized.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels._spatial import resize_operands
from micronn.kernels.base import Kernel, Node, register

DTYPES = ("float32", "int8", "int16")


def round_half_away(x: np.ndarray) -> np.ndarray:
    """C's round() without an intermediate sum: ``floor(x + 0.5)`` would round 0.49999997f up in float32."""
    whole = np.trunc(x)
    return whole + np.sign(x) * (np.abs(x - whole) >= 0.5)


def nearest_indices(in_size: int, out_size: int, align_corners: bool, half_pixel_centers: bool) -> np.ndarray:
    """The input index each of ``out_size`` outputs copies, in TFLM's float32 arithmetic."""
    f32 = np.float32
    if align_corners and out_size > 1:
        scale = f32(in_size - 1) / f32(out_size - 1)
    else:
        scale = f32(in_size) / f32(out_size)
    offset = f32(0.5) if half_pixel_centers else f32(0.0)
    src = (np.arange(out_size, dtype=np.float32) + offset) * scale
    idx = (round_half_away(src) if align_corners else np.floor(src)).astype(np.int64)
    idx = np.minimum(idx, in_size - 1)
    if half_pixel_centers:
        idx = np.maximum(idx, 0)
    return idx


@register
class ResizeNearestNeighbor(Kernel):
    """TFLM RESIZE_NEAREST_NEIGHBOR for float32, int8 and int16 NHWC tensors; the size must be constant."""

    op = "RESIZE_NEAREST_NEIGHBOR"
    dtypes = frozenset(DTYPES)

    def prepare(self, node: Node) -> None:
        inp, _, out_h, out_w = resize_operands(node, DTYPES)
        o = node.options
        self.ys = nearest_indices(inp.shape[1], out_h, o.align_corners, o.half_pixel_centers)
        self.xs = nearest_indices(inp.shape[2], out_w, o.align_corners, o.half_pixel_centers)

    def invoke(self, node: Node) -> None:
        node.output(0)[...] = node.input(0)[:, self.ys][:, :, self.xs]
