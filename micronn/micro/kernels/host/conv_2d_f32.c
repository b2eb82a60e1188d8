/* CONV_2D, float32: the host port (x86-64 with AVX2) of kernels/conv_2d_f32.c, same symbol, same argument words;
 * ungrouped filters (grouped ones run the portable kernel).
 *
 * Vectorized across output channels, never across a sum: each lane is one output channel's total, which adds its
 * taps in the portable kernel's order (filter_y, filter_x, in_channel; taps in the padding skipped), each product
 * rounded before its addition (no FMA), then the bias, then the clamp. Per output pixel, 32 (then 8) channels
 * at a time, the filter repacked once per call site as [channel block][tap][8 channels] (mn_host.h's cache).
 */
#define mn_conv_2d_f32 mn_conv_2d_f32_portable
#include "conv_2d_f32.portable.inc"
#undef mn_conv_2d_f32
#include "mn_host.h"

#if defined(MNH_AVX2)
typedef struct {
    float *w;    /* [out_c / 8 blocks][fh * fw * fc][8], zero past the last channel */
    float *bias; /* padded to whole blocks (0 without a bias) */
} fconv_pack;

static const fconv_pack *fconv_prepare(const mn_word *args) {
    mnh_slot *slot;
    fconv_pack *p = (fconv_pack *)mnh_lookup(args, &slot);
    if (p) return p;
    const int out_c = MN_I(OUT_C), k = MN_I(F_H) * MN_I(F_W) * MN_I(F_C), blocks = mnh_blocks8(out_c);
    const float *filter = MN_P(const float, FILTER), *bias = MN_P(const float, BIAS);
    p = (fconv_pack *)mnh_alloc(sizeof(fconv_pack));
    if (!p) return NULL;
    p->w = (float *)mnh_alloc((size_t)blocks * k * 8 * sizeof(float));
    p->bias = (float *)mnh_alloc((size_t)blocks * 8 * sizeof(float));
    if (!p->w || !p->bias) return NULL;
    for (int oc = 0; oc < out_c; oc++) {
        for (int i = 0; i < k; i++) p->w[((size_t)(oc / 8) * k + i) * 8 + oc % 8] = filter[(size_t)oc * k + i];
        if (bias) p->bias[oc] = bias[oc];
    }
    mnh_keep(slot, args, p);
    return p;
}

/* clamp(x, lo, hi) as mn_f32_clamp: NaN passes through */
static inline __m256 fclamp(__m256 x, __m256 lo, __m256 hi) {
    x = _mm256_blendv_ps(x, lo, _mm256_cmp_ps(x, lo, _CMP_LT_OQ));
    return _mm256_blendv_ps(x, hi, _mm256_cmp_ps(hi, x, _CMP_LT_OQ));
}

void mn_conv_2d_f32(const mn_word *args) {
    const fconv_pack *p = MN_I(IN_C) == MN_I(F_C) ? fconv_prepare(args) : NULL;
    if (!p) { mn_conv_2d_f32_portable(args); return; }
    float *out = MN_P(float, OUT);
    const float *in = MN_P(const float, IN);
    const int has_bias = MN_P(const float, BIAS) != NULL;
    const int n = MN_I(N), in_h = MN_I(IN_H), in_w = MN_I(IN_W), in_c = MN_I(IN_C);
    const int out_h = MN_I(OUT_H), out_w = MN_I(OUT_W), out_c = MN_I(OUT_C);
    const int fh = MN_I(F_H), fw = MN_I(F_W), sh = MN_I(S_H), sw = MN_I(S_W);
    const int dh = MN_I(D_H), dw = MN_I(D_W), pad_t = MN_I(PAD_T), pad_l = MN_I(PAD_L), stage = MN_I(STAGE);
    const __m256 lo = _mm256_set1_ps(mn_f32_arg(args, ACT_MIN)), hi = _mm256_set1_ps(mn_f32_arg(args, ACT_MAX));
    const int k = fh * fw * in_c, blocks = mnh_blocks8(out_c);
    float staged[stage ? out_c : 1], tail[8];

    for (int b = 0; b < n; b++) {
        const float *image = in + (size_t)b * in_h * in_w * in_c;
        for (int oy = 0; oy < out_h; oy++) {
            const int iy0 = oy * sh - pad_t;
            int fy0, fy1;
            mn_f32_taps(iy0, dh, in_h, fh, &fy0, &fy1);
            for (int ox = 0; ox < out_w; ox++) {
                const int ix0 = ox * sw - pad_l;
                int fx0, fx1;
                mn_f32_taps(ix0, dw, in_w, fw, &fx0, &fx1);
                float *o = stage ? staged : out + (((size_t)b * out_h + oy) * out_w + ox) * out_c;
                for (int bl = 0; bl < blocks;) {
                    const int four = bl + 4 <= blocks;
                    const float *w0 = p->w + (size_t)bl * k * 8, *w1 = w0 + (size_t)k * 8;
                    const float *w2 = w1 + (size_t)k * 8, *w3 = w2 + (size_t)k * 8;
                    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
                    for (int fy = fy0; fy < fy1; fy++) {
                        const float *x_row = image + (size_t)(iy0 + fy * dh) * in_w * in_c;
                        for (int fx = fx0; fx < fx1; fx++) {
                            const float *x = x_row + (ix0 + fx * dw) * in_c;
                            const size_t t = ((size_t)fy * fw + fx) * in_c * 8;
                            if (four) {
                                for (int c = 0; c < in_c; c++) {
                                    const __m256 v = _mm256_broadcast_ss(x + c);
                                    const size_t i = t + (size_t)c * 8;
                                    a0 = _mm256_add_ps(a0, _mm256_mul_ps(v, _mm256_loadu_ps(w0 + i)));
                                    a1 = _mm256_add_ps(a1, _mm256_mul_ps(v, _mm256_loadu_ps(w1 + i)));
                                    a2 = _mm256_add_ps(a2, _mm256_mul_ps(v, _mm256_loadu_ps(w2 + i)));
                                    a3 = _mm256_add_ps(a3, _mm256_mul_ps(v, _mm256_loadu_ps(w3 + i)));
                                }
                            } else {
                                for (int c = 0; c < in_c; c++)
                                    a0 = _mm256_add_ps(a0, _mm256_mul_ps(_mm256_broadcast_ss(x + c),
                                                                         _mm256_loadu_ps(w0 + t + (size_t)c * 8)));
                            }
                        }
                    }
                    __m256 acc[4] = {a0, a1, a2, a3};
                    for (int j = 0; j < (four ? 4 : 1); j++, bl++) {
                        __m256 y = acc[j];
                        if (has_bias) y = _mm256_add_ps(y, _mm256_loadu_ps(p->bias + bl * 8));
                        y = fclamp(y, lo, hi);
                        const int c = bl * 8;
                        if (c + 8 <= out_c) {
                            _mm256_storeu_ps(o + c, y);
                        } else {
                            _mm256_storeu_ps(tail, y);
                            for (int i = 0; c + i < out_c; i++) o[c + i] = tail[i];
                        }
                    }
                }
                if (stage) memcpy(out + (((size_t)b * out_h + oy) * out_w + ox) * out_c, staged, sizeof(float) * out_c);
            }
        }
    }
}
#else
void mn_conv_2d_f32(const mn_word *args) { mn_conv_2d_f32_portable(args); }
#endif
