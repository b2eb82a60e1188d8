/* DEPTHWISE_CONV_2D, float32: the host port (x86-64 with AVX2) of kernels/depthwise_conv_2d_f32.c, same symbol,
 * same argument words; depth multiplier 1 (others run the portable kernel).
 *
 * Vectorized across channels, never across a sum: each lane is one channel's total over the valid taps in the
 * portable kernel's order (filter_y, filter_x), each product rounded before its addition (no FMA), then
 * bias + total and the clamp. Channels past the last 8 are summed one at a time the same way.
 */
#define mn_depthwise_conv_2d_f32 mn_depthwise_conv_2d_f32_portable
#include "depthwise_conv_2d_f32.portable.inc"
#undef mn_depthwise_conv_2d_f32
#include "mn_host.h"

#if defined(MNH_AVX2)
void mn_depthwise_conv_2d_f32(const mn_word *args) {
    if (MN_I(MULT) != 1) { mn_depthwise_conv_2d_f32_portable(args); return; }
    float *out = MN_P(float, OUT);
    const float *in = MN_P(const float, IN), *filter = MN_P(const float, FILTER), *bias = MN_P(const float, BIAS);
    const int n = MN_I(N), in_h = MN_I(IN_H), in_w = MN_I(IN_W), c_n = MN_I(IN_C);
    const int out_h = MN_I(OUT_H), out_w = MN_I(OUT_W);
    const int fh = MN_I(F_H), fw = MN_I(F_W), sh = MN_I(S_H), sw = MN_I(S_W);
    const int dh = MN_I(D_H), dw = MN_I(D_W), pad_t = MN_I(PAD_T), pad_l = MN_I(PAD_L), stage = MN_I(STAGE);
    const float flo = mn_f32_arg(args, ACT_MIN), fhi = mn_f32_arg(args, ACT_MAX);
    const __m256 lo = _mm256_set1_ps(flo), hi = _mm256_set1_ps(fhi);
    float staged[stage ? c_n : 1];

    for (int b = 0; b < n; b++) {
        const float *image = in + (size_t)b * in_h * in_w * c_n;
        for (int oy = 0; oy < out_h; oy++) {
            const int iy0 = oy * sh - pad_t;
            int fy0, fy1;
            mn_f32_taps(iy0, dh, in_h, fh, &fy0, &fy1);
            for (int ox = 0; ox < out_w; ox++) {
                const int ix0 = ox * sw - pad_l;
                int fx0, fx1;
                mn_f32_taps(ix0, dw, in_w, fw, &fx0, &fx1);
                float *o = stage ? staged : out + (((size_t)b * out_h + oy) * out_w + ox) * c_n;
                int c = 0;
                for (; c + 8 <= c_n; c += 8) {
                    __m256 total = _mm256_setzero_ps();
                    for (int fy = fy0; fy < fy1; fy++) {
                        const float *x_row = image + (size_t)(iy0 + fy * dh) * in_w * c_n + c;
                        const float *w_row = filter + (size_t)fy * fw * c_n + c;
                        for (int fx = fx0; fx < fx1; fx++)
                            total = _mm256_add_ps(total, _mm256_mul_ps(_mm256_loadu_ps(x_row + (size_t)(ix0 + fx * dw) * c_n),
                                                                       _mm256_loadu_ps(w_row + (size_t)fx * c_n)));
                    }
                    if (bias) total = _mm256_add_ps(_mm256_loadu_ps(bias + c), total);
                    total = _mm256_blendv_ps(total, lo, _mm256_cmp_ps(total, lo, _CMP_LT_OQ));
                    total = _mm256_blendv_ps(total, hi, _mm256_cmp_ps(hi, total, _CMP_LT_OQ));
                    _mm256_storeu_ps(o + c, total);
                }
                for (; c < c_n; c++) {
                    float total = 0.0f;
                    for (int fy = fy0; fy < fy1; fy++) {
                        const float *x_row = image + (size_t)(iy0 + fy * dh) * in_w * c_n + c;
                        const float *w_row = filter + (size_t)fy * fw * c_n + c;
                        for (int fx = fx0; fx < fx1; fx++)
                            total = mn_f32_mac(total, x_row[(size_t)(ix0 + fx * dw) * c_n], w_row[(size_t)fx * c_n]);
                    }
                    if (bias) total = bias[c] + total;
                    o[c] = mn_f32_clamp(total, flo, fhi);
                }
                if (stage) memcpy(out + (((size_t)b * out_h + oy) * out_w + ox) * c_n, staged, sizeof(float) * c_n);
            }
        }
    }
}
#else
void mn_depthwise_conv_2d_f32(const mn_word *args) { mn_depthwise_conv_2d_f32_portable(args); }
#endif
