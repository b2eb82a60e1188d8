"""RESIZE_BILINEAR: TFLM's reference kernel, float32 in float32 arithmetic and int8 in 10-bit fixed point.

float32: for each output row TFLM computes the source position ``y * scale`` (``(y + 0.5) * scale - 0.5``
with half_pixel_centers) in float32, its floor ``y0`` (at least 0) and ceiling ``y1`` (at most the last
row), and blends the four neighbours as ``p00*(1-dy)*(1-dx) + p10*dy*(1-dx) + p01*(1-dy)*dx + p11*dy*dx``
with ``dy = y - y0``, every product and sum rounded to float32 in that order, plus a final +0.0 (TFLM's
rounding offset, zero for floats), which turns a -0.0 result into +0.0.

int8: the scale is an integer in units of 1/1024 (rounded to nearest), positions are integers in the same
units, and the four weighted neighbours are summed in int64 and divided by 2**20 rounding half away from
zero. With half_pixel_centers a position before the first row stays negative, so the weights extrapolate
(one above 1024, one below zero) exactly as TFLM's do. Quantized values are not requantized. Like TFLM,
only the first two values of the size tensor are read.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels._spatial import resize_operands
from micronn.kernels.base import Kernel, Node, register

DTYPES = ("float32", "int8")


def _float_scale(in_size: int, out_size: int, align_corners: bool) -> np.float32:
    if align_corners and out_size > 1:
        return np.float32(in_size - 1) / np.float32(out_size - 1)
    return np.float32(in_size) / np.float32(out_size)


def float_positions(in_size: int, out_size: int, align_corners: bool,
                    half_pixel_centers: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lower index, upper index, float32 fraction ``pos - lower``) of every output along one axis."""
    scale = _float_scale(in_size, out_size, align_corners)
    v = np.arange(out_size, dtype=np.float32)
    pos = (v + np.float32(0.5)) * scale - np.float32(0.5) if half_pixel_centers else v * scale
    lo = np.maximum(np.floor(pos).astype(np.int64), 0)
    hi = np.minimum(np.ceil(pos).astype(np.int64), in_size - 1)
    return lo, hi, (pos - lo.astype(np.float32)).astype(np.float32)


def _cdiv(a: np.ndarray | int, b: int) -> np.ndarray:
    """C integer division (truncates toward zero)."""
    a = np.asarray(a, np.int64)
    q = np.abs(a) // b
    return np.where(a < 0, -q, q)


def integer_positions(in_size: int, out_size: int, align_corners: bool,
                      half_pixel_centers: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lower index, upper index, int64 weight of the upper neighbour in 1/1024 units) along one axis."""
    if align_corners and out_size > 1:
        scale = (1024 * (in_size - 1) + (out_size - 1) // 2) // (out_size - 1)
    else:
        scale = (1024 * in_size + out_size // 2) // out_size
    v = np.arange(out_size, dtype=np.int64)
    pos = v * scale + scale // 2 - 512 if half_pixel_centers else v * scale
    lo = np.maximum(_cdiv(pos, 1024), 0)
    hi = np.minimum(_cdiv(pos + 1023, 1024), in_size - 1)
    return lo, hi, pos - 1024 * lo


@register
class ResizeBilinear(Kernel):
    """TFLM RESIZE_BILINEAR for float32 and int8 NHWC tensors; the size must be constant."""

    op = "RESIZE_BILINEAR"
    dtypes = frozenset(DTYPES)

    def prepare(self, node: Node) -> None:
        inp, out, out_h, out_w = resize_operands(node, DTYPES, at_least=True)
        o = node.options
        if o.align_corners and o.half_pixel_centers:
            raise node.fail("align_corners and half_pixel_centers cannot both be set")
        self.is_float = inp.dtype == np.float32
        positions = float_positions if self.is_float else integer_positions
        in_h, in_w = inp.shape[1:3]
        self.y0, self.y1, dy = positions(in_h, out_h, o.align_corners, o.half_pixel_centers)
        self.x0, self.x1, dx = positions(in_w, out_w, o.align_corners, o.half_pixel_centers)
        one = np.float32(1) if self.is_float else np.int64(1024)
        # weights broadcast over (rows, 1, 1) and (1, cols, 1)
        self.wy = [(one - dy).reshape(-1, 1, 1), dy.reshape(-1, 1, 1)]
        self.wx = [(one - dx).reshape(1, -1, 1), dx.reshape(1, -1, 1)]
        self.flat = None
        if self.y0[-1] >= in_h or self.x0[-1] >= in_w:
            self.flat = self._flat_corners(node, inp.shape, out.shape)

    def _flat_corners(self, node: Node, in_shape: tuple[int, ...], out_shape: tuple[int, ...]) -> list[np.ndarray]:
        """Flat input offsets of the four corners, for when the int8 lower index passes the last row or column.

        TFLM does not clamp the lower index: its fixed-point scale rounds up, so for some sizes the last
        outputs read row (or column) ``in_h`` (``in_w``), which in memory is the next batch (row). TFLM reads
        whatever lies there; micronn reads the same element, and refuses where that is past the input's end.
        """
        n, in_h, in_w, c = in_shape
        b = np.arange(n).reshape(-1, 1, 1, 1)
        ch = np.arange(c).reshape(1, 1, 1, -1)
        flat = []
        for xs in (self.x0, self.x1):
            for ys in (self.y0, self.y1):
                flat.append(((b * in_h + ys.reshape(1, -1, 1, 1)) * in_w + xs.reshape(1, 1, -1, 1)) * c + ch)
        if max(int(f.max()) for f in flat) >= int(np.prod(in_shape)):
            raise node.fail(f"TFLM's int8 kernel reads past the end of the input when resizing {in_h}x{in_w} to "
                            f"{out_shape[1]}x{out_shape[2]} (its 1/1024 fixed-point scale rounds up and the "
                            "lower index is not clamped): its result is undefined")
        return flat

    def invoke(self, node: Node) -> None:
        x = node.input(0)
        weights = [(wy, wx) for wx in self.wx for wy in self.wy]  # TFLM's order: (y0,x0), (y1,x0), (y0,x1), (y1,x1)
        if self.flat is not None:
            pixels = [x.reshape(-1)[f] for f in self.flat]
        else:
            rows = [x[:, self.y0], x[:, self.y1]]
            pixels = [r[:, :, cols] for cols in (self.x0, self.x1) for r in rows]
        corners = [(p, wy, wx) for p, (wy, wx) in zip(pixels, weights)]
        if self.is_float:
            total = None
            with np.errstate(over="ignore", invalid="ignore"):
                for p, wy, wx in corners:
                    term = p * wy * wx
                    total = term if total is None else total + term
            node.output(0)[...] = total + np.float32(0.0)
            return
        total = sum(p.astype(np.int64) * wy * wx for p, wy, wx in corners)
        half = np.where(total > 0, 1 << 19, -(1 << 19))
        node.output(0)[...] = _cdiv(total + half, 1 << 20).astype(np.int8)
