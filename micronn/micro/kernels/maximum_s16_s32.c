/* MAXIMUM and MINIMUM, int16 and int32, with broadcasting: TFLM compares the raw values (no rescaling, whatever
 * the quantization) and keeps x1 when it is strictly larger (smaller), x2 otherwise. Each element is read before
 * it is written (in-place outputs are fine).
 */
#include "mn_elementwise.h"

enum { OUT, IN1, IN2, GEO };

/* `larger` and `wide` (int32 rather than int16) are constants at each call site: one loop per op and type. */
static inline void pick_row(uint8_t *p0, const uint8_t *p1, const uint8_t *p2, int32_t n, int32_t s0, int32_t s1,
                            int32_t s2, const int larger, const int wide) {
    for (int32_t i = 0; i < n; i++, p0 += s0, p1 += s1, p2 += s2) {
        const int32_t a = wide ? *(const int32_t *)p1 : *(const int16_t *)p1;
        const int32_t b = wide ? *(const int32_t *)p2 : *(const int16_t *)p2;
        const int32_t v = (larger ? a > b : a < b) ? a : b;
        if (wide) *(int32_t *)p0 = v;
        else *(int16_t *)p0 = (int16_t)v;
    }
}

#define MN_PICK_ROWS(name, larger, wide)                                                                           \
    static void name(uint8_t *p0, const uint8_t *p1, const uint8_t *p2, int32_t n, int32_t s0, int32_t s1,        \
                     int32_t s2, const mn_word *args) {                                                            \
        (void)args;                                                                                                \
        pick_row(p0, p1, p2, n, s0, s1, s2, larger, wide);                                                         \
    }
MN_PICK_ROWS(max_rows_s16, 1, 0)
MN_PICK_ROWS(min_rows_s16, 0, 0)
MN_PICK_ROWS(max_rows_s32, 1, 1)
MN_PICK_ROWS(min_rows_s32, 0, 1)

void mn_maximum_s16(const mn_word *args) {
    mn_walk(args, GEO, MN_P(uint8_t, OUT), MN_P(const uint8_t, IN1), MN_P(const uint8_t, IN2), max_rows_s16);
}

void mn_minimum_s16(const mn_word *args) {
    mn_walk(args, GEO, MN_P(uint8_t, OUT), MN_P(const uint8_t, IN1), MN_P(const uint8_t, IN2), min_rows_s16);
}

void mn_maximum_s32(const mn_word *args) {
    mn_walk(args, GEO, MN_P(uint8_t, OUT), MN_P(const uint8_t, IN1), MN_P(const uint8_t, IN2), max_rows_s32);
}

void mn_minimum_s32(const mn_word *args) {
    mn_walk(args, GEO, MN_P(uint8_t, OUT), MN_P(const uint8_t, IN1), MN_P(const uint8_t, IN2), min_rows_s32);
}
