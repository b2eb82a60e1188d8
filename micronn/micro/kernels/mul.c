/* MUL, int8, with broadcasting: (x1 - zp1) * (x2 - zp2) in int32, scaled by a quantized multiplier (which may
 * exceed one: then it shifts left first), offset by the output zero point and clamped to the activation range.
 */
#include "mn_elementwise.h"

enum { OUT, IN1, IN2, ZP1, ZP2, MULT, SHIFT, OUT_ZP, ACT_MIN, ACT_MAX, GEO };

static void mul_rows(uint8_t *p0, const uint8_t *p1, const uint8_t *p2, int32_t n, int32_t s0, int32_t s1,
                     int32_t s2, const mn_word *args) {
    const int32_t zp1 = MN_I(ZP1), zp2 = MN_I(ZP2), mult = MN_I(MULT), shift = MN_I(SHIFT), zp = MN_I(OUT_ZP);
    const int32_t lo = MN_I(ACT_MIN), hi = MN_I(ACT_MAX);
    for (int32_t i = 0; i < n; i++, p0 += s0, p1 += s1, p2 += s2) {
        const int32_t a = *(const int8_t *)p1 - zp1, b = *(const int8_t *)p2 - zp2;
        *(int8_t *)p0 = (int8_t)mn_add_clamp(mn_mbqm((int32_t)((uint32_t)a * (uint32_t)b), mult, shift), zp, lo, hi);
    }
}

void mn_mul_s8(const mn_word *args) {
    mn_walk(args, GEO, MN_P(uint8_t, OUT), MN_P(const uint8_t, IN1), MN_P(const uint8_t, IN2), mul_rows);
}
