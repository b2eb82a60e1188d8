/* PAD / PADV2 up to 5-D with non-negative paddings, any element size.
 *
 * The output is written once in raster order, one innermost row at a time: rows outside the input are filled
 * with the pad value, the others get their left padding, the input row, their right padding. A spatial NHWC
 * pad thus produces pixel after pixel, each from one input pixel, so the planner may stream it over its input.
 */
#include "mn_kernels.h"

enum { OUT, IN, VALUE, ESIZE, OUT_SHAPE, IN_SHAPE = OUT_SHAPE + 5, BEFORE = IN_SHAPE + 5 };

void mn_pad(const mn_word *args) {
    uint8_t *o = MN_P(uint8_t, OUT);
    const uint8_t *in = MN_P(const uint8_t, IN), *value = MN_P(const uint8_t, VALUE);
    const size_t esize = (size_t)args[ESIZE];
    int os[5], is[5], before[5], idx[4] = {0, 0, 0, 0};
    size_t rows = 1;
    for (int d = 0; d < 5; d++) {
        os[d] = MN_I(OUT_SHAPE + d), is[d] = MN_I(IN_SHAPE + d), before[d] = MN_I(BEFORE + d);
        if (d < 4) rows *= (size_t)os[d];
    }
    const size_t left = (size_t)before[4], width = (size_t)is[4], right = (size_t)(os[4] - before[4] - is[4]);
    for (size_t r = 0; r < rows; r++, o += (size_t)os[4] * esize) {
        int inside = 1;
        size_t src = 0; /* the input row's index */
        for (int d = 0; d < 4; d++) {
            const int i = idx[d] - before[d];
            inside &= i >= 0 && i < is[d];
            src = src * (size_t)is[d] + (size_t)i;
        }
        if (!inside || width == 0) {
            mn_fill(o, value, esize, (size_t)os[4]);
        } else {
            mn_fill(o, value, esize, left);
            mn_move(o + left * esize, in + src * width * esize, width * esize);
            mn_fill(o + (left + width) * esize, value, esize, right);
        }
        for (int d = 3; d >= 0 && ++idx[d] == os[d]; d--) idx[d] = 0; /* next row, raster order */
    }
}
