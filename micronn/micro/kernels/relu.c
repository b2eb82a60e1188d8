/* RELU, RELU6 and LEAKY_RELU, int8, elementwise over the flat tensor (in place or not).
 *
 * RELU requantizes q - input_zero_point onto the output's scale (int32 wrap-around when adding the output zero
 * point, like the reference) and clamps below at the quantized zero; RELU6 only clamps, in the input's own
 * quantization; LEAKY_RELU requantizes with one multiplier for non-negative and another (alpha folded in) for
 * negative differences. Every multiplier and bound comes from the Python kernel's prepare.
 */
#include "mn_kernels.h"

enum { OUT, IN, COUNT, IN_ZP, MULT, SHIFT, OUT_ZP, ACT_MIN, ACT_MAX, ALPHA_MULT, ALPHA_SHIFT };

void mn_relu_s8(const mn_word *args) {
    int8_t *out = MN_P(int8_t, OUT);
    const int8_t *in = MN_P(const int8_t, IN);
    const int32_t n = MN_I(COUNT), in_zp = MN_I(IN_ZP), mult = MN_I(MULT), shift = MN_I(SHIFT);
    const int32_t out_zp = MN_I(OUT_ZP), lo = MN_I(ACT_MIN), hi = MN_I(ACT_MAX);
    for (int32_t i = 0; i < n; i++)
        out[i] = (int8_t)mn_clamp(mn_wrap_add(mn_mbqm(in[i] - in_zp, mult, shift), out_zp), lo, hi);
}

void mn_leaky_relu_s8(const mn_word *args) {
    int8_t *out = MN_P(int8_t, OUT);
    const int8_t *in = MN_P(const int8_t, IN);
    const int32_t n = MN_I(COUNT), in_zp = MN_I(IN_ZP), mult = MN_I(MULT), shift = MN_I(SHIFT);
    const int32_t out_zp = MN_I(OUT_ZP), lo = MN_I(ACT_MIN), hi = MN_I(ACT_MAX);
    const int32_t alpha_mult = MN_I(ALPHA_MULT), alpha_shift = MN_I(ALPHA_SHIFT);
    for (int32_t i = 0; i < n; i++) {
        const int32_t v = in[i] - in_zp;
        const int32_t y = v >= 0 ? mn_mbqm(v, mult, shift) : mn_mbqm(v, alpha_mult, alpha_shift);
        out[i] = (int8_t)mn_clamp(mn_wrap_add(y, out_zp), lo, hi);
    }
}

enum { R6_OUT, R6_IN, R6_COUNT, R6_LOWER, R6_UPPER };

void mn_relu6_s8(const mn_word *args) {
    int8_t *out = MN_P(int8_t, R6_OUT);
    const int8_t *in = MN_P(const int8_t, R6_IN);
    const int32_t n = MN_I(R6_COUNT), lower = MN_I(R6_LOWER), upper = MN_I(R6_UPPER);
    for (int32_t i = 0; i < n; i++) {
        const int32_t x = in[i];
        out[i] = (int8_t)(x > upper ? upper : x < lower ? lower : x);
    }
}
