"""DEPTHWISE_CONV_2D: TFLM's reference depthwise convolution (float32, int8 per-channel, int16x8).

Output channel ``c * depth_multiplier + m`` filters input channel ``c``. The sum runs over the filter taps
(filter_y, filter_x) in TFLM's order with all output pixels and channels vectorized: in float32 that is
TFLM's exact rounding sequence; for quantized types the products of (x - zero_point) and the weights are summed
in a float type chosen in prepare so that every partial sum is an exact integer.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels._conv_util import (
    FloatSum,
    PaddedInput,
    Requant,
    Window,
    clamp_float,
    conv_multipliers,
    exact_float_dtype,
    float_activation_range,
    float_kernel,
    make_window,
    quantized_activation_range,
    requant64,
)
from micronn.kernels.base import Kernel, Node, register
from micronn.kernels.conv_2d import check_quantization
from micronn.quant import wrap_int32

_TYPES = {  # input dtype -> (filter dtype, allowed bias dtypes)
    "float32": ("float32", {"float32"}),
    "int8": ("int8", {"int32"}),
    "int16": ("int8", {"int64"}),
}


@register
class DepthwiseConv2D(Kernel):
    op = "DEPTHWISE_CONV_2D"
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
            raise node.fail(f"{kind} depthwise convolution needs a {want_filter} filter "
                            "(hybrid models are not supported)")
        if bias is not None and bias.dtype.name not in want_bias:
            raise node.fail(f"bias type {bias.dtype.name} is not supported with {kind} inputs")
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

        # TFLM's DepthwiseConvPrepare takes the per-channel multiplier and shift arrays whatever the type.
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

        self.constant = flt.is_constant and (bias is None or bias.is_constant)
        if self.constant:
            self._pack(node)
        pad_dtype = self.ftype if self.constant else np.float64
        self.pad = PaddedInput(self.win, n, in_c, pad_dtype, 0) if self.win.padded else None

    def _pack(self, node: Node) -> None:
        """Per-tap weights shaped to broadcast against one tap's (N, H, W, in_c[, mult]) input slice."""
        w = np.asarray(node.input(1))
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
        offset = self.in_zp if self.kind == "int8" else 0
        if self.pad is not None and self.pad.buf.dtype == self.ftype:
            src = self.pad.load(x, offset)
        else:
            src = np.subtract(x, offset, dtype=self.ftype)
            if win.padded:
                src = np.pad(src, ((0, 0), (win.pad_top, win.pad_bottom), (win.pad_left, win.pad_right), (0, 0)))
        shape = (x.shape[0], win.out_h, win.out_w, self.in_c) + ((self.mult,) if self.mult > 1 else ())
        if self.kind == "float32":
            total = float_kernel(lambda exact: self._float_total(src, shape, exact)).reshape(out.shape)
            out[...] = clamp_float(total, self.fact_min, self.fact_max)
            return
        total = np.zeros(shape, self.ftype)
        prod = np.empty(shape, self.ftype)
        for fy, fx in win.taps:  # exact integer sums: any order will do
            view = win.tap_view(src, fy, fx)
            np.multiply(view[..., None] if self.mult > 1 else view, self.w[fy, fx], out=prod)
            total += prod
        total = total.reshape(out.shape)
        acc = total.astype(np.int64) if total.dtype != np.int64 else total
        if self.bias is not None:
            acc += self.bias
        if self.kind == "int8":
            y = self.requant(wrap_int32(acc) if self.need_wrap else acc)
            y += self.out_zp
        else:
            y = requant64(acc, self.mults.astype(np.int64), self.shifts.astype(np.int64))
        np.clip(y, self.act_min, self.act_max, out=y)
        out[...] = y

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
