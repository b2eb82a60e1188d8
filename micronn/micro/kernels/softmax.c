/* SOFTMAX over the last axis, int8 input, int8 or int16 output, in gemmlowp fixed point like TFLM.
 *
 * Differences from the row maximum are scaled into Q5.26 (`mult`, `left_shift` and `diff_min` come from the
 * Python kernel's prepare, which derives them from float scales), exponentiated, summed in Q12.19 and
 * divided through 1/(1+x). Differences below diff_min contribute nothing and give the output minimum.
 */
#include "mn_kernels.h"

enum { OUT, IN, ROWS, DEPTH, MULT, LEFT_SHIFT, DIFF_MIN, OUT_BITS };
#define MN_SOFTMAX_CACHE 16 /* exponentials kept per row (64 bytes of stack); later values are computed twice */

static inline int32_t row_exp(int32_t diff, int32_t mult, int left_shift) {
    return mn_exp_on_negative_values(mn_srdhm(mn_wrap_shl(diff, left_shift), mult), 5);
}

void mn_softmax_s8(const mn_word *args) {
    const int8_t *in = MN_P(const int8_t, IN);
    const int rows = MN_I(ROWS), depth = MN_I(DEPTH), left_shift = MN_I(LEFT_SHIFT), out_bits = MN_I(OUT_BITS);
    const int32_t mult = MN_I(MULT), diff_min = MN_I(DIFF_MIN);
    const int32_t lo = out_bits == 16 ? -32768 : -128, hi = out_bits == 16 ? 32767 : 127;
    int32_t cache[MN_SOFTMAX_CACHE]; /* the first values' exponentials, computed once for both passes */

    for (int r = 0; r < rows; r++) {
        const int8_t *x = in + (size_t)r * depth;
        int32_t max = -128;
        for (int i = 0; i < depth; i++) max = mn_max(max, x[i]);
        uint32_t sum = 0; /* Q12.19, wrapping like TFLM's int32 */
        for (int i = 0; i < depth; i++) {
            if (x[i] - max < diff_min) continue;
            const int32_t e = row_exp(x[i] - max, mult, left_shift);
            if (i < MN_SOFTMAX_CACHE) cache[i] = e;
            sum += (uint32_t)mn_rescale(e, 0, 12);
        }
        /* GetReciprocal: normalise the sum into [1, 2) and take 1/(1+x) of its fraction */
        const int headroom = mn_clz32(sum);
        const int32_t scale = mn_one_over_one_plus_x((int32_t)((headroom < 32 ? sum << headroom : 0u) - 0x80000000u));
        const int exponent = 12 - headroom + 31 - out_bits;
        for (int i = 0; i < depth; i++) {
            int32_t y = lo;
            if (x[i] - max >= diff_min && exponent <= 31) { /* beyond 31 TFLM's reference aborts */
                const int32_t e = i < MN_SOFTMAX_CACHE ? cache[i] : row_exp(x[i] - max, mult, left_shift);
                y = mn_clamp(mn_rdbpot(mn_srdhm(scale, e), exponent) + lo, lo, hi);
            }
            if (out_bits == 16) MN_P(int16_t, OUT)[(size_t)r * depth + i] = (int16_t)y;
            else MN_P(int8_t, OUT)[(size_t)r * depth + i] = (int8_t)y;
        }
    }
}
