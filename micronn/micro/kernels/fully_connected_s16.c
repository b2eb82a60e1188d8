/* FULLY_CONNECTED, int16x8: out[b][u] = requant64(bias[u] + sum_d (x - zp) * w[u][d]) + out_zp, clamped.
 *
 * `bias_full` already holds bias[u] - input_zero_point * sum_d w[u][d] (int64, wrapping like the reference), so
 * the inner loop multiplies raw values. Sums are exact: int32 where the lowering proved they fit (`wide` = 0),
 * int64 otherwise. The output stage is TFLM's 64-bit requantization with the Q15 multiplier and total right
 * shift precomputed per unit by the lowering.
 */
#include "mn_kernels.h"

enum { OUT, IN, WEIGHTS, BIAS_FULL, MULT, SHIFT, BATCHES, DEPTH, UNITS, OUT_ZP, ACT_MIN, ACT_MAX, WIDE };

void mn_fully_connected_s16(const mn_word *args) {
    int16_t *out = MN_P(int16_t, OUT);
    const int16_t *in = MN_P(const int16_t, IN);
    const int8_t *weights = MN_P(const int8_t, WEIGHTS);
    const int64_t *bias_full = MN_P(const int64_t, BIAS_FULL);
    const int32_t *mult = MN_P(const int32_t, MULT), *shift = MN_P(const int32_t, SHIFT);
    const int batches = MN_I(BATCHES), depth = MN_I(DEPTH), units = MN_I(UNITS), wide = MN_I(WIDE);
    const int32_t out_zp = MN_I(OUT_ZP), lo = MN_I(ACT_MIN), hi = MN_I(ACT_MAX);

    for (int b = 0; b < batches; b++) {
        const int16_t *x = in + (size_t)b * depth;
        int16_t *o = out + (size_t)b * units;
        for (int u = 0; u < units; u++) {
            const int8_t *w = weights + (size_t)u * depth;
            uint64_t acc;
            if (wide) {
                int64_t a = 0;
                for (int d = 0; d < depth; d++) a += x[d] * w[d];
                acc = (uint64_t)a;
            } else {
                int32_t a = 0; /* cannot overflow: the lowering bounded |sum| by 32768 * sum |w| */
                for (int d = 0; d < depth; d++) a += x[d] * w[d];
                acc = (uint64_t)(int64_t)a;
            }
            o[u] = (int16_t)mn_add_clamp(mn_requant_q15(acc + (uint64_t)bias_full[u], mult[u], shift[u]), out_zp, lo, hi);
        }
    }
}
