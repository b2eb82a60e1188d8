/* DEPTHWISE_CONV_2D, int16x8: the host port (x86-64 with AVX2) of kernels/depthwise_conv_2d_s16.c, same symbol,
 * same argument words.
 *
 * Depth multiplier 1, sums proven to fit int32 (`wide` = 0): 8 channels per vector, the weights widened once per
 * call site to int32 (tap-major, channels padded to whole vectors), each valid tap one widening load of 8 int16
 * inputs, one mullo and one add (exact: |x * w| <= 2^22 and the lowering bounded the sum); a channel tail
 * shorter than 8 is read through a zero-padded copy. Windows cut by the padding skip their outside taps, as the
 * reference (zero points ignored). The output stage is mn_host_q15.h's; each pixel is finished in a buffer before
 * it is stored (the output may overlap the input). Other shapes run the portable kernel.
 */
#define mn_depthwise_conv_2d_s16 mn_depthwise_conv_2d_s16_portable
#include "depthwise_conv_2d_s16.portable.inc"
#undef mn_depthwise_conv_2d_s16
#include "mn_host_q15.h"

#if defined(MNH_AVX2)
typedef struct {
    int cp;         /* channels padded to 8 */
    int32_t *w;     /* (fh * fw) taps x cp int32 */
    int16_t *wp;    /* per pair of taps and 16 channels: the two taps' weights interleaved as unpacklo, unpackhi */
    int16_t *zero;  /* zeros standing for the inputs of cut taps */
    mnh_q15 q15;
    int16_t *pix;   /* one output pixel (cp) */
} dw_pack;

static dw_pack *dw_prepare(const mn_word *args) {
    mnh_slot *slot;
    dw_pack *p = (dw_pack *)mnh_lookup(args, &slot);
    if (p) return p;
    const int c = MN_I(IN_C), taps = MN_I(F_H) * MN_I(F_W), cp = (c + 7) / 8 * 8;
    const int8_t *filter = MN_P(const int8_t, FILTER);
    p = (dw_pack *)mnh_alloc(sizeof(dw_pack));
    int64_t *bound = (int64_t *)mnh_alloc((size_t)c * sizeof(int64_t));
    if (!p || !bound) return NULL;
    p->cp = cp;
    p->w = (int32_t *)mnh_alloc((size_t)taps * cp * sizeof(int32_t));
    p->pix = (int16_t *)mnh_alloc((size_t)cp * sizeof(int16_t));
    const int pairs = (taps + 1) / 2, c16 = c / 16;
    p->wp = (int16_t *)mnh_alloc((size_t)pairs * (c16 > 0 ? c16 : 1) * 32 * sizeof(int16_t));
    p->zero = (int16_t *)mnh_alloc((size_t)(c + 16) * sizeof(int16_t));
    if (!p->w || !p->pix || !p->wp || !p->zero) return NULL;
    for (int t = 0; t < 2 * pairs; t += 2)
        for (int k = 0; k < c16; k++) {
            int16_t a[16], b[16];
            for (int i = 0; i < 16; i++) {
                a[i] = filter[(size_t)t * c + 16 * k + i];
                b[i] = t + 1 < taps ? filter[(size_t)(t + 1) * c + 16 * k + i] : 0;
            }
            const __m256i va = _mm256_loadu_si256((const __m256i *)a), vb = _mm256_loadu_si256((const __m256i *)b);
            int16_t *d = p->wp + ((size_t)(t / 2) * c16 + k) * 32;
            _mm256_storeu_si256((__m256i *)d, _mm256_unpacklo_epi16(va, vb));
            _mm256_storeu_si256((__m256i *)(d + 16), _mm256_unpackhi_epi16(va, vb));
        }
    for (int t = 0; t < taps; t++)
        for (int ch = 0; ch < c; ch++) {
            const int8_t v = filter[(size_t)t * c + ch];
            p->w[(size_t)t * cp + ch] = v;
            bound[ch] += 32768 * (int64_t)abs(v);
        }
    if (!mnh_q15_init(&p->q15, MN_P(const int64_t, BIAS), MN_P(const int32_t, MULT), MN_P(const int32_t, SHIFT), bound,
                      c))
        return NULL;
    free(bound);
    mnh_keep(slot, args, p);
    return p;
}

void mn_depthwise_conv_2d_s16(const mn_word *args) {
    if (MN_I(WIDE) || MN_I(DEPTH_MULT) != 1) {
        mn_depthwise_conv_2d_s16_portable(args);
        return;
    }
    dw_pack *p = dw_prepare(args);
    if (!p || !p->q15.vec) {
        mn_depthwise_conv_2d_s16_portable(args);
        return;
    }
    int16_t *out = MN_P(int16_t, OUT);
    const int16_t *in = MN_P(const int16_t, IN);
    const int n = MN_I(N), in_h = MN_I(IN_H), in_w = MN_I(IN_W), c = MN_I(IN_C);
    const int out_h = MN_I(OUT_H), out_w = MN_I(OUT_W);
    const int fh = MN_I(F_H), fw = MN_I(F_W), sh = MN_I(S_H), sw = MN_I(S_W), dh = MN_I(D_H), dw = MN_I(D_W);
    const int pad_t = MN_I(PAD_T), pad_l = MN_I(PAD_L), cp = p->cp;
    const __m256i zero = _mm256_setzero_si256(), lo = _mm256_set1_epi32(MN_I(ACT_MIN));
    const __m256i hi = _mm256_set1_epi32(MN_I(ACT_MAX));
    const int taps = fh * fw, c16 = c / 16;
    const int16_t *tap[taps + 1];

    for (int b = 0; b < n; b++) {
        const int16_t *image = in + (size_t)b * in_h * in_w * c;
        for (int oy = 0; oy < out_h; oy++) {
            const int iy0 = oy * sh - pad_t;
            int fy0, fy1;
            mn_valid_taps(iy0, dh, in_h, fh, &fy0, &fy1);
            for (int ox = 0; ox < out_w; ox++) {
                const int ix0 = ox * sw - pad_l;
                int fx0, fx1;
                mn_valid_taps(ix0, dw, in_w, fw, &fx0, &fx1);
                /* every tap's input pixel, the zeros where the padding cuts it (a pair's second of an odd count
                 * too: its weights are 0) */
                for (int fy = 0, t = 0; fy < fh; fy++)
                    for (int fx = 0; fx < fw; fx++, t++) {
                        const int iy = iy0 + fy * dh, ix = ix0 + fx * dw;
                        tap[t] = fy < fy0 || fy >= fy1 || fx < fx0 || fx >= fx1 ? p->zero
                                 : image + ((size_t)iy * in_w + ix) * c;
                    }
                tap[taps] = p->zero;
                int c0 = 0;
                for (; c0 + 16 <= c; c0 += 16) {
                    __m256i a0 = zero, a1 = zero;
                    const int16_t *w = p->wp + (size_t)(c0 / 16) * 32;
                    for (int t = 0; t < taps; t += 2, w += (size_t)c16 * 32) {
                        const __m256i x0 = _mm256_loadu_si256((const __m256i *)(tap[t] + c0));
                        const __m256i x1 = _mm256_loadu_si256((const __m256i *)(tap[t + 1] + c0));
                        a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(_mm256_unpacklo_epi16(x0, x1),
                                                                     _mm256_loadu_si256((const __m256i *)w)));
                        a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(_mm256_unpackhi_epi16(x0, x1),
                                                                     _mm256_loadu_si256((const __m256i *)(w + 16))));
                    }
                    /* a0: channels 0-3 and 8-11, a1: 4-7 and 12-15 */
                    const __m256i first = _mm256_permute2x128_si256(a0, a1, 0x20);
                    const __m256i second = _mm256_permute2x128_si256(a0, a1, 0x31);
                    mnh_store16(p->pix + c0, mnh_q15_8(&p->q15, c0, first, zero, lo, hi), 8);
                    mnh_store16(p->pix + c0 + 8, mnh_q15_8(&p->q15, c0 + 8, second, zero, lo, hi), 8);
                }
                for (; c0 < c; c0 += 8) {
                    const int m = c - c0 < 8 ? c - c0 : 8;
                    __m256i a = zero;
                    for (int fy = fy0; fy < fy1; fy++) {
                        const int16_t *xr = image + ((size_t)(iy0 + fy * dh) * in_w + ix0) * c + c0;
                        const int32_t *wr = p->w + (size_t)fy * fw * cp + c0;
                        for (int fx = fx0; fx < fx1; fx++) {
                            const int16_t *x = xr + (size_t)fx * dw * c;
                            __m128i xv;
                            if (m == 8) {
                                xv = _mm_loadu_si128((const __m128i *)x);
                            } else {
                                int16_t tmp[8] = {0};
                                memcpy(tmp, x, (size_t)m * sizeof(int16_t));
                                xv = _mm_loadu_si128((const __m128i *)tmp);
                            }
                            a = _mm256_add_epi32(a, _mm256_mullo_epi32(_mm256_cvtepi16_epi32(xv), _mm256_loadu_si256(
                                                                           (const __m256i *)(wr + (size_t)fx * cp))));
                        }
                    }
                    mnh_store16(p->pix + c0, mnh_q15_8(&p->q15, c0, a, zero, lo, hi), 8);
                }
                memcpy(out + (((size_t)b * out_h + oy) * out_w + ox) * c, p->pix, (size_t)c * sizeof(int16_t));
            }
        }
    }
}
#else
void mn_depthwise_conv_2d_s16(const mn_word *args) { mn_depthwise_conv_2d_s16_portable(args); }
#endif
