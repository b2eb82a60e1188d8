/* ADD and SUB, int8, with broadcasting: TFLM's general rescaling path.
 *
 * Each operand, offset by its zero point and shifted left by `left_shift` (20), is scaled by its own multiplier
 * below one onto twice the larger input scale; the two are added (or subtracted) with int32 wrap-around and the
 * result scaled to the output, offset by its zero point and clamped to the activation range. All multipliers,
 * shifts and bounds come from the Python kernel's prepare. A broadcast operand (stride 0 along the row) is
 * rescaled once per row.
 *
 * TFLM's prepare keeps all three multipliers below one (non-negative, shifts <= 0; the lowering checks), so
 * MultiplyByQuantizedMultiplier reduces to the two shifts of mn_requant_s8's fast path (see mn_kernels.h).
 */
#include "mn_elementwise.h"

enum { OUT, IN1, IN2, OFF1, OFF2, LEFT_SHIFT, MULT1, SHIFT1, MULT2, SHIFT2, MULT_OUT, SHIFT_OUT, OUT_ZP, ACT_MIN,
       ACT_MAX, GEO };

/* mn_mbqm(x, mult, shift) for 0 <= mult and shift <= 0: floor((x * mult + 2^30) / 2^31), then divided by
 * 2^-shift rounding half away from zero. */
static inline int32_t mbqm_below_one(int32_t x, int32_t mult, int32_t shift) {
    const int64_t h = ((int64_t)x * mult + (1 << 30)) >> 31;
    return shift == 0 ? (int32_t)h : (int32_t)((h - (h < 0) + ((int64_t)1 << (-shift - 1))) >> -shift);
}

static inline int32_t rescale(int32_t x, int32_t offset, int left_shift, int32_t mult, int32_t shift) {
    return mbqm_below_one(mn_wrap_shl(x + offset, left_shift), mult, shift);
}

/* `subtract` is a constant at each call site, so each op gets its own loop. */
static inline void add_row(uint8_t *p0, const uint8_t *p1, const uint8_t *p2, int32_t n, int32_t s0, int32_t s1,
                           int32_t s2, const mn_word *args, const int subtract) {
    const int left_shift = MN_I(LEFT_SHIFT);
    const int32_t off1 = MN_I(OFF1), m1 = MN_I(MULT1), sh1 = MN_I(SHIFT1);
    const int32_t off2 = MN_I(OFF2), m2 = MN_I(MULT2), sh2 = MN_I(SHIFT2);
    const int32_t mo = MN_I(MULT_OUT), so = MN_I(SHIFT_OUT), zp = MN_I(OUT_ZP), lo = MN_I(ACT_MIN);
    const int32_t hi = MN_I(ACT_MAX);
    const int32_t fixed1 = s1 == 0 ? rescale(*(const int8_t *)p1, off1, left_shift, m1, sh1) : 0;
    const int32_t fixed2 = s2 == 0 ? rescale(*(const int8_t *)p2, off2, left_shift, m2, sh2) : 0;
    for (int32_t i = 0; i < n; i++, p0 += s0, p1 += s1, p2 += s2) {
        const int32_t a = s1 == 0 ? fixed1 : rescale(*(const int8_t *)p1, off1, left_shift, m1, sh1);
        const int32_t b = s2 == 0 ? fixed2 : rescale(*(const int8_t *)p2, off2, left_shift, m2, sh2);
        const int32_t raw = subtract ? (int32_t)((uint32_t)a - (uint32_t)b) : mn_wrap_add(a, b);
        *(int8_t *)p0 = (int8_t)mn_add_clamp(mbqm_below_one(raw, mo, so), zp, lo, hi);
    }
}

static void add_rows(uint8_t *p0, const uint8_t *p1, const uint8_t *p2, int32_t n, int32_t s0, int32_t s1,
                     int32_t s2, const mn_word *args) {
    add_row(p0, p1, p2, n, s0, s1, s2, args, 0);
}

static void sub_rows(uint8_t *p0, const uint8_t *p1, const uint8_t *p2, int32_t n, int32_t s0, int32_t s1,
                     int32_t s2, const mn_word *args) {
    add_row(p0, p1, p2, n, s0, s1, s2, args, 1);
}

void mn_add_s8(const mn_word *args) {
    mn_walk(args, GEO, MN_P(uint8_t, OUT), MN_P(const uint8_t, IN1), MN_P(const uint8_t, IN2), add_rows);
}

void mn_sub_s8(const mn_word *args) {
    mn_walk(args, GEO, MN_P(uint8_t, OUT), MN_P(const uint8_t, IN1), MN_P(const uint8_t, IN2), sub_rows);
}
