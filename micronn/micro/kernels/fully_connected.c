/* FULLY_CONNECTED, int8 with per-tensor or per-channel weights: out[b][u] = requant(bias[u] + sum_d (x - zp) * w[u][d]).
 *
 * `bias_full` already holds bias[u] - input_zero_point * sum_d w[u][d], so the inner loop multiplies raw int8
 * values, two units at a time (each input byte is loaded once for both rows of weights).
 */
#include "mn_kernels.h"

enum { OUT, IN, WEIGHTS, BIAS_FULL, MULT, SHIFT, BATCHES, DEPTH, UNITS, OUT_ZP, ACT_MIN, ACT_MAX };

void mn_fully_connected_s8(const mn_word *args) {
    int8_t *out = MN_P(int8_t, OUT);
    const int8_t *in = MN_P(const int8_t, IN), *weights = MN_P(const int8_t, WEIGHTS);
    const int32_t *bias_full = MN_P(const int32_t, BIAS_FULL);
    const int32_t *mult = MN_P(const int32_t, MULT), *shift = MN_P(const int32_t, SHIFT);
    const int batches = MN_I(BATCHES), depth = MN_I(DEPTH), units = MN_I(UNITS);
    const int32_t out_zp = MN_I(OUT_ZP), lo = MN_I(ACT_MIN), hi = MN_I(ACT_MAX);

    for (int b = 0; b < batches; b++) {
        const int8_t *x = in + (size_t)b * depth;
        int8_t *o = out + (size_t)b * units;
        int u = 0;
        for (; u + 1 < units; u += 2) {
            const int8_t *w = weights + (size_t)u * depth;
            int32_t a0 = bias_full[u], a1 = bias_full[u + 1];
            mn_dot2_s8(x, w, w + depth, depth, &a0, &a1);
            o[u] = mn_requant_s8(a0, mult[u], shift[u], out_zp, lo, hi);
            o[u + 1] = mn_requant_s8(a1, mult[u + 1], shift[u + 1], out_zp, lo, hi);
        }
        if (u < units)
            o[u] = mn_requant_s8(mn_dot_s8(x, weights + (size_t)u * depth, depth, bias_full[u]), mult[u], shift[u],
                                 out_zp, lo, hi);
    }
}
