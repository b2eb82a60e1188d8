"""DEPTHWISE_CONV_2D: TFLM's reference depthwise convolution (float32, int8 per-channel, int16x8).

Output channel ``c * depth_multiplier + m`` filters input channel ``c``. The sum runs over the filter taps
(filter_y, filter_x) in TFLM's order with all output pixels and channels vectorized: in float32 that is
TFLM's exact rounding sequence; for quantized types the products of (x - zero_point) and the weights are summed
in a float type chosen in prepare so that every partial sum is an exact integer.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels import _conv_util
from micronn.kernels._conv_util import (
    CONV_TYPES,
    ConvLike,
    FloatSum,
    PaddedInput,
    Window,
    clamp_float,
    exact_float_dtype,
    float_kernel,
    make_window,
)
from micronn.kernels.base import Node, register


@register
class DepthwiseConv2D(ConvLike):
    op = "DEPTHWISE_CONV_2D"
    reads_input_first = True

    def prepare(self, node: Node) -> None:
        inp, flt, bias, out = self.operands(node, CONV_TYPES, "filter", "depthwise convolution needs a {} filter")
        kind = inp.dtype.name
        if len(inp.shape) != 4 or len(flt.shape) != 4 or len(out.shape) != 4:
            raise node.fail("input, filter and output must be 4-D")
        n, in_h, in_w, in_c = inp.shape
        _, fh, fw, out_c = flt.shape
        o = node.options
        mult = o.depth_multiplier
        if flt.shape[0] != 1 or out.shape[0] != n or out.shape[3] != out_c or mult < 1 or out_c != in_c * mult:
            raise node.fail(f"shapes input {inp.shape}, filter {flt.shape}, output {out.shape} do not fit "
                            f"depth_multiplier {mult}")
        if bias is not None and int(np.prod(bias.shape)) != out_c:
            raise node.fail(f"bias has {int(np.prod(bias.shape))} values for {out_c} output channels")
        self.win = make_window(node, o.padding, (in_h, in_w), out.shape[1:3], (fh, fw), (o.stride_h, o.stride_w),
                               (o.dilation_h_factor, o.dilation_w_factor))
        self.kind, self.mult, self.in_c = kind, mult, in_c
        self.has_bias = bias is not None

        self.prepare_channels(node, inp, flt, out, out_c)

        self.constant = flt.is_constant and (bias is None or bias.is_constant)
        if self.constant:
            self._pack(node)
        pad_dtype = self.ftype if self.constant else np.float64
        # a cached padded input saves a copy per invoke; larger quantized inputs are padded as they are read
        small = n * in_h * in_w * in_c * np.dtype(pad_dtype).itemsize <= _conv_util.PAD_CACHE_BYTES
        self.pad = PaddedInput(self.win, n, in_c, pad_dtype, 0) if self.win.padded and (
            small or kind == "float32") else None

    def _pack(self, node: Node) -> None:
        """Per-tap weights shaped to broadcast against one tap's (N, H, W, in_c[, mult]) input slice."""
        w = self.weights(node)
        _, fh, fw, out_c = w.shape
        if self.kind == "float32":
            self.ftype = np.dtype(np.float32)
        else:
            max_in = 255 if self.kind == "int8" else 32768  # |x - zero_point|; int16 ignores the zero point
            self.ftype = exact_float_dtype(max_in, w.reshape(-1, out_c), axis=0) or np.dtype(np.int64)
        shape = (fh, fw, self.in_c, self.mult) if self.mult > 1 else (fh, fw, out_c)
        self.w = w.reshape(shape).astype(self.ftype)
        bias = np.asarray(node.input(2)).reshape(-1) if self.has_bias else None
        if self.kind == "float32":
            self.bias = bias
        else:
            self.bias = None if bias is None else bias.astype(np.int64)
            # int32 accumulators can only wrap if the largest possible sum does not fit in 31 bits
            bound = 255 * int(np.abs(self.w.astype(np.int64)).reshape(fh * fw, -1).sum(axis=0).max(initial=0))
            self.need_wrap = bound + (0 if bias is None else int(np.abs(self.bias).max(initial=0))) >= 2**31

    def invoke(self, node: Node) -> None:
        if not self.constant:
            self._pack(node)
        x = node.input(0)
        out = node.output(0)
        win: Window = self.win
        if self.kind != "float32" and self._banded_quantized(x, out):
            return
        offset = self.in_zp if self.kind == "int8" else 0
        src = self.padded_source(x, offset, self.ftype)
        shape = (x.shape[0], win.out_h, win.out_w, self.in_c) + ((self.mult,) if self.mult > 1 else ())
        if self.kind == "float32":
            total = float_kernel(lambda exact: self._float_total(src, shape, exact)).reshape(out.shape)
            out[...] = clamp_float(total, self.fact_min, self.fact_max)
            return
        self._rows_quantized(src, out, shape, win)

    def _rows_quantized(self, src: np.ndarray, out: np.ndarray, shape: tuple[int, ...], win: Window) -> None:
        total = np.zeros(shape, self.ftype)
        prod = np.empty(shape, self.ftype)
        for fy, fx in win.taps:  # exact integer sums: any order will do
            view = win.tap_view(src, fy, fx)
            np.multiply(view[..., None] if self.mult > 1 else view, self.w[fy, fx], out=prod)
            total += prod
        total = total.reshape(out.shape)
        acc = total.astype(np.int64) if total.dtype != np.int64 else total
        out[...] = self.output_stage(acc, self.bias, self.kind == "int8", self.kind == "int8")

    def _banded_quantized(self, x: np.ndarray, out: np.ndarray) -> bool:
        """A large layer band by band of output rows (the same sums, a bounded host memory); False when the whole
        layer fits in ``_conv_util.BAND_BYTES``."""
        win: Window = self.win
        per_pixel = out.shape[3] * (2 * self.ftype.itemsize + 24) + len(win.taps) * self.in_c * self.ftype.itemsize
        bands = win.bands(x.shape[0] * win.out_w * per_pixel)
        if len(bands) == 1:
            return False
        offset = self.in_zp if self.kind == "int8" else 0
        y = np.empty_like(out) if np.shares_memory(x, out) else out  # see Conv2D: the output may overwrite the input
        for o0, o1 in bands:
            band, lo, hi = win.band(o0, o1)
            src = self.padded_source(x[:, lo:hi], offset, self.ftype, band)
            shape = (x.shape[0], o1 - o0, win.out_w, self.in_c) + ((self.mult,) if self.mult > 1 else ())
            self._rows_quantized(src, y[:, o0:o1], shape, band)
        if y is not out:
            out[...] = y
        return True

    def _float_total(self, src: np.ndarray, shape: tuple[int, ...], exact: bool) -> np.ndarray:
        """TFLM's float32 sum over the taps in its order (filter_y, filter_x), then the bias."""
        win: Window = self.win
        acc = FloatSum(shape, exact)
        for fy, fx in win.taps:
            view = win.tap_view(src, fy, fx)
            valid = win.tap_valid(fy, fx) if exact and win.padded else None
            if valid is not None and self.mult > 1:
                valid = valid[..., None]
            acc.add_product(view[..., None] if self.mult > 1 else view, self.w[fy, fx], valid)
        if self.bias is not None:
            acc.add_bias(self.bias.reshape((self.in_c, self.mult) if self.mult > 1 else -1), bias_nan_wins=True)
        return acc.total
