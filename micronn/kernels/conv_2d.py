"""CONV_2D: TFLM's reference convolution (float32, int8 per-channel, int16x8), grouped when the filter is thinner.

Quantized convolutions run as im2col + one BLAS matrix product in a float type chosen in prepare so that every
partial sum is an exact integer; the requantization then reproduces TFLM's fixed-point arithmetic bit for bit.
Float convolutions must add the products in TFLM's order (filter_y, filter_x, in_channel) in float32, so they
loop over the filter taps and input channels with the output pixels vectorized.
"""

from __future__ import annotations

import numpy as np

from micronn.ir import Tensor
from micronn.kernels._conv_util import (
    FloatSum,
    PaddedInput,
    Requant,
    Window,
    clamp_float,
    conv_multipliers,
    exact_float_dtype,
    exact_matmul,
    float_activation_range,
    float_kernel,
    make_window,
    quantized_activation_range,
    requant64,
)
from micronn.kernels.base import Kernel, Node, register
from micronn.quant import wrap_int32

_TYPES = {  # input dtype -> (filter dtype, allowed bias dtypes)
    "float32": ("float32", {"float32"}),
    "int8": ("int8", {"int32"}),
    "int16": ("int8", {"int32", "int64"}),
}


def check_quantization(node: Node, inp: Tensor, flt: Tensor, out: Tensor, channels: int) -> None:
    """The per-channel checks TFLM's conv-like Prepare makes on quantized tensors."""
    for t, what in ((inp, "input"), (flt, "filter"), (out, "output")):
        if t.quant is None or len(t.quant.scale) == 0:
            raise node.fail(f"{what} tensor is not quantized")
    n = len(flt.quant.scale)
    if n != 1 and n != channels:
        raise node.fail(f"filter has {n} scales for {channels} output channels")
    if n > 1 and (flt.quant.axis < 0 or flt.quant.axis >= len(flt.shape) or flt.shape[flt.quant.axis] != n):
        raise node.fail(f"filter quantized dimension {flt.quant.axis} does not hold {n} channels")


@register
class Conv2D(Kernel):
    op = "CONV_2D"
    reads_input_first = True
    dtypes = frozenset({"float32", "int8", "int16"})

    def prepare(self, node: Node) -> None:
        if len(node.inputs) < 2 or len(node.outputs) != 1 or node.inputs[0] is None or node.inputs[1] is None:
            raise node.fail("needs input, filter, optional bias and one output")
        inp, flt, out = node.inputs[0], node.inputs[1], node.outputs[0]
        bias = node.inputs[2] if len(node.inputs) > 2 else None
        kind = inp.dtype.name
        if kind not in _TYPES or out.dtype != inp.dtype:
            raise node.fail(f"unsupported input/output types {inp.dtype.name}/{out.dtype.name}")
        want_filter, want_bias = _TYPES[kind]
        if flt.dtype.name != want_filter:
            raise node.fail(f"{kind} convolution needs a {want_filter} filter (hybrid models are not supported)")
        if bias is not None and bias.dtype.name not in want_bias:
            raise node.fail(f"bias type {bias.dtype.name} is not supported with {kind} inputs")
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

        # TFLM's ConvPrepare takes the per-channel multiplier and shift arrays whatever the type.
        mults, shifts = np.zeros(out_c, np.int32), np.zeros(out_c, np.int32)
        if kind != "float32":
            check_quantization(node, inp, flt, out, out_c)
            mults, shifts = conv_multipliers(inp, flt, out, out_c)
            self.act_min, self.act_max = quantized_activation_range(node, o.fused_activation_function, out)
            self.in_zp, self.out_zp = inp.zero_point, out.zero_point
        else:
            self.fact_min, self.fact_max = float_activation_range(o.fused_activation_function)
        self.mults = node.persistent(mults)
        self.shifts = node.persistent(shifts)
        self.requant = Requant(mults, shifts)
        self.acc32 = kind == "int8" or (bias is not None and bias.dtype == np.int32)

        self.constant = flt.is_constant and (bias is None or bias.is_constant)
        if self.constant:
            self._pack(node)
        pad_dtype = np.float32 if kind == "float32" else self.ftype if self.constant else np.float64
        self.pad = PaddedInput(self.win, n, in_c, pad_dtype, 0) if self.win.padded else None

    def _pack(self, node: Node) -> None:
        """Weights as per-group (K, out_c/groups) matrices, in an exactly-summing float type; bias as int64."""
        w = np.asarray(node.input(1))
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

    def _columns(self, x: np.ndarray, offset: int, dtype: np.dtype) -> np.ndarray:
        """im2col: (pixels, taps, in_c) of x - offset, zeros where the window leaves the input."""
        win: Window = self.win
        n, c = x.shape[0], x.shape[3]
        pixels = n * win.out_h * win.out_w
        if win.trivial:
            return np.subtract(x, offset, dtype=dtype).reshape(pixels, 1, c)
        if self.pad is not None and self.pad.buf.dtype == dtype:
            src = self.pad.load(x, offset)
        else:
            src = np.subtract(x, offset, dtype=dtype)
            if win.padded:
                src = np.pad(src, ((0, 0), (win.pad_top, win.pad_bottom), (win.pad_left, win.pad_right), (0, 0)))
        cols = np.empty((n, win.out_h, win.out_w, len(win.taps), c), dtype)
        for t, (fy, fx) in enumerate(win.taps):
            cols[:, :, :, t, :] = win.tap_view(src, fy, fx)
        return cols.reshape(pixels, len(win.taps), c)

    def _invoke_quantized(self, node: Node) -> None:
        x = node.input(0)
        out = node.output(0)
        offset = self.in_zp if self.kind == "int8" else 0
        cols = self._columns(x, offset, self.ftype)
        pixels = cols.shape[0]
        if self.groups == 1:
            acc = exact_matmul(cols.reshape(pixels, -1), self.mats[0])
        else:
            cg = cols.shape[2] // self.groups
            acc = np.concatenate([exact_matmul(cols[:, :, i * cg:(i + 1) * cg].reshape(pixels, -1), m)
                                  for i, m in enumerate(self.mats)], axis=1)
        if self.bias64 is not None:
            acc += self.bias64
        if self.acc32:  # int32 accumulators (int8, or int16 with an int32 bias) wrap like C
            y = self.requant(wrap_int32(acc) if self.need_wrap else acc)
        else:
            y = requant64(acc, self.mults.astype(np.int64), self.shifts.astype(np.int64))
        if self.kind == "int8":
            y += self.out_zp
        np.clip(y, self.act_min, self.act_max, out=y)
        out[...] = y.reshape(out.shape)

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
