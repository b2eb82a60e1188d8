"""DIV with numpy broadcasting and a fused activation, byte-identical to TFLM's reference kernel.

* float32: a float32 quotient clamped to the activation range (+-FLT_MAX without one, so x/0 saturates).
* int32: C's truncating division, clamped to the integer activation range. TFLM fails the invoke on a
  zero divisor (and crashes on INT32_MIN / -1); micronn raises InvokeError for both.
* int8: fixed point. With both operands offset by their zero points (and negated together when the
  divisor is negative), the divisor's Q0.31 reciprocal (gemmlowp's 1/(1+x)) multiplies the dividend
  normalized to use all its headroom; the output multiplier ``s1 / (s2 * s_out)`` (float32 arithmetic,
  then double) and the accumulated shifts bring it to the output scale. A zero divisor is not an error in
  TFLM; the same arithmetic then yields a finite garbage value, reproduced here.
"""

from __future__ import annotations

import numpy as np

from micronn import fixedpoint as fp
from micronn.errors import InvokeError
from micronn.kernels import _elementwise as ew
from micronn.kernels.base import Kernel, Node, register
from micronn.quant import INT32_MAX, INT32_MIN, quantize_multiplier, saturating_rounding_doubling_high_mul, wrap_int32


def rounding_divide_by_pot_x86(x: np.ndarray, exponent: np.ndarray) -> np.ndarray:
    """gemmlowp RoundingDivideByPOT as TFLM's host build computes it for any exponent in [0, 63].

    From 32 on, the C shifts overflow: x86 masks the int32 shift count to 5 bits and the int64 mask
    ``(1ll << exponent) - 1`` truncates to all ones, so the result is ``x >> (exponent % 32)`` plus one for
    non-negative x, not the 0 or -1 an exact shift would give. TFLM's int8 DIV reaches such exponents
    for small quotients.
    """
    x = np.asarray(x, dtype=np.int64)
    exponent = np.asarray(exponent, dtype=np.int64)
    mask = wrap_int32((np.int64(1) << (exponent & 63)) - 1)
    threshold = (mask >> 1) + (x < 0)
    return (x >> (exponent & 31)) + ((x & mask) > threshold)


def _one_over_one_plus_x_wrapping(a: int) -> int:
    """gemmlowp's 1/(1+x) Newton-Raphson with C's int32 wrap-around on every sum.

    ``fixedpoint.one_over_one_plus_x_for_x_in_0_1`` is exact on its domain [0, 1), where nothing wraps; a zero
    divisor feeds it -1.0, where the sums overflow and wrap in TFLM.
    """
    half = fp.rounding_half_sum(a, INT32_MAX)
    x = wrap_int32(1515870810 + saturating_rounding_doubling_high_mul(half, -1010580540))  # 48/17 - 32/17 d
    for _ in range(3):
        residual = wrap_int32((1 << 29) - saturating_rounding_doubling_high_mul(half, x))
        x = wrap_int32(x + fp.rescale(saturating_rounding_doubling_high_mul(x, residual), 4, 2))
    return int(fp.rescale(x, 1, 0))


# GetReciprocal(0): the shifted divisor is 0, so 1/(1+x) is evaluated at x = -1.0 (and the shift is -1).
ZERO_DIVISOR_RECIPROCAL = _one_over_one_plus_x_wrapping(INT32_MIN)


def count_leading_sign_bits(x: np.ndarray) -> np.ndarray:
    """Redundant sign bits of an int32 (31 for 0 and -1), like GCC's ``__builtin_clrsb``."""
    x = np.asarray(x, dtype=np.int64)
    return fp.count_leading_zeros(x ^ (x >> 63)) - 1


@register
class Div(Kernel):
    """TFLM DIV for float32, int32 and int8."""

    op = "DIV"
    dtypes = frozenset({"float32", "int32", "int8"})
    reads_input_first = True  # computes the whole result before writing

    def prepare(self, node: Node) -> None:
        a, b, out = ew.binary_operands(node)
        if out.dtype == np.int8:
            ew.require_quantized(node, [a, b, out], ew.BINARY)
            s1, s2, so = np.float32(a.scale), np.float32(b.scale), np.float32(out.scale)
            self.multiplier, self.shift = quantize_multiplier(float(s1 / (s2 * so)))
            # TFLM's final shift must stay a right shift: output shift + 1 (a zero divisor's reciprocal shift
            # is -1) minus the headroom of the largest dividend |x - zp1|.
            largest = max(abs(-128 - a.zero_point), abs(127 - a.zero_point))
            if self.shift + 1 - int(count_leading_sign_bits(np.int64(largest))) > 0:
                raise node.fail(f"the output multiplier {float(s1 / (s2 * so))!r} is too large: TFLM's int8 DIV would "
                                "shift by a negative amount (undefined behaviour)")
            self.zp1, self.zp2, self.zp_out = a.zero_point, b.zero_point, out.zero_point
        self.lo, self.hi = ew.activation_range(node, out)

    def invoke(self, node: Node) -> None:
        x1, x2 = ew.broadcast_inputs(node, 2)
        out = node.output(0)
        if out.dtype == np.int8:
            result = self._quantized(x1, x2)
        elif out.dtype == np.float32:
            with np.errstate(all="ignore"):
                result = ew.clamp(x1 / x2, self.lo, self.hi)
        else:
            result = self._int32(node, x1, x2)
        out[...] = result.reshape(out.shape)

    def _int32(self, node: Node, x1: np.ndarray, x2: np.ndarray) -> np.ndarray:
        if np.any(x2 == 0):
            raise InvokeError(f"operator {node.index} (DIV): division by zero (TFLM fails the invoke)")
        if np.any((x1 == INT32_MIN) & (x2 == -1)):
            raise InvokeError(f"operator {node.index} (DIV): INT32_MIN / -1 overflows (TFLM crashes)")
        n, d = np.broadcast_arrays(x1.astype(np.int64), x2.astype(np.int64))
        quotient = np.abs(n) // np.abs(d) * np.sign(n) * np.sign(d)  # C truncates toward zero
        return ew.clamp(quotient, self.lo, self.hi).astype(np.int32)

    def _quantized(self, x1: np.ndarray, x2: np.ndarray) -> np.ndarray:
        n, d = np.broadcast_arrays(x1.astype(np.int64) - self.zp1, x2.astype(np.int64) - self.zp2)
        flip = d < 0
        n, d = np.where(flip, -n, n), np.where(flip, -d, d)
        reciprocal, recip_shift = fp.get_reciprocal(d, 31)
        reciprocal = np.where(d == 0, ZERO_DIVISOR_RECIPROCAL, reciprocal)
        headroom = count_leading_sign_bits(n)
        unscaled = fp.multiply_by_quantized_multiplier_greater_than_one(n, reciprocal, headroom)
        total_shift = self.shift - recip_shift - headroom
        product = saturating_rounding_doubling_high_mul(unscaled, self.multiplier)
        raw = rounding_divide_by_pot_x86(product, -total_shift) + self.zp_out
        return ew.saturate(wrap_int32(raw), self.lo, self.hi, np.dtype(np.int8))
