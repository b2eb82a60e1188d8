/* SOFTMAX over the last axis, int16 -> int16, through TFLM's two 513-entry int16 lookup tables.
 *
 * Differences from the row maximum are scaled (32-bit requantization with `mult`/`shift` from the Python kernel's
 * prepare) so that [-65535, 0] covers the exp table's domain [-10, 0]; the exps are summed in int32 (wrapping),
 * the sum is normalised into [1, 2) and its reciprocal looked up in the 1/(1+x) table; each output is
 * exp * reciprocal shifted back by the sum's headroom. The tables are the ones prepare keeps in the persistent
 * arena, passed by the lowering. Shifts by out-of-range amounts (sums that wrap or vanish, only in absurd rows)
 * follow the Python reference's int64 arithmetic.
 */
#include "mn_kernels.h"

enum { OUT, IN, EXP_LUT, RECIP_LUT, ROWS, DEPTH, MULT, SHIFT };

/* Linear interpolation in a 513-entry table: the top 9 bits of v + 32768 pick the interval, the low 7 bits
 * interpolate with rounding; the slope and result wrap to int16 as in TFLM. */
static inline int32_t lookup(int32_t v, const int16_t *lut) {
    const int32_t index = 256 + (v >> 7), offset = v & 0x7F, base = lut[index];
    const int32_t slope = (int16_t)(lut[index + 1] - base);
    return (int16_t)(base + ((slope * offset + 64) >> 7));
}

/* exp(diff) for diff = x - max <= 0, as a Q15 value. */
static inline int32_t row_exp(int32_t diff, int32_t mult, int32_t shift, const int16_t *lut) {
    const int64_t symmetric = (int64_t)mn_mbqm(diff, mult, shift) + 32767; /* [-65535, 0] onto the table's domain */
    return lookup(symmetric < -32768 ? -32768 : symmetric > 32767 ? 32767 : (int32_t)symmetric, lut);
}

void mn_softmax_s16(const mn_word *args) {
    const int16_t *in = MN_P(const int16_t, IN);
    int16_t *out = MN_P(int16_t, OUT);
    const int16_t *exp_lut = MN_P(const int16_t, EXP_LUT), *recip_lut = MN_P(const int16_t, RECIP_LUT);
    const int rows = MN_I(ROWS), depth = MN_I(DEPTH);
    const int32_t mult = MN_I(MULT), shift = MN_I(SHIFT);

    for (int r = 0; r < rows; r++) {
        const int16_t *x = in + (size_t)r * depth;
        int16_t *o = out + (size_t)r * depth;
        int32_t max = -32768;
        for (int i = 0; i < depth; i++) max = mn_max(max, x[i]);
        uint32_t sum = 0; /* int32 in TFLM: wraps */
        for (int i = 0; i < depth; i++) sum += (uint32_t)row_exp(x[i] - max, mult, shift, exp_lut);
        const int headroom_plus_one = mn_clz32(sum);
        /* the sum as Q1.16 in [1, 2) (0 when it wrapped negative: a shift by -1), recentred on the table */
        const int64_t shifted = headroom_plus_one > 0
            ? (((int64_t)(int32_t)sum << (headroom_plus_one - 1)) + (1 << 13)) >> 14 : (1 << 13) >> 14;
        const int64_t centred = shifted - ((1 << 15) + (1 << 16));
        const int32_t reciprocal = lookup(centred < -32768 ? -32768 : centred > 32767 ? 32767 : (int32_t)centred,
                                          recip_lut);
        const int right_shift = 31 - headroom_plus_one; /* -1 .. 31 */
        const int64_t round = right_shift >= 1 ? (int64_t)1 << (right_shift - 1) : 0;
        for (int i = 0; i < depth; i++) {
            const int64_t p = (int64_t)row_exp(x[i] - max, mult, shift, exp_lut) * reciprocal + round;
            const int64_t y = right_shift >= 0 ? p >> right_shift : p < 0 ? -1 : 0;
            o[i] = (int16_t)(y < 0 ? 0 : y > 32767 ? 32767 : y);
        }
    }
}
