"""Shared pieces of the unary math and activation kernels (ABS, RSQRT, LOG, TANH, ELU, L2_NORMALIZATION, ...).

* ``unary_operands``: the operand checks common to TFLM's one-input kernels.
* ``logf`` / ``tanhf`` / ``expm1f``: float32 functions exactly as the C library computes them. TFLM's
  float kernels call ``std::log(float)`` and friends, i.e. the C library's ``logf``, ``tanhf`` and
  ``expm1f``; numpy's float32 versions differ from glibc's in the last bit for many inputs, and glibc's
  are not correctly rounded either (``tanhf`` and ``expm1f`` are off by up to one ulp), so the C library
  itself is called (through ctypes) wherever a float64 computation could round differently.
* ``quantize_multiplier_x86``: TFLM's QuantizeMultiplier including what it yields, on x86, for the
  infinite or NaN multipliers of tensors without quantization parameters.
* ``inv_sqrt_quantized_multiplier_exp``: TFLM's ``GetInvSqrtQuantizedMultiplierExp`` (int8 RSQRT and
  L2_NORMALIZATION), a Newton-Raphson 1/sqrt in gemmlowp fixed point.
* ``lut_int8``: TFLM's 256-entry int8 lookup table of a float function (int8 ELU).
* ``FloatUnary``: the float32-only kernels (EXP, LOG, NEG, SQRT, SQUARE); ``Squashing``: LOGISTIC and TANH.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from micronn import fixedpoint as fp
from micronn.ir import Tensor
from micronn.kernels.base import Kernel, Node
from micronn.kernels.quantize import float_to_int32_x86
from micronn.quant import (
    INT32_MAX,
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    rounding_divide_by_pot,
    tflite_round,
    wrap_int32,
)

# ---------------------------------------------------------------------------------------------
# Operand checks
# ---------------------------------------------------------------------------------------------


def unary_operands(node: Node, same_shape: bool = False) -> tuple[Tensor, Tensor]:
    """The input and output of a one-input kernel, with TFLM's type rule and micronn's size rule.

    TFLM's unary kernels walk the input's elements and write as many outputs: an output with another
    element count would be overrun or left half written, so micronn refuses it (TFLM does not check).
    Only the element count matters, unless ``same_shape`` (the kernels that check dimensions).
    """
    if len(node.inputs) != 1 or len(node.outputs) != 1 or node.inputs[0] is None:
        raise node.fail(f"expects 1 input and 1 output, got {len(node.inputs)} and {len(node.outputs)}")
    inp, out = node.inputs[0], node.outputs[0]
    if inp.dtype != out.dtype:
        raise node.fail(f"the output is {out.dtype.name} but the input is {inp.dtype.name}")
    if same_shape and tuple(inp.shape) != tuple(out.shape):
        raise node.fail(f"the output shape {tuple(out.shape)} differs from the input's {tuple(inp.shape)}")
    n_in, n_out = int(np.prod(inp.shape, dtype=np.int64)), int(np.prod(out.shape, dtype=np.int64))
    if n_in == 0 or n_out == 0:
        raise node.fail("zero-size tensors are not supported (TFLM's allocator refuses them)")
    if n_in != n_out:
        raise node.fail(f"the input {tuple(inp.shape)} has {n_in} elements but the output {tuple(out.shape)} "
                        f"has {n_out}")
    return inp, out


def per_tensor_params(t: Tensor) -> tuple[np.float32, int]:
    """(scale, zero point) as TFLM's ``params`` view of a tensor: the first channel's, zeros without any."""
    return np.float32(t.scale), int(t.zero_point)


def has_affine_quantization(t: Tensor) -> bool:
    """Whether TFLM sees affine quantization parameters on the tensor."""
    return t.quant is not None and len(t.quant.scale) > 0


def quantized_params(node: Node, inp: Tensor, out: Tensor,
                     affine: bool = True) -> tuple[np.float32, int, np.float32, int]:
    """(input scale, input zero point, output scale, output zero point) of an int8/int16 unary kernel, after the
    checks TFLM makes: affine quantization on both sides (where ``affine``) and zero points of 0 for int16."""
    if affine:
        for t, name in ((inp, "input"), (out, "output")):
            if not has_affine_quantization(t):
                raise node.fail(f"the {inp.dtype.name} {name} needs affine quantization parameters")
    (in_scale, in_zp), (out_scale, out_zp) = per_tensor_params(inp), per_tensor_params(out)
    if inp.dtype == np.int16 and (in_zp != 0 or out_zp != 0):
        raise node.fail(f"int16 {node.op.op} needs zero points of 0, got {in_zp} (input) and {out_zp} (output)")
    return in_scale, in_zp, out_scale, out_zp


# ---------------------------------------------------------------------------------------------
# Multipliers
# ---------------------------------------------------------------------------------------------


def ratio(a, b) -> float:
    """``a / b`` in double like C: a zero ``b`` gives an infinity or NaN instead of raising."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.float64(a) / np.float64(b))


def quantize_multiplier_x86(real: float) -> tuple[int, int]:
    """TFLM's QuantizeMultiplier, also for the inf/NaN multipliers that zero scales produce.

    ``frexp`` passes an infinity or NaN through, and x86 converts it to the int64 INT64_MIN whose low
    32 bits are zero: TFLM ends up with multiplier 0 and shift 0, which this returns too.
    """
    if not math.isfinite(real):
        return 0, 0
    return quantize_multiplier(real)


def check_shift(node: Node, shift: int, what: str) -> None:
    """Refuse left shifts TFLM's ``x * (1 << shift)`` cannot do without overflowing int32 (C undefined)."""
    if shift > 30:
        raise node.fail(f"{what}: the scale ratio needs a left shift of {shift} bits, beyond TFLM's int32 "
                        "arithmetic (the input scale is more than 2**30 times the output scale)")


# ---------------------------------------------------------------------------------------------
# Float functions of the C library
# ---------------------------------------------------------------------------------------------

_LIBM: dict[str, Callable[[float], float] | None] = {}


def _libm(symbol: str) -> Callable[[float], float] | None:
    if symbol not in _LIBM:
        _LIBM[symbol] = fp._load_libm_float_fn(symbol)
    return _LIBM[symbol]


def _call_libm(fn: Callable[[float], float], x: np.ndarray) -> np.ndarray:
    """``fn`` on every element of the float32 array ``x``, calling it once per distinct bit pattern."""
    bits, inverse = np.unique(np.ascontiguousarray(x).view(np.uint32).reshape(-1), return_inverse=True)
    values = bits.view(np.float32).tolist()
    results = np.fromiter((fn(v) for v in values), dtype=np.float32, count=len(values))
    return results[inverse].reshape(x.shape)


def _libm_exact(symbol: str, f64: Callable[[np.ndarray], np.ndarray], x, tie_ulps: float | None) -> np.ndarray:
    """The C library's float function ``symbol`` over ``x`` (float32), bit for bit.

    With ``tie_ulps``, ``f64`` (a float64 version, accurate far beyond float32) is rounded to float32
    and only the elements whose exact value lies within ``tie_ulps`` ulp of a rounding tie (where a C
    library within ``0.5 + tie_ulps`` ulp may round the other way) or is not finite go to the C
    library. Without it every element does.
    """
    x = np.asarray(x, dtype=np.float32)
    fn = _libm(symbol)
    if fn is None:  # pragma: no cover - no C math library: the nearest float32 is the best guess
        with np.errstate(all="ignore"):
            return f64(x.astype(np.float64)).astype(np.float32)
    if x.size == 0:
        return x.copy()
    if tie_ulps is None:
        return _call_libm(fn, x)
    with np.errstate(all="ignore"):
        y = f64(x.astype(np.float64))
        r = y.astype(np.float32)
        r64 = r.astype(np.float64)
        toward = np.nextafter(r, np.where(y >= r64, np.float32(np.inf), np.float32(-np.inf))).astype(np.float64)
        ulp = np.abs(toward - r64)
        near = ~np.isfinite(y) | ~np.isfinite(r64) | (np.abs(np.abs(y - r64) - ulp / 2) <= tie_ulps * ulp)
    if np.any(near):
        r[near] = _call_libm(fn, x[near])
    return r


def logf(x) -> np.ndarray:
    """float32 natural log as C's ``logf``.

    glibc's ``logf`` is within 0.818 ulp (its documented bound, met exhaustively on glibc 2.36): results
    can differ from the correctly rounded float64 log only within 0.318 ulp of a tie.
    """
    return _libm_exact("logf", np.log, x, 0.33)


def tanhf(x) -> np.ndarray:
    """float32 tanh as C's ``tanhf`` (glibc's is off by up to one ulp: every element is computed by it)."""
    return _libm_exact("tanhf", np.tanh, x, None)


def expm1f(x) -> np.ndarray:
    """float32 ``exp(x) - 1`` as C's ``expm1f`` (not correctly rounded in glibc: computed by it)."""
    return _libm_exact("expm1f", np.expm1, x, None)


# ---------------------------------------------------------------------------------------------
# 1 / sqrt in fixed point
# ---------------------------------------------------------------------------------------------

_HALF_SQRT_2_Q31 = 1518500250  # sqrt(2) / 2 in Q0.31


def inv_sqrt_quantized_multiplier_exp(x, reverse_shift: int = -1) -> tuple[np.ndarray, np.ndarray]:
    """TFLM ``GetInvSqrtQuantizedMultiplierExp``: 1 / sqrt(x) of int32 values as (Q31 multiplier, shift).

    ``x`` is normalized by pairs of bits into [2**27, 2**29), read as Q3.28 (halved), and five
    Newton-Raphson steps ``x <- 1.5 x - (input / 2) x**3`` starting from 1 run in gemmlowp fixed point;
    a final multiply by sqrt(2)/2 undoes the halving. Inputs <= 1 (0 included) give INT32_MAX and 0.
    The shift is multiplied by ``reverse_shift`` (TFLM passes -1 to turn a right shift into a left one).
    """
    srdhm = fp.saturating_rounding_doubling_high_mul
    x = np.asarray(x, dtype=np.int64)
    small = x <= 1
    v = np.where(small, 2, x)
    shift = np.full(v.shape, 11, dtype=np.int64)
    for _ in range(2):  # int32 inputs need at most two divisions by 4 to fall below 2**29
        big = v >= 1 << 29
        v = np.where(big, v // 4, v)
        shift += big
    left_pairs = (fp.count_leading_zeros(v) - 1) // 2 - 1
    shift -= left_pairs
    v = v << (2 * left_pairs)

    half_input = rounding_divide_by_pot(v >> 1, 1)  # Q3.28
    half_three = (1 << 28) + (1 << 27)  # 1.5 in Q3.28
    r = np.full(v.shape, 1 << 28, dtype=np.int64)  # 1.0 in Q3.28
    for _ in range(5):
        r_cubed = fp.rescale(srdhm(srdhm(r, r), r), 9, 3)
        r = fp.rescale(wrap_int32(srdhm(half_three, r) - srdhm(half_input, r_cubed)), 6, 3)
    multiplier = srdhm(r, _HALF_SQRT_2_Q31)
    negative = shift < 0
    multiplier = np.where(negative, wrap_int32(multiplier << np.where(negative, -shift, 0)), multiplier)
    shift = np.where(negative, 0, shift)
    multiplier = np.where(small, INT32_MAX, multiplier)
    shift = np.where(small, 0, shift)
    return multiplier, shift * reverse_shift


# ---------------------------------------------------------------------------------------------
# int8 lookup tables
# ---------------------------------------------------------------------------------------------


def lut_int8(transform: Callable[[np.ndarray], np.ndarray], inp: Tensor, out: Tensor) -> np.ndarray:
    """TFLM's ``PopulateLookupTable`` for int8: output for every input value, indexed by ``uint8(value)``.

    In float32 like TFLM: dequantize ``scale * (q - zero_point)``, apply ``transform``, multiply by
    ``1 / output scale``, ``roundf``, add the output zero point in float, convert to int32 (x86 rules:
    out of range or NaN give INT32_MIN) and clamp to int8.
    """
    in_scale, in_zp = per_tensor_params(inp)
    out_scale, out_zp = per_tensor_params(out)
    values = np.arange(-128, 128, dtype=np.int64)
    with np.errstate(all="ignore"):
        inverse_scale = np.float32(1) / out_scale
        dequantized = in_scale * (values - in_zp).astype(np.float32)
        transformed = np.asarray(transform(dequantized), dtype=np.float32)
        rescaled = tflite_round(transformed * inverse_scale).astype(np.float32)
        quantized = float_to_int32_x86(rescaled + np.float32(out_zp))
    table = np.empty(256, dtype=np.int8)
    table[values.astype(np.uint8)] = np.clip(quantized, -128, 127)
    return table


# ---------------------------------------------------------------------------------------------
# Kernel bases
# ---------------------------------------------------------------------------------------------


class FloatUnary(Kernel):
    """A float32 elementwise function (TFLM has no integer version); subclasses set ``op`` and ``apply``."""

    dtypes = frozenset({"float32"})
    reads_input_first = True
    same_shape = False  # whether TFLM's prepare insists on the input's shape (not only its element count)
    apply: Callable[[np.ndarray], np.ndarray]

    def prepare(self, node: Node) -> None:
        unary_operands(node, self.same_shape)

    def invoke(self, node: Node) -> None:
        out = node.output(0)
        with np.errstate(all="ignore"):  # NaNs, infinities and overflow behave like C, silently
            out[...] = self.apply(node.input(0)).reshape(out.shape)


INPUT_INTEGER_BITS = 4  # int8 LOGISTIC / TANH inputs are scaled into Q4.27


def prepare_int16_activation(node: Node, inp, out) -> tuple[int, int]:
    """The int16 LOGISTIC / TANH prepare: zero points of 0, output scale 2**-15, input multiplier."""
    for t, name in ((inp, "input"), (out, "output")):
        if t.zero_point != 0:
            raise node.fail(f"int16 {node.op.op} needs a {name} zero point of 0, got {t.zero_point}")
    if not np.float32(inp.scale) > 0 or not np.isfinite(np.float32(inp.scale)):
        raise node.fail(f"int16 {node.op.op} needs a positive input scale, got {inp.scale:g} (TFLM's would overflow)")
    out_scale = np.float32(out.scale)
    pot, log2 = fp.checked_log2(out_scale) if np.isfinite(out_scale) and out_scale > 0 else (False, 0)
    if not pot or log2 != -15:
        raise node.fail(f"int16 {node.op.op} needs an output scale of 2**-15 (a power of two within 0.1% in log2), "
                        f"got {out.scale:g}")
    return fp.int16_activation_params(np.float32(inp.scale))


def int8_activation_params(node: Node, input_scale: float) -> tuple[int, int, int]:
    """(multiplier, left shift, radius) of the int8 LOGISTIC / TANH prepare (``fp.int8_activation_params``).

    Input scales below 2**-28 give a negative left shift, where TFLM's ``CalculateInputRadius`` divides
    by ``1LL << left_shift``: x86 shifts by ``left_shift & 63`` (a negative int64 for -1), which this
    reproduces. Below 2**-59 the Q4.27 rescale itself would shift right by more than 31 bits, which
    C leaves undefined: refused.
    """
    _, left_shift = math.frexp(float(np.float32(input_scale)) * float(1 << (31 - INPUT_INTEGER_BITS)))
    if left_shift >= 0:
        return fp.int8_activation_params(np.float32(input_scale), INPUT_INTEGER_BITS)
    if left_shift < -31:
        raise node.fail(f"input scale {input_scale:g} is too small: TFLM's int8 {node.op.op} would shift by more "
                        "than 31 bits (undefined in C)")
    multiplier, _, _ = fp.int8_activation_params(np.float32(input_scale) * np.float32(2.0**-left_shift))
    divisor = float(((1 << (left_shift & 63)) + 2**63) % 2**64 - 2**63)  # int64 1 << (shift & 63)
    radius = math.floor(((1 << INPUT_INTEGER_BITS) - 1) * float(1 << (31 - INPUT_INTEGER_BITS)) / divisor)
    return multiplier, left_shift, radius


class Squashing(Kernel):
    """LOGISTIC and TANH: float32, int8 and int16 (see logistic.py and tanh.py).

    int8 inputs beyond the radius saturate; the rest, offset by the zero point, are scaled into Q4.27 and go
    through the gemmlowp fixed-point function ``int8_fn``, whose Q0.31 result TFLM rounds to
    ``int8_fraction_bits`` fraction bits (ignoring the output scale) and offsets by ``int8_zero_point``.
    """

    dtypes = frozenset({"float32", "int8", "int16"})
    reads_input_first = True
    float_fn: Callable[[np.ndarray], np.ndarray]
    int16_fn: Callable[[np.ndarray, int, int], np.ndarray]
    int8_fn: Callable[[np.ndarray, int], np.ndarray]
    int8_fraction_bits: int
    int8_zero_point = 0  # the int8 output zero point TFLM requires, when not 0

    def prepare(self, node: Node) -> None:
        inp, out = unary_operands(node)
        self.dtype = inp.dtype.name
        if self.dtype == "int8":
            if self.int8_zero_point and out.zero_point != self.int8_zero_point:
                raise node.fail(f"int8 {self.op} needs an output zero point of {self.int8_zero_point}, "
                                f"got {out.zero_point}")
            self.zero_point = inp.zero_point
            self.params = int8_activation_params(node, inp.scale)
        elif self.dtype == "int16":
            self.multiplier, self.left_shift = prepare_int16_activation(node, inp, out)

    def invoke(self, node: Node) -> None:
        x, out = node.input(0), node.output(0)
        if self.dtype == "float32":
            result = self.float_fn(x)
        elif self.dtype == "int16":
            result = self.int16_fn(x, self.multiplier, self.left_shift)
        else:
            multiplier, left_shift, radius = self.params
            v = x.astype(np.int64) - self.zero_point
            low, high = v <= -radius, v >= radius
            q4 = multiply_by_quantized_multiplier(np.where(low | high, 0, v), multiplier, left_shift)
            q0 = self.int8_fn(q4, INPUT_INTEGER_BITS)
            result = np.clip(rounding_divide_by_pot(q0, 31 - self.int8_fraction_bits) + self.int8_zero_point,
                             -128, 127)
            result = np.where(low, -128, np.where(high, 127, result))
        out[...] = result.reshape(out.shape)
