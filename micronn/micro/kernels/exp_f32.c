/* EXP, float32: out[i] = expf(in[i]) with mn_f32_exp (mn_f32.h), elementwise. */
#include "mn_f32.h"

enum { OUT, IN, SIZE };

void mn_exp_f32(const mn_word *args) {
    float *out = MN_P(float, OUT);
    const float *in = MN_P(const float, IN);
    const int size = MN_I(SIZE);
    for (int i = 0; i < size; i++) out[i] = mn_f32_exp(in[i]);
}
