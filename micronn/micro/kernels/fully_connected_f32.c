/* FULLY_CONNECTED, float32: out[b][u] = clamp(sum_d x[b][d] * w[u][d] (+ bias[u])).
 *
 * Each sum runs over the depth in order, one float32 rounding per product and per addition, and the bias comes
 * last (bias + total, so a NaN bias wins as in the reference); `bias` is 0 (NULL) for a model without one.
 */
#include "mn_f32.h"

enum { OUT, IN, WEIGHTS, BIAS, BATCHES, DEPTH, UNITS, ACT_MIN, ACT_MAX };

void mn_fully_connected_f32(const mn_word *args) {
    float *out = MN_P(float, OUT);
    const float *in = MN_P(const float, IN), *weights = MN_P(const float, WEIGHTS), *bias = MN_P(const float, BIAS);
    const int batches = MN_I(BATCHES), depth = MN_I(DEPTH), units = MN_I(UNITS);
    const float lo = mn_f32_arg(args, ACT_MIN), hi = mn_f32_arg(args, ACT_MAX);

    for (int b = 0; b < batches; b++) {
        const float *x = in + (size_t)b * depth;
        float *o = out + (size_t)b * units;
        for (int u = 0; u < units; u++) {
            const float *w = weights + (size_t)u * depth;
            float total = 0.0f;
            for (int d = 0; d < depth; d++) total = mn_f32_mac(total, x[d], w[d]);
            if (bias) total = bias[u] + total;
            o[u] = mn_f32_clamp(total, lo, hi);
        }
    }
}
