/* FULLY_CONNECTED, int8 with per-tensor or per-channel weights: out[b][u] = requant(bias[u] + sum_d (x - zp) * w[u][d]).
 *
 * `bias_full` already holds bias[u] - input_zero_point * sum_d w[u][d], so the products take the raw int8 input.
 * The weights come in the paired layout of mn_kernels.h (lower.paired_rows, with its corrections FIX): the input
 * is widened once per batch and four units share it (three instructions per four multiply-accumulates with the
 * DSP extension); up to 64 sums are then requantized in one loop. PER_CHANNEL 0: one multiplier and shift for
 * all units, the requantization worked out once.
 */
#include "mn_kernels.h"

enum { OUT, IN, WEIGHTS, BIAS_FULL, MULT, SHIFT, BATCHES, DEPTH, UNITS, OUT_ZP, ACT_MIN, ACT_MAX, PER_CHANNEL, FIX };

void mn_fully_connected_s8(const mn_word *args) {
    int8_t *out = MN_P(int8_t, OUT);
    const int8_t *in = MN_P(const int8_t, IN);
    const uint32_t *weights = MN_P(const uint32_t, WEIGHTS);
    const int32_t *bias_full = MN_P(const int32_t, BIAS_FULL);
    const int32_t *mult = MN_P(const int32_t, MULT), *shift = MN_P(const int32_t, SHIFT);
    const int batches = MN_I(BATCHES), depth = MN_I(DEPTH), units = MN_I(UNITS), per_channel = MN_I(PER_CHANNEL);
    const int32_t out_zp = MN_I(OUT_ZP), lo = MN_I(ACT_MIN), hi = MN_I(ACT_MAX);
    const int groups = (depth + 3) / 4, padded = units + (units & 1); /* rows come in pairs */
    const mn_rq q = mn_rq_init(mult[0], shift[0], out_zp);
    const int once = groups <= MN_PAIR_SLAB; /* the input widened once per batch */
    uint32_t xe[2 * MN_PAIR_SLAB], acc[64];

    for (int b = 0; b < batches; b++) {
        const int8_t *x = in + (size_t)b * depth;
        const int32_t *fix = MN_P(const int32_t, FIX);
        int8_t *o = out + (size_t)b * units;
        if (once) mn_pair_widen(x, depth, 0, xe);
        for (int c0 = 0; c0 < padded; c0 += 64) { /* 64 sums at a time (whole tiles), then their outputs */
            const int c1 = mn_min(padded, c0 + 64), n = mn_min(units, c1) - c0;
            for (int j = 0; j < n; j++) acc[j] = (uint32_t)bias_full[c0 + j];
            if (n < c1 - c0) acc[n] = 0; /* the zero row padding an odd count */
            mn_pair_matvec(x, depth, 0, xe, once, weights + (size_t)c0 * groups, c1 - c0, acc);
            fix = mn_pair_fix(fix, c0, c1, x, 0, acc);
            if (!per_channel) {
                mn_rq_s8_loop(acc, o + c0, n, &q, lo, hi);
            } else {
                for (int j = 0; j < n; j++) {
                    const mn_rq qc = mn_rq_init(mult[c0 + j], shift[c0 + j], out_zp);
                    o[c0 + j] = (int8_t)mn_rq_clamp(&qc, (int32_t)acc[j], lo, hi);
                }
            }
        }
    }
}
