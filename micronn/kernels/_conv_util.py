"""Helpers shared by the convolution-family and pooling kernels.

Window geometry (TFLM's padding rules), a padded-input cache, exact integer matrix products through
BLAS, a fast per-channel requantizer, TFLM's float32 accumulation (down to which NaN comes out), C-exact
float clamping, and the base classes of the convolution-family and pooling kernels. Not a kernel module: it
registers nothing.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from micronn.ir import INT4, Activation, Padding, Tensor
from micronn.kernels.base import Kernel, Node
from micronn.quant import ShiftOverflowError, activation_range_quantized, quantize_multiplier, wrap_int32

FLOAT_MAX = float(np.finfo(np.float32).max)


# ---- geometry --------------------------------------------------------------------------------------------------


def compute_out_size(padding: int, in_size: int, filter_size: int, stride: int, dilation: int = 1) -> int:
    """TFLM ComputeOutSize: the output extent SAME/VALID padding gives (0 for a zero stride)."""
    effective = (filter_size - 1) * dilation + 1
    if stride == 0:
        return 0
    if padding == Padding.SAME:
        return (in_size + stride - 1) // stride
    if padding == Padding.VALID:
        return (in_size + stride - effective) // stride
    return 0


def compute_padding(stride: int, dilation: int, in_size: int, filter_size: int, out_size: int) -> int:
    """TFLM ComputePaddingWithOffset: the padding before the first element (the odd extra goes after)."""
    effective = (filter_size - 1) * dilation + 1
    total = max((out_size - 1) * stride + effective - in_size, 0)
    return total // 2


INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT16_MAX = 2**15 - 1


def check_int32(node: Node, what: str, *values: int) -> None:
    """Refuse geometry whose window arithmetic overflows TFLM's int (undefined in C): absurd strides, dilations
    or filters, as hostile models carry them."""
    if any(not INT32_MIN <= v <= INT32_MAX for v in values):
        raise node.fail(f"{what} overflow TFLM's int32 window arithmetic")


# host memory for one quantized layer's temporaries (columns, accumulators): larger layers run in bands of rows
BAND_BYTES = 1 << 20
PAD_CACHE_BYTES = 128 << 10  # padded copies of quantized inputs kept between invokes: small ones only


@dataclass(frozen=True)
class Window:
    """Where each output pixel's window lies in the input, for NHWC tensors.

    ``pad_top``/``pad_left`` are TFLM's padding values; ``pad_bottom``/``pad_right`` are how far the windows of
    the output tensor (whose shape may be anything the model says) reach past the input's end.
    """

    in_h: int
    in_w: int
    out_h: int
    out_w: int
    filter_h: int
    filter_w: int
    stride_h: int
    stride_w: int
    dilation_h: int
    dilation_w: int
    pad_top: int
    pad_left: int
    pad_bottom: int
    pad_right: int

    @property
    def trivial(self) -> bool:
        """A 1x1 window at stride 1 without padding: the output pixels are the input pixels."""
        return (self.filter_h == self.filter_w == self.stride_h == self.stride_w == 1 and not self.padded
                and (self.out_h, self.out_w) == (self.in_h, self.in_w))

    @property
    def padded(self) -> bool:
        return bool(self.pad_top or self.pad_left or self.pad_bottom or self.pad_right)

    @property
    def taps(self) -> list[tuple[int, int]]:
        """Filter taps (filter_y, filter_x) in TFLM's loop order."""
        return [(fy, fx) for fy in range(self.filter_h) for fx in range(self.filter_w)]

    def band(self, o0: int, o1: int) -> tuple[Window, int, int]:
        """The window of output rows [o0, o1) alone, and the input rows [lo, hi) they read (padding at the band's
        edges only where the whole window has it): a layer computed band by band gives the same values."""
        first = o0 * self.stride_h - self.pad_top
        last = (o1 - 1) * self.stride_h - self.pad_top + (self.filter_h - 1) * self.dilation_h
        lo, hi = max(first, 0), min(last + 1, self.in_h)
        return replace(self, in_h=hi - lo, out_h=o1 - o0, pad_top=lo - first, pad_bottom=last + 1 - hi), lo, hi

    def bands(self, row_bytes: int) -> list[tuple[int, int]]:
        """Output row ranges of at most ``BAND_BYTES`` of temporaries at ``row_bytes`` per output row (one range
        when the whole layer fits): bounds the host memory of large layers."""
        rows = max(1, BAND_BYTES // max(row_bytes, 1))
        return [(o, min(o + rows, self.out_h)) for o in range(0, self.out_h, rows)]

    def tap_view(self, padded: np.ndarray, fy: int, fx: int) -> np.ndarray:
        """The (N, out_h, out_w, C) strided view of ``padded`` that filter tap (fy, fx) reads."""
        y0, x0 = fy * self.dilation_h, fx * self.dilation_w
        return padded[:, y0:y0 + (self.out_h - 1) * self.stride_h + 1:self.stride_h,
                      x0:x0 + (self.out_w - 1) * self.stride_w + 1:self.stride_w, :]

    def tap_valid(self, fy: int, fx: int) -> np.ndarray:
        """(1, out_h, out_w, 1) mask of the output pixels whose tap (fy, fx) reads inside the input."""
        ys = np.arange(self.out_h) * self.stride_h - self.pad_top + fy * self.dilation_h
        xs = np.arange(self.out_w) * self.stride_w - self.pad_left + fx * self.dilation_w
        valid = ((ys >= 0) & (ys < self.in_h))[:, None] & ((xs >= 0) & (xs < self.in_w))[None, :]
        return valid[None, :, :, None]

    def counts(self) -> np.ndarray:
        """(out_h, out_w) number of window taps that fall inside the input (what average pooling divides by)."""
        ys = np.arange(self.out_h)[:, None] * self.stride_h - self.pad_top + np.arange(self.filter_h)[None, :]
        xs = np.arange(self.out_w)[:, None] * self.stride_w - self.pad_left + np.arange(self.filter_w)[None, :]
        ny = ((ys >= 0) & (ys < self.in_h)).sum(axis=1)
        nx = ((xs >= 0) & (xs < self.in_w)).sum(axis=1)
        return ny[:, None] * nx[None, :]


def make_window(node: Node, padding: int, in_hw: tuple[int, int], out_hw: tuple[int, int], filter_hw: tuple[int, int],
                stride_hw: tuple[int, int], dilation_hw: tuple[int, int] = (1, 1)) -> Window:
    """Validate strides/dilations and compute TFLM's padding (ComputePaddingHeightWidth) for an op."""
    (in_h, in_w), (out_h, out_w), (fh, fw), (sh, sw), (dh, dw) = in_hw, out_hw, filter_hw, stride_hw, dilation_hw
    if padding not in (Padding.SAME, Padding.VALID):
        raise node.fail(f"unknown padding {padding}")
    if min(sh, sw) < 1:
        raise node.fail(f"strides must be positive, got {sh}x{sw}")
    if min(dh, dw) < 1:
        raise node.fail(f"dilation factors must be positive, got {dh}x{dw}")
    if min(fh, fw) < 1:
        raise node.fail(f"filter size must be positive, got {fh}x{fw}")
    if min(in_h, in_w, out_h, out_w) < 1:
        raise node.fail(f"empty input or output ({in_h}x{in_w} -> {out_h}x{out_w})")
    for size, out_size, f, s, d in ((in_h, out_h, fh, sh, dh), (in_w, out_w, fw, sw, dw)):
        effective = (f - 1) * d + 1
        check_int32(node, f"stride {sh}x{sw}, dilation {dh}x{dw} and filter {fh}x{fw}", effective, size + s - 1,
                    (out_size - 1) * s + effective, (max(out_size, size) + s) * 2)
    # TFLM derives the padding from the output size it computes itself, and then loops over the output
    # tensor's actual shape: keep both apart the same way.
    pad_t = compute_padding(sh, dh, in_h, fh, compute_out_size(padding, in_h, fh, sh, dh))
    pad_l = compute_padding(sw, dw, in_w, fw, compute_out_size(padding, in_w, fw, sw, dw))
    # TFLM's kernel parameters keep strides, dilations and paddings as int16: larger values wrap around there
    if max(sh, sw, dh, dw, pad_t, pad_l) > INT16_MAX:
        raise node.fail(f"stride {sh}x{sw}, dilation {dh}x{dw} or padding {pad_t}x{pad_l} exceeds {INT16_MAX}, "
                        "beyond the int16 TFLM's kernels keep them in")
    if node.op.explicit_padding is not None:  # a PAD folded in by micronn's planner
        pad_t, pad_l = node.op.explicit_padding
    pad_b = max((out_h - 1) * sh + (fh - 1) * dh - pad_t - (in_h - 1), 0)
    pad_r = max((out_w - 1) * sw + (fw - 1) * dw - pad_l - (in_w - 1), 0)
    return Window(in_h, in_w, out_h, out_w, fh, fw, sh, sw, dh, dw, pad_t, pad_l, pad_b, pad_r)


class PaddedInput:
    """A cached padded copy of an NHWC input: the border is filled once, each invoke rewrites the interior."""

    def __init__(self, win: Window, batch: int, channels: int, dtype: Any, fill: float | int):
        self.win = win
        self.buf = np.full((batch, win.pad_top + win.in_h + win.pad_bottom, win.pad_left + win.in_w + win.pad_right,
                            channels), fill, dtype=dtype)
        self.interior = self.buf[:, win.pad_top:win.pad_top + win.in_h, win.pad_left:win.pad_left + win.in_w, :]

    def load(self, x: np.ndarray, offset: int | None = None) -> np.ndarray:
        """Copy ``x`` (minus ``offset``) into the interior; returns the whole padded buffer."""
        if offset:
            np.subtract(x, offset, out=self.interior, dtype=self.buf.dtype, casting="unsafe")
        else:
            np.copyto(self.interior, x, casting="unsafe")
        return self.buf


# ---- exact integer products -------------------------------------------------------------------------------------


def exact_float_dtype(max_abs_input: int, weights: np.ndarray, axis: int) -> np.dtype | None:
    """The cheapest float type in which sum(x * w) over ``axis`` is exact for |x| <= max_abs_input, or None.

    Every partial sum of a dot product is bounded by max|x| * sum|w|; while that bound stays below the float's
    integer precision (2**24, 2**53) all sums and products are exact integers whatever order BLAS adds them in.
    """
    bound = max_abs_input * int(np.abs(weights.astype(np.int64)).sum(axis=axis).max(initial=0))
    if bound < 2**24:
        return np.dtype(np.float32)
    if bound < 2**53:
        return np.dtype(np.float64)
    return None


def _blas_thread_setter() -> Any:
    """OpenBLAS's ``openblas_set_num_threads_local`` for the library numpy loaded, or None where there is none.

    Found through /proc/self/maps (Linux); numpy's OpenBLAS is loaded privately, so it is not a global symbol.
    """
    try:
        with open("/proc/self/maps") as f:
            paths = sorted({line.split()[-1] for line in f if "openblas" in line.lower() and ".so" in line})
    except OSError:
        return None
    for path in paths:
        try:
            fn = ctypes.CDLL(path).openblas_set_num_threads_local
        except (OSError, AttributeError):
            continue
        fn.argtypes, fn.restype = [ctypes.c_int], ctypes.c_int
        return fn
    return None


_SET_BLAS_THREADS = _blas_thread_setter()


def exact_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b for arrays whose exactness was checked by :func:`exact_float_dtype` (or int64); returns int64.

    The products of micro models are small: OpenBLAS's worker threads cost more to wake than they save (tens of
    milliseconds on a busy machine), so the product runs single-threaded in this thread only, then restores it.
    """
    if _SET_BLAS_THREADS is not None and a.dtype.kind == "f":
        previous = _SET_BLAS_THREADS(1)
        try:
            out = np.matmul(a, b)
        finally:
            _SET_BLAS_THREADS(previous)
    else:
        out = np.matmul(a, b)
    return out if out.dtype == np.int64 else out.astype(np.int64)


# ---- requantization ---------------------------------------------------------------------------------------------


def conv_multipliers(input_t: Tensor, filter_t: Tensor, output_t: Tensor,
                     channels: int) -> tuple[np.ndarray, np.ndarray]:
    """TFLM PopulateConvolutionQuantizationParams: per-channel (multiplier, shift) as int32 arrays.

    The effective scale is input_scale * filter_scale / output_scale, each widened to double first; a single
    filter scale is broadcast over the channels.
    """
    in_s = float(np.float32(input_t.scale))
    out_s = float(np.float32(output_t.scale))
    fs = np.asarray(filter_t.quant.scale, np.float32)
    mults, shifts = np.zeros(channels, np.int32), np.zeros(channels, np.int32)
    for c in range(channels):
        f = float(fs[c] if len(fs) > 1 else fs[0])
        try:
            mults[c], shifts[c] = quantize_multiplier(in_s * f / out_s)
        except ShiftOverflowError as e:
            raise ShiftOverflowError(f"input {input_t.name!r} scale {in_s:g} * filter {filter_t.name!r} scale {f:g}"
                                     f"{f' (channel {c})' if len(fs) > 1 else ''} / output {output_t.name!r} scale "
                                     f"{out_s:g}: {e}") from None
    return mults, shifts


class Requant:
    """TFLM's 32-bit MultiplyByQuantizedMultiplier (double rounding) over the last axis, in few numpy passes.

    Equivalent to ``quant.multiply_by_quantized_multiplier`` for multipliers in [0, 2**31): gemmlowp's
    SaturatingRoundingDoublingHighMul reduces to ``(x*m + 2**30) >> 31`` (it cannot saturate with m >= 0), and
    RoundingDivideByPOT by e >= 1 to ``(h + 2**(e-1) - (h < 0)) >> e``.
    """

    def __init__(self, multipliers: np.ndarray, shifts: np.ndarray):
        m = np.asarray(multipliers, np.int64)
        s = np.asarray(shifts, np.int64)
        if (m < 0).any():
            raise ValueError("negative quantized multiplier")
        self.mult = m
        self.left = np.maximum(s, 0)
        self.right = np.maximum(-s, 0)
        self.any_left = bool(self.left.any())
        self.round = np.where(self.right > 0, np.int64(1) << np.maximum(self.right - 1, 0), 0)
        self.neg_fix = (self.right > 0).astype(np.int64)
        self.all_right = bool(self.neg_fix.all())
        if self.all_right and len(self.right) > 1 and (self.right == self.right[0]).all():
            self.right, self.round = self.right[:1], self.round[:1]  # a scalar shift is cheaper to broadcast
        if len(self.mult) > 1 and (self.mult == self.mult[0]).all() and len(self.right) == 1:
            self.mult = self.mult[:1]

    def __call__(self, acc: np.ndarray) -> np.ndarray:
        """``acc``: int64 array holding int32 values, channels last. Returns a new int64 array."""
        if self.any_left:
            acc = wrap_int32(acc << self.left)
        h = acc * self.mult
        h += 1 << 30
        h >>= 31
        if self.all_right:
            h -= h < 0
        else:
            h -= (h < 0) * self.neg_fix
        h += self.round
        h >>= self.right
        return h


def requant64(acc: np.ndarray, multipliers: np.ndarray, shifts: np.ndarray) -> np.ndarray:
    """TFLM's MultiplyByQuantizedMultiplier(int64 x, ...) of the 16x8 kernels, truncated to int32 like C."""
    m = np.asarray(multipliers, np.int64)
    s = np.asarray(shifts, np.int64)
    reduced = np.where(m < 0x7FFF0000, (m + (1 << 15)) >> 16, 0x7FFF)
    total = 15 - s
    out = (acc * reduced + (np.int64(1) << (total - 1))) >> total
    return wrap_int32(out)


# ---- activations ------------------------------------------------------------------------------------------------


def float_activation_range(activation: int) -> tuple[np.float32, np.float32]:
    """TFLM CalculateActivationRange<float>: any activation other than the ReLUs leaves the full float range."""
    lo, hi = {
        Activation.RELU: (0.0, FLOAT_MAX),
        Activation.RELU6: (0.0, 6.0),
        Activation.RELU_N1_TO_1: (-1.0, 1.0),
    }.get(activation, (-FLOAT_MAX, FLOAT_MAX))
    return np.float32(lo), np.float32(hi)


def quantized_activation_range(node: Node, activation: int, out: Tensor) -> tuple[int, int]:
    """TFLM CalculateActivationRangeQuantized, failing prepare on activations it rejects."""
    try:
        return activation_range_quantized(activation, out)
    except ValueError:
        raise node.fail(f"unsupported fused activation {activation}") from None


def clamp_float(x: np.ndarray, lo: np.float32, hi: np.float32) -> np.ndarray:
    """In place, C's ``std::min(std::max(x, lo), hi)``: NaN passes through, infinities clamp to the float range."""
    np.copyto(x, lo, where=x < lo)
    np.copyto(x, hi, where=hi < x)
    return x


class FloatSum:
    """TFLM's float32 ``total += x * w`` loops, vectorized over the outputs.

    Values, infinities and where NaNs appear follow from doing each step in TFLM's order. Which NaN comes out
    does not: numpy's loops pick either operand's NaN depending on array size and layout, while TFLM's compiled
    code keeps the running total's NaN and, in a product, the input's. So when a result holds a NaN the kernel
    runs again with ``exact=True``, which reproduces that choice step by step (and skips padded taps outright,
    as TFLM does, so a non-finite weight there cannot add a NaN).
    """

    def __init__(self, shape: tuple[int, ...], exact: bool):
        self.total = np.zeros(shape, np.float32)
        self.prod = np.empty(shape, np.float32)
        self.exact = exact

    def add_product(self, x: np.ndarray, w: np.ndarray, valid: np.ndarray | None = None) -> None:
        """total += x * w, where ``valid`` (if given) marks the outputs this step really adds to."""
        np.multiply(x, w, out=self.prod)
        if not self.exact:
            self.total += self.prod
            return
        np.copyto(self.prod, x, where=np.isnan(x))
        self.add(self.prod, valid)

    def add(self, v: np.ndarray, valid: np.ndarray | None = None) -> None:
        """total += v (a plain add when not exact)."""
        if not self.exact:
            self.total += v
            return
        new = self.total + v
        keep = np.isnan(self.total)
        if valid is not None:
            keep |= ~valid
        np.copyto(new, self.total, where=keep)
        self.total = new

    def add_bias(self, bias: np.ndarray, bias_nan_wins: bool) -> None:
        """total + bias, TFLM's last step; which operand's NaN wins differs between the kernels."""
        new = self.total + bias
        if self.exact:
            src = bias if bias_nan_wins else self.total
            np.copyto(new, src, where=np.isnan(src))
        self.total = new


def float_kernel(run: Any) -> np.ndarray:
    """Run ``run(exact)`` fast, and again exactly when its result holds a NaN (see :class:`FloatSum`)."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # inf and NaN arithmetic is as in C
        total = run(False)
        if np.isnan(total).any():
            total = run(True)
    return total


# ---- convolution family -----------------------------------------------------------------------------------------

CONV_TYPES = {  # input dtype -> (filter dtype, allowed bias dtypes)
    "float32": ("float32", {"float32"}),
    "int8": ("int8", {"int32"}),
    "int16": ("int8", {"int64"}),
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


class ConvLike(Kernel):
    """What CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED share: operand checks, per-channel quantization
    parameters and TFLM's quantized output stage."""

    dtypes = frozenset({"float32", "int8", "int16"})

    def operands(self, node: Node, types: dict[str, tuple[str, set[str]]], noun: str,
                 needs: str) -> tuple[Tensor, Tensor, Tensor | None, Tensor]:
        """(input, filter, optional bias, output) after TFLM's type checks; ``needs`` words the filter type error."""
        if (not 2 <= len(node.inputs) <= 3 or len(node.outputs) != 1 or node.inputs[0] is None
                or node.inputs[1] is None):
            raise node.fail(f"needs input, {noun}, optional bias and one output")
        inp, flt, out = node.inputs[0], node.inputs[1], node.outputs[0]
        bias = node.inputs[2] if len(node.inputs) > 2 else None
        kind = inp.dtype.name
        if kind not in types or out.dtype != inp.dtype:
            raise node.fail(f"unsupported input/output types {inp.dtype.name}/{out.dtype.name}")
        want_filter, want_bias = types[kind]
        self.int4 = flt.dtype == INT4 and kind == "int8"
        if self.int4:  # TFLM unpacks int4 weights into an int8 scratch buffer at every invoke
            if not flt.is_constant:
                raise node.fail(f"int4 {noun} must be a constant")
            node.request_scratch(int(np.prod(flt.shape, dtype=np.int64)))
        elif flt.dtype.name != want_filter:
            raise node.fail(f"{kind} {needs.format(want_filter)} (hybrid models are not supported)")
        if bias is not None and bias.dtype.name not in want_bias:
            raise node.fail(f"bias type {bias.dtype.name} is not supported with {kind} inputs")
        return inp, flt, bias, out

    def weights(self, node: Node) -> np.ndarray:
        """The filter's values, int4 ones as int8."""
        w = np.asarray(node.input(1))
        return w.view(np.int8) if w.dtype == INT4 else w

    def prepare_channels(self, node: Node, inp: Tensor, flt: Tensor, out: Tensor, channels: int) -> None:
        """TFLM's (Depthwise)ConvPrepare: per-channel multipliers and shifts, which it keeps in the persistent tail
        whatever the type, and the activation range (and zero points)."""
        mults, shifts = np.zeros(channels, np.int32), np.zeros(channels, np.int32)
        activation = node.options.fused_activation_function
        if inp.dtype != np.float32:
            check_quantization(node, inp, flt, out, channels)
            mults, shifts = conv_multipliers(inp, flt, out, channels)
            self.act_min, self.act_max = quantized_activation_range(node, activation, out)
            self.in_zp, self.out_zp = inp.zero_point, out.zero_point
        else:
            self.fact_min, self.fact_max = float_activation_range(activation)
        self.mults = node.persistent(mults, constant=True)
        self.shifts = node.persistent(shifts, constant=True)
        self.requant = Requant(mults, shifts)
        self.mult64, self.shift64 = mults.astype(np.int64), shifts.astype(np.int64)

    def padded_source(self, x: np.ndarray, offset: int, dtype: np.dtype, win: Window | None = None) -> np.ndarray:
        """x - offset in ``dtype`` with the zero padding of ``win`` (default: the layer's, through the cached buffer
        if it has that type)."""
        if win is None:
            win = self.win
            if self.pad is not None and self.pad.buf.dtype == dtype:
                return self.pad.load(x, offset)
        src = np.subtract(x, offset, dtype=dtype)
        if win.padded:
            src = np.pad(src, ((0, 0), (win.pad_top, win.pad_bottom), (win.pad_left, win.pad_right), (0, 0)))
        return src

    def output_stage(self, acc: np.ndarray, bias: np.ndarray | None, acc32: bool, add_zero_point: bool) -> np.ndarray:
        """TFLM's quantized output: + bias, 32-bit requantization (int32 accumulators wrap like C) or the 64-bit one,
        + the output zero point, clamped to the activation range."""
        if bias is not None:
            acc += bias
        if acc32:
            y = self.requant(wrap_int32(acc) if self.need_wrap else acc)
        else:
            y = requant64(acc, self.mult64, self.shift64)
        if add_zero_point:
            y += self.out_zp
        np.clip(y, self.act_min, self.act_max, out=y)
        return y


# ---- pooling ----------------------------------------------------------------------------------------------------


class Pool2D(Kernel):
    """What TFLM's AVERAGE_POOL_2D and MAX_POOL_2D share: checks, window geometry, activation range."""

    reads_input_first = True

    dtypes = frozenset({"float32", "int8", "int16"})
    pad_fill: dict[str, float | int] = {}  # per input dtype, the value the padded border holds

    def prepare(self, node: Node) -> None:
        if len(node.inputs) != 1 or len(node.outputs) != 1 or node.inputs[0] is None:
            raise node.fail("needs one input and one output")
        inp, out = node.inputs[0], node.outputs[0]
        if inp.dtype.name not in self.dtypes or out.dtype != inp.dtype:
            raise node.fail(f"unsupported input/output types {inp.dtype.name}/{out.dtype.name}")
        if len(inp.shape) != 4 or len(out.shape) != 4:
            raise node.fail("input and output must be 4-D")
        if out.shape[0] != inp.shape[0] or out.shape[3] != inp.shape[3]:
            raise node.fail(f"output shape {out.shape} does not match input {inp.shape}")
        o = node.options
        self.win = make_window(node, o.padding, inp.shape[1:3], out.shape[1:3], (o.filter_height, o.filter_width),
                               (o.stride_h, o.stride_w))
        self.kind = inp.dtype.name
        if self.kind == "float32":
            self.fact_min, self.fact_max = float_activation_range(o.fused_activation_function)
        else:
            if out.quant is None or len(out.quant.scale) == 0 or inp.quant is None or len(inp.quant.scale) == 0:
                raise node.fail("input and output must be quantized")
            # TFLM's pooling copies quantized values through, so it insists both sides share their quantization
            if abs(float(np.float32(inp.scale)) - float(np.float32(out.scale))) > 1.0e-6:
                raise node.fail(f"input scale {inp.scale} and output scale {out.scale} differ")
            if inp.zero_point != out.zero_point:
                raise node.fail(f"input zero point {inp.zero_point} and output zero point {out.zero_point} differ")
            self.act_min, self.act_max = quantized_activation_range(node, o.fused_activation_function, out)
        self.pad = (PaddedInput(self.win, inp.shape[0], inp.shape[3], inp.dtype, self.pad_fill[self.kind])
                    if self.win.padded else None)

    def taps(self, x: np.ndarray):
        """The (N, out_h, out_w, C) input slice of every window tap, padding included, in TFLM's order."""
        src = self.pad.load(x) if self.pad is not None else x
        return (self.win.tap_view(src, fy, fx) for fy, fx in self.win.taps)
