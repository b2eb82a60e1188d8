/* MAXIMUM and MINIMUM, int8, with broadcasting: TFLM compares the raw values (no rescaling, whatever the
 * quantization) and keeps x1 when it is strictly larger (smaller), x2 otherwise.
 */
#include "mn_elementwise.h"

enum { OUT, IN1, IN2, GEO };

/* `larger` is a constant at each call site, so each op gets its own loop. */
static inline void pick_row(uint8_t *p0, const uint8_t *p1, const uint8_t *p2, int32_t n, int32_t s0, int32_t s1,
                            int32_t s2, const int larger) {
    for (int32_t i = 0; i < n; i++, p0 += s0, p1 += s1, p2 += s2) {
        const int8_t a = *(const int8_t *)p1, b = *(const int8_t *)p2;
        *(int8_t *)p0 = (larger ? a > b : a < b) ? a : b;
    }
}

static void max_rows(uint8_t *p0, const uint8_t *p1, const uint8_t *p2, int32_t n, int32_t s0, int32_t s1,
                     int32_t s2, const mn_word *args) {
    (void)args;
    pick_row(p0, p1, p2, n, s0, s1, s2, 1);
}

static void min_rows(uint8_t *p0, const uint8_t *p1, const uint8_t *p2, int32_t n, int32_t s0, int32_t s1,
                     int32_t s2, const mn_word *args) {
    (void)args;
    pick_row(p0, p1, p2, n, s0, s1, s2, 0);
}

void mn_maximum_s8(const mn_word *args) {
    mn_walk(args, GEO, MN_P(uint8_t, OUT), MN_P(const uint8_t, IN1), MN_P(const uint8_t, IN2), max_rows);
}

void mn_minimum_s8(const mn_word *args) {
    mn_walk(args, GEO, MN_P(uint8_t, OUT), MN_P(const uint8_t, IN1), MN_P(const uint8_t, IN2), min_rows);
}
