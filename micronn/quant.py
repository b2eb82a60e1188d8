"""Fixed-point arithmetic exactly as TFLM's default (double-rounding) build computes it.

All functions are vectorized over numpy arrays and work in int64 so that the C int32
wrap-around and truncation rules can be reproduced bit for bit.
"""

from __future__ import annotations

import math

import numpy as np

from micronn.ir import Activation, Tensor

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def tflite_round(x):
    """std::round: halves away from zero (numpy's round is half-to-even)."""
    x = np.asarray(x, dtype=np.float64)
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


# The largest left shift TFLM's MultiplyByQuantizedMultiplier can apply: it computes x * (1 << shift) in int32, and
# C leaves shifts by 32 bits or more undefined (x86 takes the count modulo 32, so the wheel's results wrap around).
MAX_LEFT_SHIFT = 31


class ShiftOverflowError(ValueError):
    """An effective scale needs a left shift past MAX_LEFT_SHIFT bits: TFLM's result is undefined there, so
    kernels refuse the model (the interpreter names the operator) instead of computing some other number."""


def quantize_multiplier(m: float) -> tuple[int, int]:
    """Split a real multiplier into a Q31 int32 mantissa and a power-of-two shift (TFLM QuantizeMultiplier).

    Raises :class:`ShiftOverflowError` for multipliers of 2**31 and more, whose shift TFLM cannot apply."""
    if m == 0.0:
        return 0, 0
    q, shift = math.frexp(float(m))
    q_fixed = int(tflite_round(q * (1 << 31)))
    if q_fixed == 1 << 31:
        q_fixed //= 2
        shift += 1
    if shift < -31:
        shift, q_fixed = 0, 0
    if shift > MAX_LEFT_SHIFT:
        raise ShiftOverflowError(f"effective scale {m:g} needs a left shift of {shift} bits; TFLM's int32 "
                                 f"fixed-point arithmetic is undefined past {MAX_LEFT_SHIFT}")
    return q_fixed, shift


def quantize_multipliers(ms) -> tuple[np.ndarray, np.ndarray]:
    """quantize_multiplier over a sequence: returns (int64 multipliers, int64 shifts)."""
    pairs = [quantize_multiplier(float(m)) for m in np.atleast_1d(ms)]
    return np.array([p[0] for p in pairs], np.int64), np.array([p[1] for p in pairs], np.int64)


def wrap_int32(x):
    """C's int32 wrap-around of an int64 array."""
    x = np.asarray(x, dtype=np.int64)
    return ((x + 2**31) & 0xFFFFFFFF) - 2**31


def saturating_rounding_doubling_high_mul(a, b):
    """gemmlowp SaturatingRoundingDoublingHighMul on int32 values held in int64."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    ab = a * b
    nudge = np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    v = ab + nudge
    high = np.where(v >= 0, v >> 31, -((-v) >> 31))  # C division truncates toward zero
    return np.where((a == INT32_MIN) & (b == INT32_MIN), INT32_MAX, high)


def rounding_divide_by_pot(x, exponent):
    """gemmlowp RoundingDivideByPOT: arithmetic shift right, rounding half away from zero."""
    x = np.asarray(x, dtype=np.int64)
    exponent = np.asarray(exponent, dtype=np.int64)
    mask = (np.int64(1) << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return (x >> exponent) + (remainder > threshold)


def multiply_by_quantized_multiplier(x, multiplier, shift):
    """TFLM MultiplyByQuantizedMultiplier(int32 x, ...), double rounding; multiplier/shift may be per channel."""
    shift = np.asarray(shift, dtype=np.int64)
    left = np.maximum(shift, 0)
    right = np.maximum(-shift, 0)
    x = wrap_int32(np.asarray(x, dtype=np.int64) << left)
    return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(x, multiplier), right)


def multiply_by_quantized_multiplier_64(x, multiplier, shift):
    """TFLM MultiplyByQuantizedMultiplier(int64 x, ...) used by the 16x8 kernels (int64 accumulators)."""
    multiplier = np.asarray(multiplier, dtype=np.int64)
    shift = np.asarray(shift, dtype=np.int64)
    reduced = np.where(multiplier < 0x7FFF0000, (multiplier + (1 << 15)) >> 16, 0x7FFF)
    total_shift = 15 - shift
    rnd = np.int64(1) << (total_shift - 1)
    return (np.asarray(x, dtype=np.int64) * reduced + rnd) >> total_shift


def dtype_range(dtype: np.dtype) -> tuple[int, int]:
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def activation_range_quantized(activation: int, out: Tensor) -> tuple[int, int]:
    """TFLM CalculateActivationRangeQuantized: clamp bounds in the output's quantized domain."""
    qmin, qmax = dtype_range(out.dtype)
    scale = np.float32(out.scale)
    zp = out.zero_point

    def q(f: float) -> int:
        return zp + int(tflite_round(np.float32(f) / scale))

    if activation == Activation.RELU:
        return max(qmin, q(0.0)), qmax
    if activation == Activation.RELU6:
        return max(qmin, q(0.0)), min(qmax, q(6.0))
    if activation == Activation.RELU_N1_TO_1:
        return max(qmin, q(-1.0)), min(qmax, q(1.0))
    if activation == Activation.NONE:
        return qmin, qmax
    raise ValueError(f"unsupported fused activation {activation}")


def activation_range_float(activation: int) -> tuple[float, float]:
    """TFLM CalculateActivationRange for float kernels."""
    big = float(np.finfo(np.float32).max)
    return {
        Activation.NONE: (-big, big),
        Activation.RELU: (0.0, big),
        Activation.RELU6: (0.0, 6.0),
        Activation.RELU_N1_TO_1: (-1.0, 1.0),
    }[Activation(activation)]
