"""CONV_2D: TFLM's reference convolution (float32, int8 per-channel, int16x8), grouped when the filter is thinner.

Quantized convolutions run as im2col + one BLAS matrix product in a float type chosen in prepare so that every
partial sum is an exact integer; the requantization then reproduces TFLM's fixed-point arithmetic bit for bit.
Float convolutions must add the products in TFLM's order (filter_y, filter_x, in_channel) in float32, so they
loop over the filter taps and input channels with the output pixels vectorized.
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
    exact_matmul,
    float_kernel,
    make_window,
)
from micronn.kernels.base import Node, register

_TYPES = {**CONV_TYPES, "int16": ("int8", {"int32", "int64"})}  # input dtype -> (filter dtype, allowed bias dtypes)


@register
class Conv2D(ConvLike):
    op = "CONV_2D"
    reads_input_first = True

    def prepare(self, node: Node) -> None:
        inp, flt, bias, out = self.operands(node, _TYPES, "filter", "convolution needs a {} filter")
        kind = inp.dtype.name
        if len(inp.shape) != 4 or len(flt.shape) != 4 or len(out.shape) != 4:
            raise node.fail("input, filter and output must be 4-D")
        n, in_h, in_w, in_c = inp.shape
        out_c, fh, fw, filter_in_c = flt.shape
        if out.shape[0] != n or out.shape[3] != out_c:
            raise node.fail(f"output shape {out.shape} does not match input {inp.shape} and filter {flt.shape}")
        if filter_in_c < 1 or in_c % filter_in_c or out_c % (in_c // filter_in_c):
            raise node.fail(f"input depth {in_c} and filter {flt.shape} give no valid grouping")
        if bias is not None and int(np.prod(bias.shape)) != out_c:
            raise node.fail(f"bias has {int(np.prod(bias.shape))} values for {out_c} output channels")
        o = node.options
        self.win = make_window(node, o.padding, (in_h, in_w), out.shape[1:3], (fh, fw), (o.stride_h, o.stride_w),
                               (o.dilation_h_factor, o.dilation_w_factor))
        self.groups = in_c // filter_in_c
        self.kind = kind
        self.has_bias = bias is not None

        self.prepare_channels(node, inp, flt, out, out_c)
        self.acc32 = kind == "int8" or (bias is not None and bias.dtype == np.int32)

        self.constant = flt.is_constant and (bias is None or bias.is_constant)
        if self.constant:
            self._pack(node)
        pad_dtype = np.float32 if kind == "float32" else self.ftype if self.constant else np.float64
        # a cached padded input saves a copy per invoke; larger quantized inputs are padded as they are read
        small = n * in_h * in_w * in_c * np.dtype(pad_dtype).itemsize <= _conv_util.PAD_CACHE_BYTES
        self.pad = PaddedInput(self.win, n, in_c, pad_dtype, 0) if self.win.padded and (
            small or kind == "float32") else None

    def _pack(self, node: Node) -> None:
        """Weights as per-group (K, out_c/groups) matrices, in an exactly-summing float type; bias as int64."""
        w = self.weights(node)
        out_c = w.shape[0]
        g, og = self.groups, out_c // self.groups
        self.w = w
        self.bias = np.asarray(node.input(2)) if self.has_bias else None
        if self.kind == "float32":
            return
        max_in = 255 if self.kind == "int8" else 32768  # |x - zero_point|; int16 ignores the zero point
        self.ftype = exact_float_dtype(max_in, w.reshape(out_c, -1), axis=1) or np.dtype(np.int64)
        self.mats = [w[i * og:(i + 1) * og].reshape(og, -1).T.astype(self.ftype) for i in range(g)]
        self.bias64 = None if self.bias is None else self.bias.reshape(-1).astype(np.int64)
        # int32 accumulators can only wrap if the largest possible sum does not fit in 31 bits
        bound = max_in * int(np.abs(w.astype(np.int64)).reshape(out_c, -1).sum(axis=1).max(initial=0))
        self.need_wrap = bound + (0 if self.bias64 is None else int(np.abs(self.bias64).max(initial=0))) >= 2**31

    def invoke(self, node: Node) -> None:
        if not self.constant:
            self._pack(node)
        if self.kind == "float32":
            self._invoke_float(node)
        else:
            self._invoke_quantized(node)

    def _columns(self, x: np.ndarray, offset: int, dtype: np.dtype, band: Window | None = None) -> np.ndarray:
        """im2col: (pixels, taps, in_c) of x - offset, zeros where the window (the layer's, or ``band``'s for
        the input rows ``x`` holds) leaves the input."""
        win: Window = band or self.win
        n, c = x.shape[0], x.shape[3]
        pixels = n * win.out_h * win.out_w
        if win.trivial:
            return np.subtract(x, offset, dtype=dtype).reshape(pixels, 1, c)
        src = self.padded_source(x, offset, dtype, band)
        cols = np.empty((n, win.out_h, win.out_w, len(win.taps), c), dtype)
        for t, (fy, fx) in enumerate(win.taps):
            cols[:, :, :, t, :] = win.tap_view(src, fy, fx)
        return cols.reshape(pixels, len(win.taps), c)

    def _invoke_quantized(self, node: Node) -> None:
        x = node.input(0)
        out = node.output(0)
        win: Window = self.win
        # temporaries per output row: the columns, and the accumulators with the output stage's int64 copies
        row = x.shape[0] * win.out_w * (len(win.taps) * x.shape[3] * self.ftype.itemsize + out.shape[3] * 24)
        bands = win.bands(row)
        if len(bands) == 1:
            self._rows_quantized(x, out, None)
            return
        # a large layer band by band: the same sums, a bounded host memory (into a copy while the output may
        # overwrite input rows that later bands read: the planner lets it, as the whole input is read first)
        y = np.empty_like(out) if np.shares_memory(x, out) else out
        for o0, o1 in bands:
            band, lo, hi = win.band(o0, o1)
            self._rows_quantized(x[:, lo:hi], y[:, o0:o1], band)
        if y is not out:
            out[...] = y

    def _rows_quantized(self, x: np.ndarray, out: np.ndarray, band: Window | None) -> None:
        offset = self.in_zp if self.kind == "int8" else 0
        cols = self._columns(x, offset, self.ftype, band)
        pixels = cols.shape[0]
        if self.groups == 1:
            acc = exact_matmul(cols.reshape(pixels, -1), self.mats[0])
        else:
            cg = cols.shape[2] // self.groups
            acc = np.concatenate([exact_matmul(cols[:, :, i * cg:(i + 1) * cg].reshape(pixels, -1), m)
                                  for i, m in enumerate(self.mats)], axis=1)
        # int32 accumulators for int8, or int16 with an int32 bias
        out[...] = self.output_stage(acc, self.bias64, self.acc32, self.kind == "int8").reshape(out.shape)

    def _invoke_float(self, node: Node) -> None:
        x = node.input(0)
        out = node.output(0)
        src = self.pad.load(x) if self.pad is not None else x
        total = float_kernel(lambda exact: self._float_total(src, out.shape, exact))
        out[...] = clamp_float(total, self.fact_min, self.fact_max)

    def _float_total(self, src: np.ndarray, shape: tuple[int, ...], exact: bool) -> np.ndarray:
        win: Window = self.win
        out_c, _, _, cg = self.w.shape
        og = out_c // self.groups
        acc = FloatSum(shape, exact)
        group_base = (np.arange(out_c) // og) * cg  # first input channel each output channel reads
        for fy, fx in win.taps:
            view = win.tap_view(src, fy, fx)
            valid = win.tap_valid(fy, fx) if exact and win.padded else None
            for c in range(cg):  # TFLM adds in_channel innermost, one float32 rounding per step
                xs = view[..., c:c + 1] if self.groups == 1 else view[..., group_base + c]
                acc.add_product(xs, self.w[:, fy, fx, c], valid)
        if self.bias is not None:
            acc.add_bias(self.bias.reshape(-1), bias_nan_wins=False)
        return acc.total
