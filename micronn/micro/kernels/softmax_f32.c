/* SOFTMAX over the last axis, float32: e = exp((x - max) * beta) per value, their float32 sum in order, then
 * e / sum.
 *
 * The maximum starts at -FLT_MAX and is replaced only by a larger value (NaNs never become it). exp is the C
 * library's expf, which the reference calls, bit for bit (mn_libm.h).
 */
#include "mn_libm.h"

enum { OUT, IN, ROWS, DEPTH, BETA };

void mn_softmax_f32(const mn_word *args) {
    float *out = MN_P(float, OUT);
    const float *in = MN_P(const float, IN);
    const int rows = MN_I(ROWS), depth = MN_I(DEPTH);
    const float beta = mn_f32_arg(args, BETA);

    for (int r = 0; r < rows; r++) {
        const float *x = in + (size_t)r * depth;
        float *o = out + (size_t)r * depth;
        float max = MN_F32_LOWEST, sum = 0.0f;
        for (int i = 0; i < depth; i++)
            if (max < x[i]) max = x[i];
        for (int i = 0; i < depth; i++) {
            float d = x[i] - max;
            d = d * beta;
            o[i] = mn_libm_expf(d);
            sum = sum + o[i];
        }
        for (int i = 0; i < depth; i++) o[i] = o[i] / sum;
    }
}
