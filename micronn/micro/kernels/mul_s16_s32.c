/* MUL, int16 and int32, with broadcasting. Each element is read before it is written (in-place outputs are fine).
 *
 * int32: the product wraps like C's int32 arithmetic on TFLM's host and is clamped to the activation's range.
 * int16: (x1 - zp1) * (x2 - zp2) in int32 (TFLM requires zero points of 0; prepare's are passed anyway), scaled
 * by the quantized multiplier (which may exceed one: then it shifts left first), offset by the output zero point
 * and clamped to the activation range.
 */
#include "mn_elementwise.h"

enum { OUT, IN1, IN2, ACT_MIN, ACT_MAX, GEO };
enum { Q_OUT, Q_IN1, Q_IN2, ZP1, ZP2, MULT, SHIFT, OUT_ZP, Q_ACT_MIN, Q_ACT_MAX, Q_GEO };

static void mul_rows_s32(uint8_t *p0, const uint8_t *p1, const uint8_t *p2, int32_t n, int32_t s0, int32_t s1,
                         int32_t s2, const mn_word *args) {
    const int32_t lo = MN_I(ACT_MIN), hi = MN_I(ACT_MAX);
    for (int32_t i = 0; i < n; i++, p0 += s0, p1 += s1, p2 += s2) {
        const uint32_t a = (uint32_t)*(const int32_t *)p1, b = (uint32_t)*(const int32_t *)p2;
        *(int32_t *)p0 = mn_clamp((int32_t)(a * b), lo, hi);
    }
}

static void mul_rows_s16(uint8_t *p0, const uint8_t *p1, const uint8_t *p2, int32_t n, int32_t s0, int32_t s1,
                         int32_t s2, const mn_word *args) {
    const int32_t zp1 = MN_I(ZP1), zp2 = MN_I(ZP2), mult = MN_I(MULT), shift = MN_I(SHIFT), zp = MN_I(OUT_ZP);
    const int32_t lo = MN_I(Q_ACT_MIN), hi = MN_I(Q_ACT_MAX);
    for (int32_t i = 0; i < n; i++, p0 += s0, p1 += s1, p2 += s2) {
        const int32_t a = *(const int16_t *)p1 - zp1, b = *(const int16_t *)p2 - zp2;
        *(int16_t *)p0 = (int16_t)mn_add_clamp(mn_mbqm((int32_t)((uint32_t)a * (uint32_t)b), mult, shift), zp, lo, hi);
    }
}

void mn_mul_s32(const mn_word *args) {
    mn_walk(args, GEO, MN_P(uint8_t, OUT), MN_P(const uint8_t, IN1), MN_P(const uint8_t, IN2), mul_rows_s32);
}

void mn_mul_s16(const mn_word *args) {
    mn_walk(args, Q_GEO, MN_P(uint8_t, Q_OUT), MN_P(const uint8_t, Q_IN1), MN_P(const uint8_t, Q_IN2), mul_rows_s16);
}
