"""TRANSPOSE_CONV: the "scatter" transposed convolution of TFLM's reference kernels.

Inputs are ``(output_shape, weights, input[, bias])``. TFLM ignores the ``output_shape`` tensor: the
output's static shape decides everything (also when a model computes ``output_shape`` at run time
through SHAPE -> STRIDED_SLICE -> PACK). Weights are ``[out_channels, kh, kw, in_channels]``.

Every input pixel scatters ``input * weights`` into the output window it touches. The integer paths
accumulate in an arena scratch buffer (int32 for int8, int64 for 16x8), then add the bias and requantize
per output channel. TFLM's scratch holds the whole output, which makes it the peak of U-Nets (tiny_unet:
153,600 B beside a 38,400 B output). Unless the plan must be TFLM's (``node.compact_scratch``), micronn
gathers one output row at a time instead (``band_rows`` = 1): the same integer sums in a row-sized scratch.
The float path accumulates straight into the output, in TFLM's loop order (input row, input column,
input channel), which float rounding makes observable.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from micronn.ir import Activation, Padding, Tensor
from micronn.kernels._conv_util import INT16_MAX, check_int32
from micronn.kernels.base import Kernel, Node, register
from micronn.quant import (
    ShiftOverflowError,
    activation_range_float,
    activation_range_quantized,
    multiply_by_quantized_multiplier,
    multiply_by_quantized_multiplier_64,
    quantize_multiplier,
    wrap_int32,
)


def _c_div(a: int, b: int) -> int:
    """C integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def transpose_conv_padding(padding: int, stride: int, out_size: int, filter_size: int) -> int:
    """TFLM's padding for TRANSPOSE_CONV along one axis.

    TFLM calls its ordinary conv padding helper with the transposed conv's *output* size in the place
    of the conv input size (dilation 1) and keeps only the leading half of the total padding.
    """
    if padding == Padding.SAME:
        conv_out = _c_div(out_size + stride - 1, stride)
    elif padding == Padding.VALID:
        conv_out = _c_div(out_size + stride - filter_size, stride)
    else:
        conv_out = 0
    total = (conv_out - 1) * stride + filter_size - out_size
    return max(total, 0) // 2


def _clamping(activation: int) -> int:
    """TFLM's activation-range helpers treat every activation they do not know (TANH, SIGN_BIT) as NONE."""
    clamps = (Activation.RELU, Activation.RELU6, Activation.RELU_N1_TO_1)
    return activation if activation in clamps else Activation.NONE


class _Tap(NamedTuple):
    """The input window one filter tap reads and the (strided) output window it writes."""

    fy: int
    fx: int
    src: tuple[slice, slice]
    dst: tuple[slice, slice]


def _axis_window(in_size: int, out_size: int, stride: int, pad: int, f: int) -> tuple[slice, slice] | None:
    """Input positions i with 0 <= i*stride - pad + f < out_size, and the output positions they hit."""
    lo = max(0, -((f - pad) // stride))  # ceil((pad - f) / stride)
    hi = min(in_size - 1, (out_size - 1 + pad - f) // stride)
    if hi < lo:
        return None
    first = lo * stride - pad + f
    return slice(lo, hi + 1), slice(first, first + (hi - lo) * stride + 1, stride)


def _taps(in_hw: tuple[int, int], out_hw: tuple[int, int], strides: tuple[int, int], pads: tuple[int, int],
          k_hw: tuple[int, int]) -> list[_Tap]:
    """Every filter tap that lands inside the output, filter rows and columns in *descending* order.

    For one output element, TFLM adds contributions by ascending input row, then input column; the
    tap index falls as the input index rises, so descending taps reproduce TFLM's float summation order.
    """
    taps = []
    for fy in reversed(range(k_hw[0])):
        wy = _axis_window(in_hw[0], out_hw[0], strides[0], pads[0], fy)
        if wy is None:
            continue
        for fx in reversed(range(k_hw[1])):
            wx = _axis_window(in_hw[1], out_hw[1], strides[1], pads[1], fx)
            if wx is None:
                continue
            taps.append(_Tap(fy, fx, (wy[0], wx[0]), (wy[1], wx[1])))
    return taps


@register
class TransposeConv(Kernel):
    """TFLM TRANSPOSE_CONV: float32, int8 (per-channel int8 weights) and 16x8 (int16 activations)."""

    op = "TRANSPOSE_CONV"
    dtypes = frozenset({"float32", "int8", "int16"})

    def dtype_key(self, node: Node) -> str:
        """The activations' type: input 2 (input 0 is the output_shape vector)."""
        t = node.inputs[2] if len(node.inputs) > 2 and node.inputs[2] is not None else node.outputs[0]
        return t.dtype.name

    def prepare(self, node: Node) -> None:
        if len(node.inputs) not in (3, 4) or len(node.outputs) != 1:
            raise node.fail(f"expects 3 or 4 inputs and 1 output, got {len(node.inputs)} and {len(node.outputs)}")
        weights, inp, out = node.inputs[1], node.inputs[2], node.outputs[0]
        if weights is None or inp is None:
            raise node.fail("weights and input are required")
        bias = node.inputs[3] if len(node.inputs) == 4 else None
        opts = node.options
        if any(len(t.shape) != 4 for t in (weights, inp, out)):
            raise node.fail(f"input, weights and output must be 4-D, got {inp.shape}, {weights.shape}, {out.shape}")
        if inp.dtype != out.dtype:
            raise node.fail(f"input is {inp.dtype.name} but output is {out.dtype.name}")
        dt = inp.dtype
        if not (weights.dtype == dt or (dt == np.int16 and weights.dtype == np.int8)):
            raise node.fail(f"hybrid models are not supported: {dt.name} input with {weights.dtype.name} weights")
        if min(weights.shape) < 1:
            raise node.fail(f"weights {list(weights.shape)} are empty")
        if inp.shape[0] != out.shape[0] or inp.shape[3] != weights.shape[3] or weights.shape[0] != out.shape[3]:
            raise node.fail(f"shapes do not match: input {inp.shape}, weights {weights.shape}, output {out.shape}")
        if opts is None or opts.stride_h < 1 or opts.stride_w < 1:
            raise node.fail("strides must be >= 1")
        if opts.padding not in (Padding.SAME, Padding.VALID):
            raise node.fail(f"unknown padding {opts.padding}")
        cout = weights.shape[0]
        if bias is not None and int(np.prod(bias.shape)) != cout:
            raise node.fail(f"bias has {int(np.prod(bias.shape))} elements, expected {cout}")
        self.dtype = dt
        self.has_bias = bias is not None

        # TFLM allocates the per-channel multiplier/shift arrays for every type (persistent tail).
        mult = np.zeros(cout, np.int32)
        shift = np.zeros(cout, np.int32)
        self.band_rows = 1 if node.compact_scratch else out.shape[1]
        band = out.shape[0] * self.band_rows * out.shape[2] * out.shape[3]
        if dt == np.int8:
            self.scratch_id = node.request_scratch(band * 4)
        elif dt == np.int16:
            self.scratch_id = node.request_scratch(band * 8)

        if dt != np.float32:
            self._check_quant(node, inp, weights, out, cout)
            in_scale = float(np.float32(inp.scale))
            out_scale = float(np.float32(out.scale))
            w_scales = np.broadcast_to(weights.quant.scale.astype(np.float32), (cout,))
            for c in range(cout):
                try:
                    mult[c], shift[c] = quantize_multiplier(in_scale * float(w_scales[c]) / out_scale)
                except ShiftOverflowError as e:
                    raise node.fail(f"input {inp.name!r} scale {in_scale:g} * weights {weights.name!r} scale "
                                    f"{float(w_scales[c]):g} (channel {c}) / output {out.name!r} scale "
                                    f"{out_scale:g}: {e}") from None
            self.act_min, self.act_max = activation_range_quantized(_clamping(opts.fused_activation_function), out)
            if dt == np.int8:
                if bias is not None and bias.dtype != np.int32:
                    raise node.fail(f"int8 TRANSPOSE_CONV needs an int32 bias, got {bias.dtype.name}")
            else:
                if bias is not None and bias.dtype == np.int16:
                    self.bias_scratch_id = node.request_scratch(int(np.prod(bias.shape)) * 8)
                elif bias is not None and bias.dtype != np.int64:
                    # TFLM would read an int32 bias as int64 (out of bounds): refuse instead of emulating that.
                    raise node.fail(f"16x8 TRANSPOSE_CONV needs an int64 (or int16) bias, got {bias.dtype.name}")
            self.input_offset = -inp.zero_point
            self.output_offset = out.zero_point
        else:
            if bias is not None and bias.dtype != np.float32:
                raise node.fail(f"float TRANSPOSE_CONV needs a float32 bias, got {bias.dtype.name}")
            lo, hi = activation_range_float(_clamping(opts.fused_activation_function))
            self.act_min, self.act_max = np.float32(lo), np.float32(hi)
        self.mult = node.persistent(mult, constant=True)
        self.shift = node.persistent(shift, constant=True)

        for axis in (1, 2):  # TFLM's padding and scatter loops compute these in int
            stride, size, f = (opts.stride_h, opts.stride_w)[axis - 1], out.shape[axis], weights.shape[axis]
            check_int32(node, f"stride {opts.stride_h}x{opts.stride_w} with output {out.shape[1:3]}",
                        size + stride, (size + stride) * 2 + f, (inp.shape[axis] + 1) * stride + f)
        pads = (transpose_conv_padding(opts.padding, opts.stride_h, out.shape[1], weights.shape[1]),
                transpose_conv_padding(opts.padding, opts.stride_w, out.shape[2], weights.shape[2]))
        strides = (opts.stride_h, opts.stride_w)
        if max(*strides, *pads) > INT16_MAX:  # TFLM's kernel parameters are int16: larger values wrap there
            raise node.fail(f"stride {strides[0]}x{strides[1]} or padding {pads[0]}x{pads[1]} exceeds {INT16_MAX}, "
                            "beyond the int16 TFLM's kernels keep them in")
        self.taps = _taps(inp.shape[1:3], out.shape[1:3], strides, pads, weights.shape[1:3])
        # the taps of each band of output rows [y0, y0 + band_rows), as if the band were the whole output
        self.bands = [(y0, _taps(inp.shape[1:3], (min(self.band_rows, out.shape[1] - y0), out.shape[2]), strides,
                                 (pads[0] + y0, pads[1]), weights.shape[1:3]))
                      for y0 in range(0, out.shape[1], self.band_rows)]

    @staticmethod
    def _check_quant(node: Node, inp: Tensor, weights: Tensor, out: Tensor, cout: int) -> None:
        for name, t in (("input", inp), ("weights", weights), ("output", out)):
            if t.quant is None or len(t.quant.scale) == 0:
                raise node.fail(f"{name} must be quantized")
        n = len(weights.quant.scale)
        if n != 1 and n != cout:
            raise node.fail(f"weights have {n} scales, expected 1 or {cout}")
        if len(weights.quant.zero_point) != n:
            raise node.fail("weights have different numbers of scales and zero points")
        if n > 1 and weights.quant.axis != 0:
            raise node.fail(f"per-channel weights must be quantized along axis 0, got {weights.quant.axis}")

    def invoke(self, node: Node) -> None:
        if self.dtype == np.float32:
            self._invoke_float(node)
        else:
            self._invoke_quantized(node)

    def _invoke_float(self, node: Node) -> None:
        x = node.input(2)
        w = node.input(1)
        out = node.output(0)
        out[...] = 0.0
        with np.errstate(all="ignore"):  # inf/nan arise exactly as in C
            self._scatter_float(x, w, out)
            if self.has_bias:
                out += node.input(3).reshape(-1)
        np.clip(out, self.act_min, self.act_max, out=out)

    def _scatter_float(self, x: np.ndarray, w: np.ndarray, out: np.ndarray) -> None:
        for tap in self.taps:
            src = x[:, tap.src[0], tap.src[1], :]
            dst = out[:, tap.dst[0], tap.dst[1], :]
            wt = w[:, tap.fy, tap.fx, :]  # [cout, cin]
            for c in range(x.shape[3]):  # one float32 multiply-add at a time, input channels ascending
                dst += src[..., c:c + 1] * wt[:, c]

    def _invoke_quantized(self, node: Node) -> None:
        x = node.input(2).astype(np.float64)
        if self.dtype == np.int8:
            x += self.input_offset
        w = node.input(1).astype(np.float64)
        out = node.output(0)
        n, _, ow, cout = out.shape
        acc_t = np.int32 if self.dtype == np.int8 else np.int64
        mult, shift = self.mult.astype(np.int64), self.shift.astype(np.int64)
        bias = node.input(3).reshape(-1) if self.has_bias else None
        if bias is not None and bias.dtype == np.int16:  # TFLM widens an int16 bias into its second scratch buffer
            node.scratch(self.bias_scratch_id, np.int64, bias.shape)[...] = bias
        for y0, taps in self.bands:
            rows = min(self.band_rows, out.shape[1] - y0)
            acc = np.zeros((n, rows, ow, cout), np.int64)
            for tap in taps:
                # float64 products and channel sums are exact here (|sum| < 2**53), so this is integer math.
                part = x[:, tap.src[0], tap.src[1], :] @ w[:, tap.fy, tap.fx, :].T
                acc[:, tap.dst[0], tap.dst[1], :] += part.astype(np.int64)
            scratch = node.scratch(self.scratch_id, acc_t, (n, rows, ow, cout))
            scratch[...] = wrap_int32(acc) if self.dtype == np.int8 else acc  # TFLM's int32 scratch wraps
            total = scratch.astype(np.int64)
            if self.dtype == np.int8:
                if bias is not None:
                    total = wrap_int32(total + bias.astype(np.int64))
                res = multiply_by_quantized_multiplier(total, mult, shift) + self.output_offset
            else:
                if bias is not None:
                    total = total + bias.astype(np.int64)
                res = wrap_int32(multiply_by_quantized_multiplier_64(total, mult, shift))
            out[:, y0:y0 + rows] = np.clip(res, self.act_min, self.act_max)
