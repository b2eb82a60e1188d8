/* MEAN, int8: TFLM's quantized mean over some axes.
 *
 * The input is walked once in memory order, each value added (int32 wrap-around, so the order of the sum does
 * not matter) to the int32 accumulator of its output in the scratch buffer TFLM's prepare requests; the walk's
 * accumulator strides are 0 along the reduced axes. Each sum, less the input zero point times the count, is
 * scaled by the multiplier that the lowering took from the Python kernel (1/count already folded in), offset
 * by the output zero point and clamped to int8.
 */
#include "mn_elementwise.h"

enum { OUT, IN, ACC, OUTPUTS, COUNT, IN_ZP, MULT, SHIFT, OUT_ZP, GEO };

static void sum_rows(uint8_t *p0, const uint8_t *p1, const uint8_t *p2, int32_t n, int32_t s0, int32_t s1,
                     int32_t s2, const mn_word *args) {
    (void)p2, (void)s2, (void)args;
    if (s0 == 0) { /* the row is reduced into one accumulator */
        uint32_t sum = *(uint32_t *)p0;
        for (int32_t i = 0; i < n; i++, p1 += s1) sum += (uint32_t)(int32_t) * (const int8_t *)p1;
        *(uint32_t *)p0 = sum;
        return;
    }
    for (int32_t i = 0; i < n; i++, p0 += s0, p1 += s1) *(uint32_t *)p0 += (uint32_t)(int32_t)*(const int8_t *)p1;
}

void mn_mean_s8(const mn_word *args) {
    int8_t *out = MN_P(int8_t, OUT);
    uint32_t *acc = MN_P(uint32_t, ACC);
    const uint8_t *in = MN_P(const uint8_t, IN);
    const int32_t outputs = MN_I(OUTPUTS), count = MN_I(COUNT), mult = MN_I(MULT), shift = MN_I(SHIFT);
    const int32_t out_zp = MN_I(OUT_ZP);
    const uint32_t zp_total = (uint32_t)MN_I(IN_ZP) * (uint32_t)count;

    memset(acc, 0, (size_t)outputs * sizeof *acc);
    mn_walk(args, GEO, (uint8_t *)acc, in, in, sum_rows);
    for (int32_t i = 0; i < outputs; i++)
        out[i] = (int8_t)mn_add_clamp(mn_mbqm((int32_t)(acc[i] - zp_total), mult, shift), out_zp, -128, 127);
}
