/* CONV_2D, int16x8: the host port (x86-64 with AVX2) of kernels/conv_2d_s16.c, same symbol, same argument words.
 *
 * Per call site the filters (out_c rows of fh * fw * fc int8) are repacked as int16 pairs, 8 output channels per
 * vector (mn_host.h's layout). Per output pixel the window's inputs are one contiguous int16 row: the input pixel
 * itself for a 1x1 window on an even channel count, else a copy with zeros for the taps the padding cuts (the
 * 16x8 kernels ignore the zero points: a cut tap adds nothing). Each broadcast pair of inputs feeds up to 32
 * channels' sums with madds (exact: |x * w| <= 2^22); two pixels share each weight load. The sums are int32, exact
 * where the lowering proved it (`wide` = 0; else the portable kernel runs), then the output stage 8 channels at a
 * time (mn_host_q15.h, or the int8 kernels' 32-bit requantization for an int32 bias). Groups > 1 run the portable
 * kernel.
 */
#define mn_conv_2d_s16 mn_conv_2d_s16_portable
#include "conv_2d_s16.portable.inc"
#undef mn_conv_2d_s16
#include "mn_host_q15.h"

#if defined(MNH_AVX2)
typedef struct {
    int kp, blocks, direct;
    int16_t *w;     /* mnh_pack_rows8 of the filters */
    mnh_q15 q15;    /* the 64-bit output stage (requant32 = 0) */
    mnh_rq rq;      /* the 32-bit one (requant32 = 1) */
    int32_t *bias32; /* requant32: the bias wrapped to int32, per channel padded */
    int16_t *win;   /* two windows of 2 * kp int16 (+ 16 spare) */
} conv_pack;

static conv_pack *conv_prepare(const mn_word *args) {
    mnh_slot *slot;
    conv_pack *p = (conv_pack *)mnh_lookup(args, &slot);
    if (p) return p;
    const int out_c = MN_I(OUT_C), f_size = MN_I(F_H) * MN_I(F_W) * MN_I(F_C), kp = mnh_pairs(f_size);
    const int blocks = mnh_blocks8(out_c), requant32 = MN_I(REQUANT32);
    const int8_t *filter = MN_P(const int8_t, FILTER);
    const int64_t *bias = MN_P(const int64_t, BIAS);
    p = (conv_pack *)mnh_alloc(sizeof(conv_pack));
    int64_t *bound = (int64_t *)mnh_alloc((size_t)out_c * sizeof(int64_t));
    if (!p || !bound) return NULL;
    p->kp = kp, p->blocks = blocks;
    p->direct = MN_I(F_H) == 1 && MN_I(F_W) == 1 && MN_I(F_C) % 2 == 0 && MN_I(PAD_T) == 0 && MN_I(PAD_L) == 0;
    p->w = (int16_t *)mnh_alloc((size_t)blocks * kp * 16 * sizeof(int16_t));
    p->win = (int16_t *)mnh_alloc(((size_t)4 * kp + 32) * sizeof(int16_t));
    p->bias32 = (int32_t *)mnh_alloc((size_t)blocks * 8 * sizeof(int32_t));
    if (!p->w || !p->win || !p->bias32) return NULL;
    mnh_pack_rows8(p->w, filter, out_c, f_size, (size_t)f_size);
    for (int c = 0; c < out_c; c++) {
        int64_t s = 0;
        for (int i = 0; i < f_size; i++) s += abs(filter[(size_t)c * f_size + i]);
        bound[c] = 32768 * s;
        p->bias32[c] = (int32_t)(uint32_t)(uint64_t)bias[c];
    }
    if (requant32) {
        if (!mnh_rq_init(&p->rq, MN_P(const int32_t, MULT), MN_P(const int32_t, SHIFT), out_c, 8)) return NULL;
    } else if (!mnh_q15_init(&p->q15, bias, MN_P(const int32_t, MULT), MN_P(const int32_t, SHIFT), bound, out_c)) {
        return NULL;
    }
    free(bound);
    mnh_keep(slot, args, p);
    return p;
}

/* acc[k] (+)= sum over kp pairs of x . w for m (1..4) blocks, P (1 or 2) windows x0, x1 */
__attribute__((always_inline)) static inline void dots(__m256i *acc, const int16_t *x0, const int16_t *x1,
                                                       const int16_t *w, int kp, const int m, const int P) {
    for (int k = 0; k < P * m; k++) acc[k] = _mm256_setzero_si256();
    const int32_t *a0 = (const int32_t *)x0, *a1 = (const int32_t *)x1;
    for (int j = 0; j < kp; j++) {
        const __m256i v0 = _mm256_set1_epi32(a0[j]);
        const __m256i v1 = P == 2 ? _mm256_set1_epi32(a1[j]) : v0;
        for (int k = 0; k < m; k++) {
            const __m256i wv = _mm256_loadu_si256((const __m256i *)(w + ((size_t)k * kp + j) * 16));
            acc[k] = _mm256_add_epi32(acc[k], _mm256_madd_epi16(v0, wv));
            if (P == 2) acc[m + k] = _mm256_add_epi32(acc[m + k], _mm256_madd_epi16(v1, wv));
        }
    }
}

/* the window of output pixel (oy, ox) of `image` as one int16 row, or NULL where the pixel is the window */
static const int16_t *window(const conv_pack *p, int16_t *buf, const int16_t *image, const mn_word *args, int oy,
                             int ox) {
    const int in_h = MN_I(IN_H), in_w = MN_I(IN_W), in_c = MN_I(IN_C), fh = MN_I(F_H), fw = MN_I(F_W);
    const int iy0 = oy * MN_I(S_H) - MN_I(PAD_T), ix0 = ox * MN_I(S_W) - MN_I(PAD_L), dh = MN_I(D_H), dw = MN_I(D_W);
    if (p->direct) return image + ((size_t)iy0 * in_w + ix0) * in_c;
    int16_t *d = buf;
    const size_t px = (size_t)in_c * sizeof(int16_t);
    for (int fy = 0; fy < fh; fy++) {
        const int iy = iy0 + fy * dh;
        if (iy < 0 || iy >= in_h) {
            memset(d, 0, px * fw);
            d += (size_t)fw * in_c;
            continue;
        }
        const int16_t *row = image + (size_t)iy * in_w * in_c;
        if (dw == 1) { /* one run of inputs, its ends cut by the padding */
            const int a = ix0 < 0 ? -ix0 : 0, e = ix0 + fw > in_w ? in_w - ix0 : fw;
            if (a >= e) {
                memset(d, 0, px * fw);
            } else {
                if (a > 0) memset(d, 0, px * a);
                memcpy(d + (size_t)a * in_c, row + (size_t)(ix0 + a) * in_c, px * (e - a));
                if (e < fw) memset(d + (size_t)e * in_c, 0, px * (fw - e));
            }
            d += (size_t)fw * in_c;
            continue;
        }
        for (int fx = 0; fx < fw; fx++, d += in_c) {
            const int ix = ix0 + fx * dw;
            if (ix < 0 || ix >= in_w) memset(d, 0, px);
            else memcpy(d, row + (size_t)ix * in_c, px);
        }
    }
    if ((d - buf) & 1) *d = 0;
    return buf;
}

static inline void finish(const conv_pack *p, const mn_word *args, int b, __m256i acc, int16_t *o) {
    const int32_t lo = MN_I(ACT_MIN), hi = MN_I(ACT_MAX);
    __m256i y;
    if (MN_I(REQUANT32)) {
        const __m256i a = _mm256_add_epi32(acc, _mm256_loadu_si256((const __m256i *)(p->bias32 + 8 * b)));
        if (p->rq.vec) {
            y = mnh_requant8(a, p->rq.mult + 8 * b, p->rq.left + 8 * b, p->rq.right + 8 * b, _mm256_setzero_si256(),
                             _mm256_set1_epi32(lo), _mm256_set1_epi32(hi));
        } else {
            int32_t t[8];
            _mm256_storeu_si256((__m256i *)t, a);
            for (int i = 0; i < 8; i++) t[i] = mn_clamp(mn_mbqm(t[i], p->rq.mult[8 * b + i], p->rq.shift[8 * b + i]),
                                                        lo, hi);
            y = _mm256_loadu_si256((const __m256i *)t);
        }
    } else if (p->q15.vec) {
        y = mnh_q15_8(&p->q15, 8 * b, acc, _mm256_setzero_si256(), _mm256_set1_epi32(lo), _mm256_set1_epi32(hi));
    } else {
        const int64_t *bias = MN_P(const int64_t, BIAS);
        const int32_t *mult = MN_P(const int32_t, MULT), *shift = MN_P(const int32_t, SHIFT);
        const int out_c = MN_I(OUT_C);
        int32_t t[8];
        _mm256_storeu_si256((__m256i *)t, acc);
        for (int i = 0; i < 8 && 8 * b + i < out_c; i++) {
            const int c = 8 * b + i;
            t[i] = output((uint64_t)(int64_t)t[i], bias[c], mult[c], shift[c], 0, lo, hi);
        }
        y = _mm256_loadu_si256((const __m256i *)t);
    }
    mnh_store16(o, y, 8);
}

/* P (1 or 2) pixels' out_c channels into o0, o1 (padded to whole blocks) */
__attribute__((always_inline)) static inline void pixels(const conv_pack *p, const mn_word *args, const int16_t *x0,
                                                         const int16_t *x1, int16_t *o0, int16_t *o1, const int P) {
    for (int b0 = 0; b0 < p->blocks; b0 += 4) {
        const int m = p->blocks - b0 < 4 ? p->blocks - b0 : 4;
        __m256i acc[8];
        const int16_t *w = p->w + (size_t)b0 * p->kp * 16;
        switch (m) {
        case 1: dots(acc, x0, x1, w, p->kp, 1, P); break;
        case 2: dots(acc, x0, x1, w, p->kp, 2, P); break;
        case 3: dots(acc, x0, x1, w, p->kp, 3, P); break;
        default: dots(acc, x0, x1, w, p->kp, 4, P); break;
        }
        for (int k = 0; k < m; k++) {
            finish(p, args, b0 + k, acc[k], o0 + 8 * (b0 + k));
            if (P == 2) finish(p, args, b0 + k, acc[m + k], o1 + 8 * (b0 + k));
        }
    }
}

void mn_conv_2d_s16(const mn_word *args) {
    if (MN_I(WIDE) || MN_I(IN_C) != MN_I(F_C)) {
        mn_conv_2d_s16_portable(args);
        return;
    }
    conv_pack *p = conv_prepare(args);
    if (!p) {
        mn_conv_2d_s16_portable(args);
        return;
    }
    int16_t *out = MN_P(int16_t, OUT);
    const int16_t *in = MN_P(const int16_t, IN);
    const int n = MN_I(N), in_h = MN_I(IN_H), in_w = MN_I(IN_W), in_c = MN_I(IN_C);
    const int out_h = MN_I(OUT_H), out_w = MN_I(OUT_W), out_c = MN_I(OUT_C), kp = p->kp;
    const size_t pix_bytes = (size_t)out_c * sizeof(int16_t);
    const int pad = p->blocks * 8;
    int16_t two[2 * pad]; /* two pixels' outputs, finished before they are stored (the output may overlap the input) */

    for (int b = 0; b < n; b++) {
        const int16_t *image = in + (size_t)b * in_h * in_w * in_c;
        int16_t *o = out + (size_t)b * out_h * out_w * out_c;
        const int pixels_n = out_h * out_w;
        int i = 0;
        for (; i + 2 <= pixels_n; i += 2) {
            const int16_t *x0 = window(p, p->win, image, args, i / out_w, i % out_w);
            const int16_t *x1 = window(p, p->win + 2 * kp + 16, image, args, (i + 1) / out_w, (i + 1) % out_w);
            pixels(p, args, x0, x1, two, two + pad, 2);
            memcpy(o + (size_t)i * out_c, two, pix_bytes);
            memcpy(o + (size_t)(i + 1) * out_c, two + pad, pix_bytes);
        }
        for (; i < pixels_n; i++) {
            const int16_t *x0 = window(p, p->win, image, args, i / out_w, i % out_w);
            pixels(p, args, x0, x0, two, two, 1);
            memcpy(o + (size_t)i * out_c, two, pix_bytes);
        }
    }
}
#else
void mn_conv_2d_s16(const mn_word *args) { mn_conv_2d_s16_portable(args); }
#endif
