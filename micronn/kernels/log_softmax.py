"""LOG_SOFTMAX over the last axis, like TFLM's reference kernel: float32 and int8.

* float32, per row: ``x - max - logf(sum(expf(x - max)))`` in float32, the sum accumulated in order
  (C's ``expf``/``logf`` bit for bit).
* int8: gemmlowp fixed point. Differences from the row maximum are scaled into Q5.26
  (``PreprocessSoftmaxScaling`` with beta 1), exponentiated and summed in Q12.19 like SOFTMAX; the log
  of the sum is computed in Q5.26 by gemmlowp's ``log_x_for_x_greater_than_or_equal_to_1`` (a rational
  approximation after normalizing by powers of sqrt(2)), subtracted, and the result rescaled to the
  fixed output quantization (scale 16/256, zero point 127, both required by TFLM). Differences too
  negative to matter give -128.
"""

from __future__ import annotations

import numpy as np

from micronn import fixedpoint as fp
from micronn.kernels import _unary as un
from micronn.kernels.base import Kernel, Node, register
from micronn.quant import (
    INT32_MAX,
    INT32_MIN,
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    rounding_divide_by_pot,
    wrap_int32,
)

INPUT_INTEGER_BITS = 5  # differences in Q5.26
ACCUMULATION_INTEGER_BITS = 12  # sum of exps in Q12.19
OUTPUT_INTEGER_BITS = 4
OUTPUT_SCALE = np.float32(16.0 / 256.0)
OUTPUT_ZERO_POINT = 127

# Q0.31 constants of the log approximation.
LOG_2 = 1488522236  # log(2)
SQRT_SQRT_HALF = 1805811301  # 0.5 ** 0.25
SQRT_HALF = 1518500250  # 0.5 ** 0.5
ONE_QUARTER = 536870912
ALPHA_N = 117049297  # 11/240 * 2 ** 0.25
ALPHA_D = 127690142  # 1/20 * 2 ** 0.25
ALPHA_I = 1057819769  # 2 / 2 ** 0.25 - 2 ** 0.25
ALPHA_F = 638450708  # 1/4 * 2 ** 0.25


def _saturating_shift_left(x: np.ndarray, exponent) -> np.ndarray:
    """TFLM ``SaturatingRoundingMultiplyByPOTParam`` for non-negative (per element) exponents."""
    x = np.asarray(x, dtype=np.int64)
    exponent = np.asarray(exponent, dtype=np.int64)
    threshold = (np.int64(1) << (31 - exponent)) - 1
    return np.where(x > threshold, INT32_MAX, np.where(x < -threshold, INT32_MIN, wrap_int32(x << exponent)))


def _saturate_int32(x: np.ndarray) -> np.ndarray:
    return np.clip(x, INT32_MIN, INT32_MAX)


def log_x_for_x_at_least_1(z: np.ndarray, input_integer_bits: int, output_integer_bits: int) -> np.ndarray:
    """gemmlowp/TFLM ``log_x_for_x_greater_than_or_equal_to_1``: log of a Q(input) value >= 1, in Q(output).

    ``z`` is normalized two ways (by its headroom, and by its headroom after a multiply by sqrt(1/2)) so
    that the mantissa ``r`` lands near 2 ** -0.25 and the binary exponent is known to a quarter; log(r)
    comes from a rational approximation in ``q = 2 (r - 2 ** -0.25)``, and the result accumulates in
    Q(output + 1) for headroom.
    """
    srdhm = fp.saturating_rounding_doubling_high_mul
    accum_bits = output_integer_bits + 1
    shifted_quarter = fp.rescale(ONE_QUARTER, 0, accum_bits)
    z = np.asarray(z, dtype=np.int64)

    a_headroom_plus_1 = fp.count_leading_zeros(z)
    r_a = _saturating_shift_left(srdhm(_saturating_shift_left(z, a_headroom_plus_1 - 1), SQRT_HALF), 1)
    a_pow2 = _saturate_int32(
        _saturating_shift_left(input_integer_bits - a_headroom_plus_1, 31 - accum_bits) + shifted_quarter
    )
    b_headroom = fp.count_leading_zeros(srdhm(z, SQRT_HALF)) - 1
    r_b = _saturating_shift_left(z, b_headroom)
    b_pow2 = _saturate_int32(_saturating_shift_left(input_integer_bits - b_headroom, 31 - accum_bits) - shifted_quarter)

    r = np.minimum(r_a, r_b)
    pow2 = np.maximum(a_pow2, b_pow2)
    p = fp.rounding_half_sum(r, SQRT_SQRT_HALF)
    q = wrap_int32(2 * wrap_int32(r - SQRT_SQRT_HALF))
    q_squared = srdhm(q, q)
    numerator = wrap_int32(srdhm(q, r) + srdhm(srdhm(q, q_squared), ALPHA_N))
    denominator_minus_one = wrap_int32(
        srdhm(p, wrap_int32(wrap_int32(ALPHA_I + q) + srdhm(ALPHA_D, q_squared))) + srdhm(ALPHA_F, q)
    )
    reciprocal = fp.one_over_one_plus_x_for_x_in_0_1(denominator_minus_one)
    numerator_scaled = fp.rescale(numerator, 0, accum_bits)
    total = wrap_int32(srdhm(pow2, LOG_2) + srdhm(numerator_scaled, reciprocal))
    return fp.rescale(total, accum_bits, output_integer_bits)


@register
class LogSoftmax(Kernel):
    op = "LOG_SOFTMAX"
    dtypes = frozenset({"float32", "int8"})
    reads_input_first = True

    def prepare(self, node: Node) -> None:
        inp, out = un.unary_operands(node, same_shape=True)
        if len(inp.shape) < 1:
            raise node.fail("LOG_SOFTMAX needs an input with at least one dimension")
        self.quantized = inp.dtype == np.int8
        if not self.quantized:
            return
        if np.float32(out.scale) != OUTPUT_SCALE or out.zero_point != OUTPUT_ZERO_POINT:
            raise node.fail(f"int8 LOG_SOFTMAX needs an output scale of 16/256 and zero point 127, got "
                            f"{out.scale:g} and {out.zero_point}")
        try:
            self.multiplier, self.left_shift = fp.preprocess_softmax_scaling(
                1.0, float(np.float32(inp.scale)), INPUT_INTEGER_BITS)
        except ValueError as e:  # TFLM aborts the process on a failed CHECK here
            raise node.fail(f"input scale {inp.scale:g} is too small: {e}") from None
        reverse = float(1 << (31 - self.left_shift)) / float(self.multiplier)
        self.reverse_multiplier, self.reverse_shift = quantize_multiplier(reverse)
        self.diff_min = -fp.calculate_input_radius(INPUT_INTEGER_BITS, self.left_shift)

    def invoke(self, node: Node) -> None:
        x, out = node.input(0), node.output(0)
        rows = x.reshape(-1, x.shape[-1])
        result = self._int8(rows) if self.quantized else self._float(rows)
        out[...] = result.reshape(out.shape)

    @staticmethod
    def _float(rows: np.ndarray) -> np.ndarray:
        lowest = np.finfo(np.float32).min
        with np.errstate(all="ignore"):
            # std::max(max, x) from lowest skips NaNs, like fmax
            row_max = np.fmax.reduce(rows, axis=1, keepdims=True, initial=lowest)
            centred = rows - row_max
            total = np.cumsum(fp.expf(centred), axis=1, dtype=np.float32)[:, -1:]  # in order, like the C loop
            return centred - un.logf(total)

    def _int8(self, rows: np.ndarray) -> np.ndarray:
        diff = rows.astype(np.int64) - rows.max(axis=1, keepdims=True).astype(np.int64)
        scaled = multiply_by_quantized_multiplier(diff, self.multiplier, self.left_shift)
        used = diff >= self.diff_min
        exps = fp.rescale(fp.exp_on_negative_values(np.where(used, scaled, 0), INPUT_INTEGER_BITS),
                          0, ACCUMULATION_INTEGER_BITS)
        sum_of_exps = wrap_int32(np.where(used, exps, 0).sum(axis=1, keepdims=True))
        log_sum = log_x_for_x_at_least_1(sum_of_exps, ACCUMULATION_INTEGER_BITS, INPUT_INTEGER_BITS)
        shifted_log_sum = wrap_int32(log_sum + INT32_MIN)
        adjusted_diff_min = np.maximum(
            self.diff_min - 1,
            multiply_by_quantized_multiplier(shifted_log_sum, self.reverse_multiplier, self.reverse_shift),
        )
        shift = 31 - INPUT_INTEGER_BITS - OUTPUT_INTEGER_BITS
        value = rounding_divide_by_pot(wrap_int32(scaled - log_sum), shift) + OUTPUT_ZERO_POINT
        return np.where(diff > adjusted_diff_min, np.clip(value, -128, 127), -128)
