/* LOGISTIC and TANH, int8, in gemmlowp fixed point like TFLM (the output quantization is fixed: 1/256 steps
 * from -128 for LOGISTIC, 1/128 steps around 0 for TANH).
 *
 * An input whose difference from the zero point reaches the radius saturates; the others are scaled into
 * Q4.27 by the multiplier and shift of the Python kernel's prepare and go through logistic or tanh in Q0.31,
 * whose result is rounded to 8 (7) fraction bits, offset and clamped to int8.
 */
#include "mn_kernels.h"

enum { OUT, IN, COUNT, IN_ZP, MULT, LEFT_SHIFT, RADIUS };
enum { INPUT_INTEGER_BITS = 4 };

/* gemmlowp one_minus_x_over_one_plus_x_for_x_in_0_1: (1 - a) / (1 + a) for a Q0.31 a in [0, 1), as Q0.31; the
 * Newton-Raphson reciprocal of mn_one_over_one_plus_x, minus one. */
static int32_t one_minus_x_over_one_plus_x(int32_t a) {
    int64_t s = (int64_t)a + INT32_MAX; /* RoundingHalfSum(a, 1) */
    s += s >= 0 ? 1 : -1;
    const int32_t half_denominator = (int32_t)(s >= 0 ? s >> 1 : -((-s) >> 1));
    int32_t x = 1515870810 + mn_srdhm(half_denominator, -1010580540); /* 48/17 - 32/17 d, Q2.29 */
    for (int i = 0; i < 3; i++)
        x = x + mn_rescale(mn_srdhm(x, (1 << 29) - mn_srdhm(half_denominator, x)), 4, 2);
    return mn_rescale(x - (1 << 29), 2, 0);
}

/* logistic of a Q4.27 value, as Q0.31: 1 / (1 + exp(-|a|)), mirrored for a < 0. */
static int32_t logistic_q31(int32_t a) {
    if (a == 0) return 1 << 30;
    const int32_t abs_a = a > 0 ? a : (int32_t)(0u - (uint32_t)a);
    const int32_t on_positive = mn_one_over_one_plus_x(
        mn_exp_on_negative_values((int32_t)(0u - (uint32_t)abs_a), INPUT_INTEGER_BITS));
    return a > 0 ? on_positive : INT32_MAX - on_positive;
}

/* tanh of a Q4.27 value, as Q0.31: (1 - exp(-2|a|)) / (1 + exp(-2|a|)), odd. -|a| read with one more integer
 * bit is -2|a|. */
static int32_t tanh_q31(int32_t a) {
    if (a == 0) return 0;
    const int32_t minus_abs = a < 0 ? a : (int32_t)(0u - (uint32_t)a);
    const int32_t t = one_minus_x_over_one_plus_x(mn_exp_on_negative_values(minus_abs, INPUT_INTEGER_BITS + 1));
    return a < 0 ? (int32_t)(0u - (uint32_t)t) : t;
}

/* `is_tanh` is a constant at each call site, so each op gets its own loop. */
static inline void squash(const mn_word *args, const int is_tanh) {
    int8_t *out = MN_P(int8_t, OUT);
    const int8_t *in = MN_P(const int8_t, IN);
    const int32_t n = MN_I(COUNT), in_zp = MN_I(IN_ZP), mult = MN_I(MULT), left_shift = MN_I(LEFT_SHIFT);
    const int32_t radius = MN_I(RADIUS);
    const int fraction_bits = is_tanh ? 7 : 8;
    const int32_t out_zp = is_tanh ? 0 : -128;
    for (int32_t i = 0; i < n; i++) {
        const int32_t v = in[i] - in_zp;
        if (v <= -radius) {
            out[i] = -128;
        } else if (v >= radius) {
            out[i] = 127;
        } else {
            const int32_t q4 = mn_mbqm(v, mult, left_shift);
            const int32_t q0 = is_tanh ? tanh_q31(q4) : logistic_q31(q4);
            out[i] = (int8_t)mn_add_clamp(mn_rdbpot(q0, 31 - fraction_bits), out_zp, -128, 127);
        }
    }
}

void mn_logistic_s8(const mn_word *args) { squash(args, 0); }

void mn_tanh_s8(const mn_word *args) { squash(args, 1); }
