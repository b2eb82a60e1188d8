/* STRIDED_SLICE up to 4-D, any element size: gather count[d] elements per axis, `stride[d]` input bytes apart
 * (negative for reversed axes), from `start` bytes into the input. Shrunk axes have a count of one. A contiguous
 * innermost run (stride one element) that does not overlap its destination is one memcpy: the same bytes as the
 * element-by-element copy, without a call per element. */
#include "mn_kernels.h"

enum { OUT, IN, ESIZE, START, COUNT0, STRIDE0, COUNT1, STRIDE1, COUNT2, STRIDE2, COUNT3, STRIDE3 };

void mn_strided_slice(const mn_word *args) {
    uint8_t *o = MN_P(uint8_t, OUT);
    const uint8_t *in = MN_P(const uint8_t, IN) + MN_I(START);
    const size_t esize = (size_t)args[ESIZE];
    const int n0 = MN_I(COUNT0), n1 = MN_I(COUNT1), n2 = MN_I(COUNT2), n3 = MN_I(COUNT3);
    const int32_t s0 = MN_I(STRIDE0), s1 = MN_I(STRIDE1), s2 = MN_I(STRIDE2), s3 = MN_I(STRIDE3);
    for (int i0 = 0; i0 < n0; i0++)
        for (int i1 = 0; i1 < n1; i1++)
            for (int i2 = 0; i2 < n2; i2++) {
                const uint8_t *x = in + i0 * s0 + i1 * s1 + i2 * s2;
                const size_t run = (size_t)n3 * esize;
                if ((size_t)s3 == esize && (o + run <= x || x + run <= o)) {
                    memcpy(o, x, run);
                    o += run;
                    continue;
                }
                for (int i3 = 0; i3 < n3; i3++, x += s3, o += esize) memcpy(o, x, esize);
            }
}
