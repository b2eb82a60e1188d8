/* EXP, float32: out[i] = expf(in[i]), the C library's bits (mn_libm.h), elementwise. */
#include "mn_libm.h"

enum { OUT, IN, SIZE };

void mn_exp_f32(const mn_word *args) {
    float *out = MN_P(float, OUT);
    const float *in = MN_P(const float, IN);
    const int size = MN_I(SIZE);
    for (int i = 0; i < size; i++) out[i] = mn_libm_expf(in[i]);
}
