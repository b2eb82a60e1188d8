/* DEPTHWISE_CONV_2D, int8: the host port (x86-64 with AVX2) of kernels/depthwise_conv_2d.c, same symbol, same
 * argument words.
 *
 * Per output pixel, channels 16 (then 8) at a time, taps two at a time: the two taps' int8 inputs widened to
 * int16 and interleaved, so one madd per 8 channels adds both taps' products; the weights are interleaved the
 * same way once per call site (mn_host.h's cache). Taps outside the input read a row holding the input zero
 * point, so every window starts from `bias_full` (bias - zp * sum(w): a padded tap's zp * w is taken back and the
 * wrapping sums equal the portable kernel's valid-taps sums bit for bit). Channels past the last 8 are summed
 * one by one the same way. A depth multiplier above 1 first expands each image to one input channel per output
 * channel (channel c repeated `mult` times), which is then a depthwise convolution of multiplier 1.
 */
#define mn_depthwise_conv_2d_s8 mn_depthwise_conv_2d_s8_portable
#include "depthwise_conv_2d.portable.inc"
#undef mn_depthwise_conv_2d_s8
#include "mn_host.h"

#if defined(MNH_AVX2)
enum { MAX_TAPS = 256 };

typedef struct {
    int pairs;     /* taps rounded up to even, halved (a last odd tap pairs with a zero weight) */
    int16_t *w;    /* per 16-channel block and tap pair: 2 x 16 int16 (x16 path); then per pair 16 (x8 path) */
    int32_t *bias; /* bias_full, padded */
    mnh_rq rq;
    int8_t *pad;   /* out_c bytes of the input zero point */
    int8_t *wide;  /* depth multiplier > 1: one image with each input channel repeated per output channel */
} dw_pack;

/* Taps t0, t1 of 16 channels, widened and interleaved: lanes 0-3 / 8-11 of lo and 4-7 / 12-15 of hi. */
static inline void interleave16(const int8_t *a, const int8_t *b, __m256i *lo, __m256i *hi) {
    const __m256i xa = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)a));
    const __m256i xb = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)b));
    *lo = _mm256_unpacklo_epi16(xa, xb), *hi = _mm256_unpackhi_epi16(xa, xb);
}

/* Taps t0, t1 of 8 channels, widened and interleaved, channels in order. */
static inline __m256i interleave8(const int8_t *a, const int8_t *b) {
    const __m128i xa = _mm_cvtepi8_epi16(_mm_loadl_epi64((const __m128i *)a));
    const __m128i xb = _mm_cvtepi8_epi16(_mm_loadl_epi64((const __m128i *)b));
    return _mm256_set_m128i(_mm_unpackhi_epi16(xa, xb), _mm_unpacklo_epi16(xa, xb));
}

static const dw_pack *dw_prepare(const mn_word *args) {
    mnh_slot *slot;
    dw_pack *p = (dw_pack *)mnh_lookup(args, &slot);
    if (p) return p;
    const int mult = MN_I(DEPTH_MULT), in_c = MN_I(IN_C) * mult; /* the channels of the image convolved */
    const int taps = MN_I(F_H) * MN_I(F_W), pairs = (taps + 1) / 2, c16 = in_c / 16;
    const int8_t *filter = MN_P(const int8_t, FILTER);
    p = (dw_pack *)mnh_alloc(sizeof(dw_pack));
    if (!p) return NULL;
    p->pairs = pairs;
    p->w = (int16_t *)mnh_alloc(((size_t)c16 * pairs * 32 + (size_t)pairs * 16) * sizeof(int16_t));
    p->bias = (int32_t *)mnh_alloc(((size_t)in_c + 16) * sizeof(int32_t));
    p->pad = (int8_t *)mnh_alloc((size_t)in_c + 16);
    if (mult > 1 && !(p->wide = (int8_t *)mnh_alloc((size_t)MN_I(IN_H) * MN_I(IN_W) * in_c + 16))) return NULL;
    int32_t *shift = (int32_t *)mnh_alloc((size_t)in_c * sizeof(int32_t)); /* the call's int8 shifts, widened */
    if (!p->w || !p->bias || !p->pad || !shift) return NULL;
    for (int c = 0; c < in_c; c++) shift[c] = MN_P(const int8_t, SHIFT)[c];
    if (!mnh_rq_init(&p->rq, MN_P(const int32_t, MULT), shift, in_c, 16)) return NULL;
    free(shift);
    memcpy(p->bias, MN_P(const int32_t, BIAS_FULL), (size_t)in_c * sizeof(int32_t));
    memset(p->pad, -MN_I(IN_OFF), (size_t)in_c);
    int8_t ta[16], tb[16];
    int16_t *d = p->w;
    for (int c = 0; c + 8 <= in_c; c += c + 16 <= in_c ? 16 : 8) {
        const int width = c + 16 <= in_c ? 16 : 8;
        for (int q = 0; q < pairs; q++) {
            memset(ta, 0, 16), memset(tb, 0, 16);
            memcpy(ta, filter + (size_t)(2 * q) * in_c + c, (size_t)width);
            if (2 * q + 1 < taps) memcpy(tb, filter + (size_t)(2 * q + 1) * in_c + c, (size_t)width);
            if (width == 16) {
                __m256i lo, hi;
                interleave16(ta, tb, &lo, &hi);
                _mm256_storeu_si256((__m256i *)d, lo), _mm256_storeu_si256((__m256i *)(d + 16), hi);
                d += 32;
            } else {
                _mm256_storeu_si256((__m256i *)d, interleave8(ta, tb));
                d += 16;
            }
        }
        if (width == 8) break;
    }
    mnh_keep(slot, args, p);
    return p;
}

void mn_depthwise_conv_2d_s8(const mn_word *args) {
    const int mult = MN_I(DEPTH_MULT), in_c = MN_I(IN_C) * mult, taps = MN_I(F_H) * MN_I(F_W);
    const dw_pack *p = mult >= 1 && taps <= MAX_TAPS ? dw_prepare(args) : NULL;
    if (!p) { mn_depthwise_conv_2d_s8_portable(args); return; }
    int8_t *out = MN_P(int8_t, OUT);
    const int8_t *in = MN_P(const int8_t, IN), *filter = MN_P(const int8_t, FILTER);
    const int n = MN_I(N), in_h = MN_I(IN_H), in_w = MN_I(IN_W), out_h = MN_I(OUT_H), out_w = MN_I(OUT_W);
    const int fh = MN_I(F_H), fw = MN_I(F_W), sh = MN_I(S_H), sw = MN_I(S_W), dh = MN_I(D_H), dw = MN_I(D_W);
    const int pad_t = MN_I(PAD_T), pad_l = MN_I(PAD_L), stage = MN_I(STAGE), pairs = p->pairs;
    const int32_t out_zp = MN_I(OUT_ZP), lo = MN_I(ACT_MIN), hi = MN_I(ACT_MAX);
    const int c16 = in_c / 16 * 16;
    const int8_t *x[MAX_TAPS + 1];
    int8_t staged[stage ? in_c : 1];

    for (int b = 0; b < n; b++) {
        const int8_t *image = in + (size_t)b * in_h * in_w * MN_I(IN_C);
        if (mult > 1) { /* every input read before any output is stored */
            const int8_t *src = image;
            int8_t *dst = p->wide;
            for (int i = 0; i < in_h * in_w * MN_I(IN_C); i++, dst += mult) {
                if (mult >= 8) { /* 8 bytes at a time; a last partial word spills into the next channel's bytes */
                    const uint64_t v = (uint8_t)src[i] * 0x0101010101010101ull;
                    for (int m = 0; m < mult; m += 8) memcpy(dst + m, &v, 8);
                } else {
                    for (int m = 0; m < mult; m++) dst[m] = src[i];
                }
            }
            image = p->wide;
        }
        for (int oy = 0; oy < out_h; oy++)
            for (int ox = 0; ox < out_w; ox++) {
                const int iy0 = oy * sh - pad_t, ix0 = ox * sw - pad_l;
                if (iy0 >= 0 && iy0 + (fh - 1) * dh < in_h && ix0 >= 0 && ix0 + (fw - 1) * dw < in_w) {
                    for (int fy = 0, t = 0; fy < fh; fy++) {
                        const int8_t *r = image + ((size_t)(iy0 + fy * dh) * in_w + ix0) * in_c;
                        for (int fx = 0; fx < fw; fx++, t++) x[t] = r + (size_t)fx * dw * in_c;
                    }
                } else {
                    for (int fy = 0, t = 0; fy < fh; fy++)
                        for (int fx = 0; fx < fw; fx++, t++) {
                            const int iy = iy0 + fy * dh, ix = ix0 + fx * dw;
                            x[t] = iy < 0 || iy >= in_h || ix < 0 || ix >= in_w ? p->pad
                                                                                : image + ((size_t)iy * in_w + ix) * in_c;
                        }
                }
                x[taps] = p->pad; /* an odd last tap's partner (its weights are 0) */
                int8_t *o = stage ? staged : out + (((size_t)b * out_h + oy) * out_w + ox) * in_c;
                const int16_t *w = p->w;
                int c = 0;
                for (; c < c16; c += 16) {
                    __m256i a_lo = _mm256_setzero_si256(), a_hi = _mm256_setzero_si256();
                    for (int q = 0; q < pairs; q++, w += 32) {
                        __m256i v_lo, v_hi;
                        interleave16(x[2 * q] + c, x[2 * q + 1] + c, &v_lo, &v_hi);
                        a_lo = _mm256_add_epi32(a_lo, _mm256_madd_epi16(v_lo, _mm256_loadu_si256((const __m256i *)w)));
                        a_hi = _mm256_add_epi32(a_hi, _mm256_madd_epi16(v_hi,
                                                                        _mm256_loadu_si256((const __m256i *)(w + 16))));
                    }
                    const __m256i s0 = _mm256_permute2x128_si256(a_lo, a_hi, 0x20);
                    const __m256i s1 = _mm256_permute2x128_si256(a_lo, a_hi, 0x31);
                    mnh_store8(o + c, 8, _mm256_add_epi32(s0, _mm256_loadu_si256((const __m256i *)(p->bias + c))),
                               &p->rq, c, out_zp, lo, hi);
                    mnh_store8(o + c + 8, 8, _mm256_add_epi32(s1, _mm256_loadu_si256((const __m256i *)(p->bias + c + 8))),
                               &p->rq, c + 8, out_zp, lo, hi);
                }
                if (c + 8 <= in_c) {
                    __m256i a = _mm256_loadu_si256((const __m256i *)(p->bias + c));
                    for (int q = 0; q < pairs; q++, w += 16)
                        a = _mm256_add_epi32(a, _mm256_madd_epi16(interleave8(x[2 * q] + c, x[2 * q + 1] + c),
                                                                  _mm256_loadu_si256((const __m256i *)w)));
                    mnh_store8(o + c, 8, a, &p->rq, c, out_zp, lo, hi);
                    c += 8;
                }
                for (; c < in_c; c++) {
                    uint32_t a = (uint32_t)p->bias[c];
                    for (int t = 0; t < taps; t++) a += (uint32_t)(x[t][c] * filter[(size_t)t * in_c + c]);
                    o[c] = mn_requant_s8((int32_t)a, p->rq.mult[c], p->rq.shift[c], out_zp, lo, hi);
                }
                if (stage) memcpy(out + (((size_t)b * out_h + oy) * out_w + ox) * in_c, staged, (size_t)in_c);
            }
    }
}
#else
void mn_depthwise_conv_2d_s8(const mn_word *args) { mn_depthwise_conv_2d_s8_portable(args); }
#endif
