/* ADD and SUB, int16 and int32, with broadcasting. Each element is read before it is written (in-place outputs
 * are fine).
 *
 * int32: a sum (difference) that wraps like C's int32 arithmetic on TFLM's host, clamped to the range prepare
 * chose (the full range for ADD, which ignores its fused activation in TFLM; the activation's for SUB).
 *
 * int16: TFLM's general rescaling path, as for int8 (add.c) with a left shift of 15: each operand, offset by its
 * zero point and shifted left (wrapping), is scaled by its multiplier onto twice the larger input scale; the two
 * are added (subtracted) with int32 wrap-around, scaled to the output, offset by its zero point and clamped.
 * Every multiplier, shift, offset and bound comes from the Python kernel's prepare.
 */
#include "mn_elementwise.h"

enum { OUT, IN1, IN2, ACT_MIN, ACT_MAX, GEO };
enum { Q_OUT, Q_IN1, Q_IN2, OFF1, OFF2, LEFT_SHIFT, MULT1, SHIFT1, MULT2, SHIFT2, MULT_OUT, SHIFT_OUT, OUT_ZP,
       Q_ACT_MIN, Q_ACT_MAX, Q_GEO };

/* `subtract` is a constant at each call site, so each op gets its own loop. */
static inline void add_row_s32(uint8_t *p0, const uint8_t *p1, const uint8_t *p2, int32_t n, int32_t s0, int32_t s1,
                               int32_t s2, const mn_word *args, const int subtract) {
    const int32_t lo = MN_I(ACT_MIN), hi = MN_I(ACT_MAX);
    for (int32_t i = 0; i < n; i++, p0 += s0, p1 += s1, p2 += s2) {
        const uint32_t a = (uint32_t)*(const int32_t *)p1, b = (uint32_t)*(const int32_t *)p2;
        *(int32_t *)p0 = mn_clamp((int32_t)(subtract ? a - b : a + b), lo, hi);
    }
}

static inline int32_t rescale(int32_t x, int32_t offset, int left_shift, int32_t mult, int32_t shift) {
    return mn_mbqm(mn_wrap_shl(x + offset, left_shift), mult, shift);
}

static inline void add_row_s16(uint8_t *p0, const uint8_t *p1, const uint8_t *p2, int32_t n, int32_t s0, int32_t s1,
                               int32_t s2, const mn_word *args, const int subtract) {
    const int left_shift = MN_I(LEFT_SHIFT);
    const int32_t off1 = MN_I(OFF1), m1 = MN_I(MULT1), sh1 = MN_I(SHIFT1);
    const int32_t off2 = MN_I(OFF2), m2 = MN_I(MULT2), sh2 = MN_I(SHIFT2);
    const int32_t mo = MN_I(MULT_OUT), so = MN_I(SHIFT_OUT), zp = MN_I(OUT_ZP);
    const int32_t lo = MN_I(Q_ACT_MIN), hi = MN_I(Q_ACT_MAX);
    for (int32_t i = 0; i < n; i++, p0 += s0, p1 += s1, p2 += s2) {
        const int32_t a = rescale(*(const int16_t *)p1, off1, left_shift, m1, sh1);
        const int32_t b = rescale(*(const int16_t *)p2, off2, left_shift, m2, sh2);
        const int32_t raw = subtract ? (int32_t)((uint32_t)a - (uint32_t)b) : mn_wrap_add(a, b);
        *(int16_t *)p0 = (int16_t)mn_add_clamp(mn_mbqm(raw, mo, so), zp, lo, hi);
    }
}

#define MN_ADD_ROWS(name, row, subtract)                                                                           \
    static void name(uint8_t *p0, const uint8_t *p1, const uint8_t *p2, int32_t n, int32_t s0, int32_t s1,        \
                     int32_t s2, const mn_word *args) {                                                            \
        row(p0, p1, p2, n, s0, s1, s2, args, subtract);                                                            \
    }
MN_ADD_ROWS(add_rows_s32, add_row_s32, 0)
MN_ADD_ROWS(sub_rows_s32, add_row_s32, 1)
MN_ADD_ROWS(add_rows_s16, add_row_s16, 0)
MN_ADD_ROWS(sub_rows_s16, add_row_s16, 1)

void mn_add_s32(const mn_word *args) {
    mn_walk(args, GEO, MN_P(uint8_t, OUT), MN_P(const uint8_t, IN1), MN_P(const uint8_t, IN2), add_rows_s32);
}

void mn_sub_s32(const mn_word *args) {
    mn_walk(args, GEO, MN_P(uint8_t, OUT), MN_P(const uint8_t, IN1), MN_P(const uint8_t, IN2), sub_rows_s32);
}

void mn_add_s16(const mn_word *args) {
    mn_walk(args, Q_GEO, MN_P(uint8_t, Q_OUT), MN_P(const uint8_t, Q_IN1), MN_P(const uint8_t, Q_IN2), add_rows_s16);
}

void mn_sub_s16(const mn_word *args) {
    mn_walk(args, Q_GEO, MN_P(uint8_t, Q_OUT), MN_P(const uint8_t, Q_IN1), MN_P(const uint8_t, Q_IN2), sub_rows_s16);
}
