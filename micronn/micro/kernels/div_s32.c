/* DIV, int32, with broadcasting: C's quotient (truncated toward zero) clamped to the fused activation's range.
 *
 * TFLM fails the invoke on a zero divisor and crashes on INT32_MIN / -1, and micronn's reference raises for
 * both. A device kernel cannot raise: it writes 0 for a zero divisor and the wrapped INT32_MIN for INT32_MIN / -1
 * (then clamped), so that neither is undefined behaviour, and reports MN_DIV_BAD_DIVISOR in mn_status. Each element
 * is read before it is written.
 */
#include "mn_elementwise.h"

enum { OUT, IN1, IN2, ACT_MIN, ACT_MAX, GEO };
#define MN_DIV_BAD_DIVISOR (-1003)

__attribute__((weak)) int32_t mn_status; /* the kernels' error channel (see spill.c) */

static void div_rows(uint8_t *p0, const uint8_t *p1, const uint8_t *p2, int32_t n, int32_t s0, int32_t s1,
                     int32_t s2, const mn_word *args) {
    const int32_t lo = MN_I(ACT_MIN), hi = MN_I(ACT_MAX);
    for (int32_t i = 0; i < n; i++, p0 += s0, p1 += s1, p2 += s2) {
        const int32_t a = *(const int32_t *)p1, b = *(const int32_t *)p2;
        int32_t q;
        if (b == 0 || (b == -1 && a == INT32_MIN)) mn_status = MN_DIV_BAD_DIVISOR;
        if (b == 0) q = 0;
        else if (b == -1) q = (int32_t)(0u - (uint32_t)a);
        else q = a / b;
        *(int32_t *)p0 = mn_clamp(q, lo, hi);
    }
}

void mn_div_s32(const mn_word *args) {
    mn_walk(args, GEO, MN_P(uint8_t, OUT), MN_P(const uint8_t, IN1), MN_P(const uint8_t, IN2), div_rows);
}
