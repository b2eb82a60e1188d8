"""gemmlowp-style fixed-point math and TFLM's lookup tables, vectorized over numpy arrays.

TFLM's quantized SOFTMAX, LOGISTIC, TANH and LSTM kernels compute transcendental functions
with gemmlowp's ``FixedPoint<int32_t, IntegerBits>`` arithmetic or with int16 lookup tables.
This module reproduces both bit for bit (every public function is checked against the
tflite-micro wheel, see tests/test_fixedpoint.py). A fixed-point value is carried as its *raw*
int32 held in an int64 array; the number of integer bits is a plain int argument (a template
parameter in C++):

* the product of a ``Q(a)`` and a ``Q(b)`` value is ``saturating_rounding_doubling_high_mul``
  and is a ``Q(a + b)`` value;
* sums of values with the same format are plain int32 additions (``wrap_int32`` where C
  would overflow);
* ``rescale`` converts between formats with rounding and saturation.

What uses what:

* int8 SOFTMAX: ``preprocess_softmax_scaling``, ``calculate_input_radius``,
  ``exp_on_negative_values``, ``get_reciprocal``.
* int16 SOFTMAX: ``exp_lut_int16``, ``one_over_one_plus_x_lut_int16``, ``int16_table_lookup``.
* int8 LOGISTIC / TANH: ``int8_activation_params`` then ``logistic`` / ``tanh`` on Q4.27 inputs.
* int16 LOGISTIC / TANH (and LSTM gates): ``int16_activation_params`` then
  ``logistic_int16`` / ``tanh_int16`` (256-entry ``sigmoid_table_uint16``).
* float kernels: ``expf`` is float32 ``exp`` exactly as the C library's ``expf``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
from collections.abc import Callable

import numpy as np

from micronn.quant import (
    INT32_MAX,
    INT32_MIN,
    quantize_multiplier,
    rounding_divide_by_pot,
    saturating_rounding_doubling_high_mul,
    tflite_round,
    wrap_int32,
)

__all__ = [
    "INT16_LUT_SIZE",
    "calculate_input_radius",
    "checked_log2",
    "count_leading_zeros",
    "exp_lut_int16",
    "exp_on_interval_between_negative_one_quarter_and_0_excl",
    "exp_on_negative_values",
    "expf",
    "fixed_one",
    "gen_lut_int16",
    "get_reciprocal",
    "int16_activation_params",
    "int8_activation_params",
    "int16_table_lookup",
    "logf",
    "logistic",
    "logistic_int16",
    "multiply_by_quantized_multiplier_greater_than_one",
    "one_minus_x_over_one_plus_x_for_x_in_0_1",
    "one_over_one_plus_x_for_x_in_0_1",
    "one_over_one_plus_x_lut_int16",
    "preprocess_softmax_scaling",
    "rescale",
    "rounding_half_sum",
    "saturating_rounding_doubling_high_mul",
    "saturating_rounding_multiply_by_pot",
    "sigmoid_table_uint16",
    "tanh",
    "tanh_int16",
]

INT16_LUT_SIZE = 513  # 512 interpolation intervals plus one end point (TFLM's kInt16LUTArraySize)


def _i64(x) -> np.ndarray:
    return np.asarray(x, dtype=np.int64)


# ---------------------------------------------------------------------------------------------
# Elementary gemmlowp operations
# ---------------------------------------------------------------------------------------------


def fixed_one(integer_bits: int) -> int:
    """Raw value of 1.0 in Q(integer_bits): the largest int32 when there are no integer bits."""
    return INT32_MAX if integer_bits == 0 else 1 << (31 - integer_bits)


def saturating_rounding_multiply_by_pot(x, exponent: int) -> np.ndarray:
    """Multiply by 2**exponent: saturating left shift for exponent > 0, rounding right shift below 0."""
    x = _i64(x)
    if exponent == 0:
        return x
    if exponent < 0:
        return rounding_divide_by_pot(x, -exponent)
    threshold = (1 << (31 - exponent)) - 1
    shifted = wrap_int32(x << exponent)
    return np.where(x > threshold, INT32_MAX, np.where(x < -threshold, INT32_MIN, shifted))


def rescale(x, src_integer_bits: int, dst_integer_bits: int) -> np.ndarray:
    """gemmlowp ``Rescale``: change a raw value from Q(src) to Q(dst), rounding or saturating."""
    return saturating_rounding_multiply_by_pot(x, src_integer_bits - dst_integer_bits)


def rounding_half_sum(a, b) -> np.ndarray:
    """(a + b) / 2 rounded half away from zero, computed without int32 overflow."""
    s = _i64(a) + _i64(b)
    s = s + np.where(s >= 0, 1, -1)
    return np.where(s >= 0, s // 2, -((-s) // 2))  # C division truncates toward zero


def count_leading_zeros(x) -> np.ndarray:
    """Leading zero bits of ``x`` viewed as uint32 (32 for zero)."""
    u = _i64(x) & 0xFFFFFFFF
    _, exp = np.frexp(u.astype(np.float64))  # exact: uint32 values are exact doubles
    return (32 - exp).astype(np.int64)


def multiply_by_quantized_multiplier_greater_than_one(x, multiplier, left_shift) -> np.ndarray:
    """TFLM ``MultiplyByQuantizedMultiplierGreaterThanOne``: int32 ``x * 2**left_shift`` then the Q31 multiply."""
    return saturating_rounding_doubling_high_mul(wrap_int32(_i64(x) << _i64(left_shift)), multiplier)


# ---------------------------------------------------------------------------------------------
# exp and 1 / (1 + x) in fixed point
# ---------------------------------------------------------------------------------------------

# exp(-1/8) and 1/3 in Q0.31, the Taylor expansion constants.
_EXP_MINUS_ONE_EIGHTH_Q31 = 1895147668
_ONE_THIRD_Q31 = 715827883

# Barrel shifter of exp_on_negative_values: for bit 2**e of -a (e = -2 .. 4), multiply by
# exp(-2**e) in Q0.31, i.e. round(exp(-2**e) * 2**31).
_EXP_BARREL = (
    (-2, 1672461947),
    (-1, 1302514674),
    (0, 790015084),
    (1, 290630308),
    (2, 39332535),
    (3, 720401),
    (4, 242),
)


def exp_on_interval_between_negative_one_quarter_and_0_excl(a) -> np.ndarray:
    """exp(a) for Q0.31 ``a`` in [-1/4, 0): a 4th-order Taylor expansion around -1/8, in Q0.31."""
    srdhm = saturating_rounding_doubling_high_mul
    x = _i64(a) + (1 << 28)  # x = a + 1/8
    x2 = srdhm(x, x)
    x3 = srdhm(x2, x)
    x4 = srdhm(x2, x2)
    x4_over_4 = rounding_divide_by_pot(x4, 2)
    poly = rounding_divide_by_pot(srdhm(x4_over_4 + x3, _ONE_THIRD_Q31) + x2, 1)  # x^4/24 + x^3/6 + x^2/2
    return _EXP_MINUS_ONE_EIGHTH_Q31 + srdhm(_EXP_MINUS_ONE_EIGHTH_Q31, x + poly)


def exp_on_negative_values(a, integer_bits: int) -> np.ndarray:
    """gemmlowp ``exp_on_negative_values``: exp of a Q(integer_bits) value ``a <= 0``, as Q0.31.

    ``a`` is split into a remainder in [-1/4, 0) evaluated by Taylor expansion and a multiple
    of 1/4 whose bits each multiply the result by a precomputed exp(-2**e).
    """
    a = _i64(a)
    frac_bits = 31 - integer_bits
    quarter = 1 << (frac_bits - 2)
    a_mod_quarter_minus_quarter = (a & (quarter - 1)) - quarter
    result = exp_on_interval_between_negative_one_quarter_and_0_excl(
        rescale(a_mod_quarter_minus_quarter, integer_bits, 0)
    )
    remainder = a_mod_quarter_minus_quarter - a
    for exponent, multiplier in _EXP_BARREL:
        if integer_bits > exponent:
            bit = (remainder >> (frac_bits + exponent)) & 1
            result = np.where(bit != 0, saturating_rounding_doubling_high_mul(result, multiplier), result)
    if integer_bits > 5:  # below -32 the result rounds to zero
        result = np.where(a < -(1 << (36 - integer_bits)), 0, result)
    return np.where(a == 0, INT32_MAX, result)


def one_over_one_plus_x_for_x_in_0_1(a) -> np.ndarray:
    """gemmlowp ``one_over_one_plus_x_for_x_in_0_1``: 1 / (1 + a) for Q0.31 ``a`` in [0, 1), as Q0.31.

    Three Newton-Raphson iterations on the half denominator, in Q2.29, started from
    48/17 - 32/17 * d.
    """
    srdhm = saturating_rounding_doubling_high_mul
    half_denominator = rounding_half_sum(a, INT32_MAX)  # Q0.31
    x = 1515870810 + srdhm(half_denominator, -1010580540)  # 48/17 and -32/17 in Q2.29
    one_q2 = 1 << 29
    for _ in range(3):
        one_minus_half_denominator_times_x = one_q2 - srdhm(half_denominator, x)  # Q2.29
        x = x + rescale(srdhm(x, one_minus_half_denominator_times_x), 4, 2)
    return rescale(x, 1, 0)  # x / 2 reinterpreted as Q1.30, then to Q0.31


def one_minus_x_over_one_plus_x_for_x_in_0_1(a) -> np.ndarray:
    """gemmlowp ``one_minus_x_over_one_plus_x_for_x_in_0_1``: (1 - a) / (1 + a) for Q0.31 ``a`` in [0, 1).

    The same Newton-Raphson reciprocal of the half denominator as ``one_over_one_plus_x_for_x_in_0_1``,
    minus one.
    """
    srdhm = saturating_rounding_doubling_high_mul
    half_denominator = rounding_half_sum(a, INT32_MAX)
    x = 1515870810 + srdhm(half_denominator, -1010580540)
    one_q2 = 1 << 29
    for _ in range(3):
        x = x + rescale(srdhm(x, one_q2 - srdhm(half_denominator, x)), 4, 2)
    return rescale(x - one_q2, 2, 0)


def logistic(a, integer_bits: int) -> np.ndarray:
    """gemmlowp ``logistic`` of a Q(integer_bits) value, as Q0.31: 1 / (1 + exp(-|a|)), mirrored for a < 0."""
    a = _i64(a)
    positive = a > 0
    abs_a = np.where(positive, a, wrap_int32(-a))
    on_positive = one_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(wrap_int32(-abs_a), integer_bits))
    result = np.where(positive, on_positive, INT32_MAX - on_positive)
    return np.where(a == 0, 1 << 30, result)


def tanh(a, integer_bits: int) -> np.ndarray:
    """gemmlowp ``tanh`` of a Q(integer_bits) value, as Q0.31: (1 - exp(-2|a|)) / (1 + exp(-2|a|)), odd."""
    a = _i64(a)
    negative = a < 0
    n = np.where(negative, a, wrap_int32(-a))  # -|a|
    # exp(2n): the raw value reinterpreted with one more integer bit is 2n.
    t = one_minus_x_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(n, integer_bits + 1))
    result = np.where(negative, wrap_int32(-t), t)
    return np.where(a == 0, 0, result)


def get_reciprocal(x, x_integer_digits: int) -> tuple[np.ndarray, np.ndarray]:
    """TFLM ``GetReciprocal``: 1/x for a positive Q(x_integer_digits) ``x``.

    Returns ``(scale, num_bits_over_unit)``: ``scale`` in Q0.31 is 1 / (x / 2**num_bits_over_unit),
    with x normalized into [1, 2).
    """
    x = _i64(x)
    headroom_plus_one = count_leading_zeros(x)
    num_bits_over_unit = x_integer_digits - headroom_plus_one
    shifted_sum_minus_one = wrap_int32((((x & 0xFFFFFFFF) << headroom_plus_one) - (1 << 31)) & 0xFFFFFFFF)
    return one_over_one_plus_x_for_x_in_0_1(shifted_sum_minus_one), num_bits_over_unit


# ---------------------------------------------------------------------------------------------
# Softmax scaling parameters
# ---------------------------------------------------------------------------------------------


def preprocess_softmax_scaling(beta: float, input_scale: float, input_integer_bits: int) -> tuple[int, int]:
    """TFLM ``PreprocessSoftmaxScaling`` (double rounding build): Q31 multiplier and left shift.

    The real multiplier ``beta * input_scale * 2**(31 - input_integer_bits)`` (capped at
    2**31 - 1) maps an input difference to a Q(input_integer_bits) value. TFLM requires it to
    be greater than one (a CHECK that aborts); this raises ``ValueError`` instead.
    """
    real = min(float(beta) * float(input_scale) * float(1 << (31 - input_integer_bits)), float((1 << 31) - 1))
    if not real > 1.0:
        raise ValueError(f"softmax input multiplier {real!r} must be greater than one (beta * scale too small)")
    multiplier, shift = quantize_multiplier(real)
    if shift < 0:
        raise ValueError(f"softmax input left shift {shift} must be non-negative")
    return multiplier, shift


def int8_activation_params(input_scale: float, input_integer_bits: int = 4) -> tuple[int, int, int]:
    """(input_multiplier, input_left_shift, input_range_radius) of TFLM's int8 LOGISTIC and TANH prepare.

    The input scale times 2**(31 - integer bits) is split with ``frexp`` and the mantissa rounded
    to Q31 (without QuantizeMultiplier's 2**31 fix-up: a mantissa rounding up to 2**31 becomes
    INT32_MIN, as the C cast does on x86). Inputs beyond the radius saturate the output.
    """
    real = float(np.float32(input_scale)) * float(1 << (31 - input_integer_bits))
    q, left_shift = math.frexp(real)
    multiplier = int(tflite_round(q * float(1 << 31)))
    if multiplier >= 1 << 31:
        multiplier = INT32_MIN
    return multiplier, left_shift, calculate_input_radius(input_integer_bits, left_shift, 31)


def calculate_input_radius(input_integer_bits: int, input_left_shift: int, total_signed_bits: int = 31) -> int:
    """TFLM ``CalculateInputRadius``: the largest input difference magnitude that does not saturate."""
    max_input_rescaled = (
        1.0 * ((1 << input_integer_bits) - 1) * float(1 << (total_signed_bits - input_integer_bits))
        / float(1 << input_left_shift)
    )
    return int(math.floor(max_input_rescaled))


# ---------------------------------------------------------------------------------------------
# float32 exp as the C library computes it
# ---------------------------------------------------------------------------------------------


def _load_libm_float_fn(symbol: str) -> Callable[[float], float] | None:
    """A float -> float function of the C math library (``expf``, ``logf``), or None where there is none."""
    for name in ("libm.so.6", None):
        try:
            name = name or ctypes.util.find_library("m")  # slow (runs ldconfig): only as a fallback
            fn = getattr(ctypes.CDLL(name), symbol)
            break
        except (OSError, AttributeError, TypeError):  # pragma: no cover - another platform's C library
            continue
    else:  # pragma: no cover
        return None
    fn.restype = ctypes.c_float
    fn.argtypes = [ctypes.c_float]
    return fn


def _load_libm_expf() -> Callable[[float], float] | None:
    return _load_libm_float_fn("expf")


_LIBM_EXPF = _load_libm_expf()
_LIBM_LOGF = _load_libm_float_fn("logf")


def logf(x: float) -> np.float32:
    """Scalar float32 natural log as C's ``logf`` (correctly rounded float64 log where libm is missing)."""
    if _LIBM_LOGF is not None:
        return np.float32(_LIBM_LOGF(float(np.float32(x))))
    return np.float32(math.log(float(np.float32(x))))  # pragma: no cover
_NEAR_TIE_ULPS = 0.01  # glibc's expf is within 0.502 ulp: only results this close to a tie can differ


def expf(x) -> np.ndarray:
    """float32 ``exp`` exactly as C's ``expf`` (the one TFLM calls through ``std::exp(float)``).

    numpy's own float32 exp differs from glibc in the last bit for a third of inputs. A correctly
    rounded float64 exp agrees with glibc's except where the exact value lies within ~0.002 ulp
    of a rounding tie, so those rare elements (about 2% with the margin used here) are
    recomputed by the C library itself.
    """
    x = np.asarray(x, dtype=np.float32)
    with np.errstate(over="ignore"):  # overflow to inf, like expf
        y = np.exp(x.astype(np.float64))
        r = y.astype(np.float32)
    if _LIBM_EXPF is None or r.size == 0:
        return r
    with np.errstate(invalid="ignore", over="ignore"):
        r64 = r.astype(np.float64)
        toward = np.nextafter(r, np.where(y >= r64, np.float32(np.inf), np.float32(-np.inf))).astype(np.float64)
        ulp = np.abs(toward - r64)
        near = np.isfinite(y) & (np.abs(np.abs(y - r64) - ulp / 2) <= _NEAR_TIE_ULPS * ulp)
    if np.any(near):
        fix = np.frompyfunc(_LIBM_EXPF, 1, 1)(x[near])
        r = r.copy()
        r[near] = np.asarray(fix, dtype=np.float64).astype(np.float32)
    return r


# ---------------------------------------------------------------------------------------------
# int16 lookup tables (int16 SOFTMAX, LOGISTIC/TANH style interpolation)
# ---------------------------------------------------------------------------------------------


def gen_lut_int16(
    func: Callable[[np.ndarray], np.ndarray],
    input_min: float,
    input_max: float,
    output_min: float,
    output_max: float,
) -> np.ndarray:
    """TFLM's int16-input ``gen_lut`` in float32 arithmetic: 513 int16 entries.

    Entry i samples ``func`` (a float32 -> float32 vectorized function) at
    ``input_min + i * step`` (step = range / 512), scaled so that [output_min, output_max]
    spans the int16 range, and biased by half the interpolation error at the interval
    midpoint so linear interpolation is centred. The last entry is ``func(input_max)``.
    """
    f32 = np.float32
    nb_steps = 512
    step = (f32(input_max) - f32(input_min)) / f32(nb_steps)
    half_step = step / f32(2)
    scaling_inv = f32(65536) / (f32(output_max) - f32(output_min))
    i = np.arange(nb_steps, dtype=np.float32)
    x = f32(input_min) + i * step
    val = np.asarray(func(x), dtype=np.float32)
    val_mid = np.asarray(func(x + half_step), dtype=np.float32)
    val_next = np.asarray(func(f32(input_min) + (i + f32(1)) * step), dtype=np.float32)

    def rnd(v: np.ndarray) -> np.ndarray:  # std::round on float
        return tflite_round(v).astype(np.float32)

    sample = rnd(val * scaling_inv)
    midpoint_interp = rnd((val_next * scaling_inv + sample) / f32(2))
    midpoint = rnd(val_mid * scaling_inv)
    bias = rnd((midpoint_interp - midpoint) / f32(2))
    lut = np.empty(INT16_LUT_SIZE, np.float32)
    lut[:nb_steps] = sample - bias
    lut[nb_steps] = rnd(np.asarray(func(np.array([input_max], np.float32)), np.float32) * scaling_inv)[0]
    return np.clip(lut, -32768, 32767).astype(np.int16)


def exp_lut_int16() -> np.ndarray:
    """The int16 SOFTMAX exp table: exp(x) on [-10, 0] into [-1, 1] (int16 full scale)."""
    return gen_lut_int16(expf, -10.0, 0.0, -1.0, 1.0)


def one_over_one_plus_x_lut_int16() -> np.ndarray:
    """The int16 SOFTMAX reciprocal table: 1 / (1 + x) on [0, 1] into [-1, 1]."""
    return gen_lut_int16(lambda v: np.float32(1) / (np.float32(1) + v), 0.0, 1.0, -1.0, 1.0)


def int16_table_lookup(value, lut: np.ndarray) -> np.ndarray:
    """Linear interpolation in a 513-entry int16 table for int16 inputs (``generic_int16_table_lookup``).

    The top 9 bits of ``value + 32768`` pick the interval, the low 7 bits interpolate with
    rounding. Returns int64 holding the int16 result (wrapped like C's int16 cast).
    """
    v = _i64(value)
    lut = np.asarray(lut, dtype=np.int64)
    index = 256 + (v >> 7)
    offset = v & 0x7F
    base = lut[index]
    slope = ((lut[index + 1] - base + 32768) & 0xFFFF) - 32768  # int16 difference
    delta = (slope * offset + 64) >> 7
    return ((base + delta + 32768) & 0xFFFF) - 32768


# ---------------------------------------------------------------------------------------------
# int16 LOGISTIC / TANH (TFLM reference_integer_ops, 256-entry sigmoid table)
# ---------------------------------------------------------------------------------------------


def checked_log2(x: float) -> tuple[bool, int]:
    """TFLM ``CheckedLog2`` in float32: (is ``x`` a power of two within 1e-3 in log2, rounded log2)."""
    f32 = np.float32
    x_log2 = logf(x) * (f32(1.0) / logf(2.0))
    rounded = f32(tflite_round(x_log2))
    return bool(abs(x_log2 - rounded) < f32(1e-3)), int(rounded)


def int16_activation_params(input_scale: float) -> tuple[int, int]:
    """(input_multiplier, input_left_shift) of TFLM's int16 LOGISTIC and TANH prepare.

    A power-of-two input scale of 2**-12 or 2**-11 gives multiplier 0 (the kernel then uses
    ``3 << shift``); any other scale is mapped to 1/(3 * 4096) by a multiplier in
    (16383.5, 32767] and a left shift, both found by doubling in double precision.
    """
    pot, log2_rounded = checked_log2(input_scale)
    left_shift = (15 - 3) + log2_rounded  # 3 integer bits of input
    if pot and left_shift in (0, 1):
        return 0, left_shift
    multiplier = float(np.float32(input_scale)) * 4096.0 * 3.0
    left_shift = 0
    while multiplier <= 32767.0 / 2.0 and left_shift <= 30:
        left_shift += 1
        multiplier *= 2.0
    return int(multiplier), left_shift


def sigmoid_table_uint16() -> np.ndarray:
    """TFLM's 256-entry ``sigmoid_table_uint16``: sigmoid(i / 24) in unsigned Q0.16 for linear interpolation.

    Each entry is shifted by half the linear-interpolation error at its interval's midpoint
    (so the error is centred), then rounded; the last entry is the saturation value 65535.
    (Derived and checked against the TFLM wheel's LOGISTIC/TANH outputs on every int16 input.)
    """
    i = np.arange(256, dtype=np.float64)

    def f(v: np.ndarray) -> np.ndarray:
        return 65536.0 / (1.0 + np.exp(-v / 24.0))

    centred = f(i) + (f(i + 0.5) - (f(i) + f(i + 1.0)) / 2.0) / 2.0
    table = np.floor(centred + 0.5).astype(np.int64)
    table[-1] = 65535
    return table


_SIGMOID_TABLE = sigmoid_table_uint16()


def _int16_activation_input(x, input_multiplier: int, input_left_shift: int) -> np.ndarray:
    """The rescaled int32 input of the int16 LOGISTIC/TANH kernels (1/(3 * 4096) per unit)."""
    if input_multiplier == 0:  # power-of-two scale
        input_multiplier, input_left_shift = 3 << input_left_shift, 0
    rnd = 1 << (input_left_shift - 1) if input_left_shift > 0 else 0
    return wrap_int32(_i64(x) * input_multiplier + rnd) >> input_left_shift


def _sigmoid_interp(abs_input: np.ndarray, frac_bits: int) -> tuple[np.ndarray, np.ndarray]:
    """Table index (saturated flag) and interpolated sigmoid in Q0.(16 + frac_bits) of ``abs_input``."""
    uh = abs_input >> frac_bits
    saturated = uh >= 255
    idx = np.minimum(uh, 254)
    ua, ub = _SIGMOID_TABLE[idx], _SIGMOID_TABLE[idx + 1]
    ut = abs_input & ((1 << frac_bits) - 1)
    return saturated, (ua << frac_bits) + ut * (ub - ua)


def logistic_int16(x, input_multiplier: int, input_left_shift: int) -> np.ndarray:
    """TFLM's int16 LOGISTIC (``reference_integer_ops::Logistic``): output in Q0.15, as int64.

    sigmoid(|x|) is interpolated in the 256-entry table with 9 fractional bits, and negative
    inputs use sigmoid(-x) = 1 - sigmoid(x).
    """
    v = _int16_activation_input(x, input_multiplier, input_left_shift)
    a = np.abs(v) & 0xFFFFFFFF
    saturated, interp = _sigmoid_interp(a, 9)
    result = np.where(saturated, 0x7FFF << 10, interp)
    result = np.where(v >= 0, result + (1 << 9), (1 << 25) - result + (1 << 9) - 1) & 0xFFFFFFFF
    return ((result >> 10) + 32768 & 0xFFFF) - 32768


def tanh_int16(x, input_multiplier: int, input_left_shift: int) -> np.ndarray:
    """TFLM's int16 TANH (``reference_integer_ops::Tanh``): output in Q0.15, as int64.

    tanh(x) = 2 * sigmoid(2x) - 1, interpolated in the sigmoid table with 8 fractional bits.
    """
    v = _int16_activation_input(x, input_multiplier, input_left_shift)
    a = np.abs(v) & 0xFFFFFFFF
    saturated, interp = _sigmoid_interp(a, 8)
    result = wrap_int32(np.where(saturated, 0xFFFF << 8, interp))
    result = np.where(v >= 0, result - (1 << 23) + (1 << 7), -result + (1 << 23) + (1 << 7) - 1)
    return ((wrap_int32(result) >> 8) + 32768 & 0xFFFF) - 32768


LOGISTIC_CUTOFF_UPPER = np.float32(16.619047164916992188)  # above: exactly 1 in float32
LOGISTIC_CUTOFF_LOWER = np.float32(-9.0)  # below: exp(x) alone


def logistic_float(x) -> np.ndarray:
    """TFLM's float32 sigmoid: 1 above the upper cutoff, ``expf(x)`` below the lower one, else
    ``1 / (1 + expf(-x))``, all in float32 with the C library's ``expf``."""
    x = np.asarray(x, dtype=np.float32)
    one = np.float32(1)
    with np.errstate(all="ignore"):
        mid = one / (one + expf(-x))
        return np.where(x > LOGISTIC_CUTOFF_UPPER, one, np.where(x < LOGISTIC_CUTOFF_LOWER, expf(x), mid)).astype(
            np.float32)
