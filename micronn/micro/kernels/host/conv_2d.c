/* CONV_2D, int8: the host port (x86-64 with AVX2) of kernels/conv_2d.c, same symbol, same argument words.
 *
 * Ungrouped layers take the direct path (below): windows read in place from a zero-point-padded copy of the image
 * (widened to int16; with AVX-512 VNNI, uint8 x + 128 summed 4 taps a step by vpdpbusd), no im2col. Grouped ones, and
 * the direct path's refusals (a padded image over 16 MiB, requantization parameters the vector code does not take), run
 * a GEMM over im2col rows: per block of MR output pixels, each pixel's window is widened to int16 (taps outside the
 * input hold the input zero point, so every window starts from `bias_full`: a padded tap adds zp * w, which bias_full =
 * bias - zp * sum(w) takes back, the wrapping sums equal the portable kernel's valid-taps sums bit for bit), then each
 * block of 16 output channels sums (x[2j], x[2j+1]) . (w[2j], w[2j+1]) with one madd per 8 channels and pixel, the
 * weights repacked once (mn_host.h). Groups are GEMMs of their own. Without AVX2 (or out of memory) it is the portable
 * kernel, compiled below under another name.
 */
#define mn_conv_2d_s8 mn_conv_2d_s8_portable
#include "conv_2d.portable.inc"
#undef mn_conv_2d_s8
#include "mn_host.h"

#if defined(MNH_AVX2)
enum { MR = 4 }; /* output pixels per block */

typedef struct {
    int kp, blocks;  /* int16 pairs per window, 8-channel blocks per group */
    int16_t *w;      /* per group, mnh_pack_rows8 of its channels */
    int32_t *bias;   /* bias_full, per group padded to whole blocks */
    mnh_rq rq;       /* per group padded likewise */
    int16_t *rows;   /* MR im2col rows of 2 * kp int16 */
} conv_pack;

static const conv_pack *conv_prepare(const mn_word *args) {
    mnh_slot *slot;
    conv_pack *p = (conv_pack *)mnh_lookup(args, &slot);
    if (p) return p;
    const int in_c = MN_I(IN_C), out_c = MN_I(OUT_C), fc = MN_I(F_C), groups = in_c / fc, per_group = out_c / groups;
    const int k = MN_I(F_H) * MN_I(F_W) * fc, kp = mnh_pairs(k), blocks = mnh_blocks8(per_group);
    const size_t padded = (size_t)groups * blocks * 8;
    p = (conv_pack *)mnh_alloc(sizeof(conv_pack));
    if (!p) return NULL;
    p->kp = kp, p->blocks = blocks;
    p->w = (int16_t *)mnh_alloc(padded * kp * 2 * sizeof(int16_t));
    p->bias = (int32_t *)mnh_alloc(padded * sizeof(int32_t));
    p->rows = (int16_t *)mnh_alloc(((size_t)MR * 2 * kp + 16) * sizeof(int16_t)); /* 16: mnh_widen_over */
    int32_t *mult = (int32_t *)mnh_alloc(padded * sizeof(int32_t)), *shift = (int32_t *)mnh_alloc(padded * 4);
    if (!p->w || !p->bias || !p->rows || !mult || !shift) return NULL;
    const int8_t *filter = MN_P(const int8_t, FILTER);
    for (int g = 0; g < groups; g++) {
        mnh_pack_rows8(p->w + (size_t)g * blocks * kp * 16, filter + (size_t)g * per_group * k, per_group, k, k);
        for (int c = 0; c < per_group; c++) {
            const size_t i = (size_t)g * blocks * 8 + c, oc = (size_t)g * per_group + c;
            p->bias[i] = MN_P(const int32_t, BIAS_FULL)[oc];
            mult[i] = MN_P(const int32_t, MULT)[oc], shift[i] = MN_P(const int8_t, SHIFT)[oc]; /* int8 words */
        }
    }
    if (!mnh_rq_init(&p->rq, mult, shift, (int)padded, 8)) return NULL;
    free(mult), free(shift);
    mnh_keep(slot, args, p);
    return p;
}

/* The window of one output pixel in group g as 2 * kp int16 (zero point outside the input). */
typedef struct { int in_h, in_w, in_c, fh, fw, fc, dh, dw, k; int16_t zp; const int8_t *end; } conv_geom;

static inline void im2col(int16_t *row, const int8_t *image, const conv_geom *c, int iy0, int ix0, int g) {
    const int in_h = c->in_h, in_w = c->in_w, in_c = c->in_c, fh = c->fh, fw = c->fw, fc = c->fc, dh = c->dh;
    const int dw = c->dw, run = fw * fc;
    int16_t *d = row;
    const int8_t *x0 = image + g * fc;
    const int inside = dw == 1 && fc == in_c && ix0 >= 0 && ix0 + fw <= in_w; /* each row one contiguous run */
    for (int fy = 0; fy < fh; fy++, d += run) {
        const int iy = iy0 + fy * dh;
        if (iy < 0 || iy >= in_h) { mnh_fill16(d, c->zp, run); continue; }
        const int8_t *x_row = x0 + (size_t)iy * in_w * in_c;
        if (inside) { mnh_widen_over(d, x_row + (size_t)ix0 * in_c, run, c->end); continue; }
        for (int fx = 0; fx < fw; fx++) {
            const int ix = ix0 + fx * dw;
            if (ix < 0 || ix >= in_w) mnh_fill16(d + fx * fc, c->zp, fc);
            else mnh_widen_over(d + fx * fc, x_row + (size_t)ix * in_c, fc, c->end);
        }
    }
    if (c->k & 1) row[c->k] = 0;
}

/* MR pixels x 16 channels (two 8-channel blocks at w0, w1) over kp pairs. */
static inline void gemm16(const int16_t *rows, int kp, const int16_t *w0, const int16_t *w1, const int32_t *bias,
                          __m256i acc[MR][2]) {
    const int32_t *r0 = (const int32_t *)rows, *r1 = r0 + kp, *r2 = r1 + kp, *r3 = r2 + kp;
    const __m256i b0 = _mm256_loadu_si256((const __m256i *)bias), b1 = _mm256_loadu_si256((const __m256i *)(bias + 8));
    __m256i a00 = b0, a01 = b1, a10 = b0, a11 = b1, a20 = b0, a21 = b1, a30 = b0, a31 = b1;
    for (int j = 0; j < kp; j++) {
        const __m256i v0 = _mm256_loadu_si256((const __m256i *)(w0 + 16 * j));
        const __m256i v1 = _mm256_loadu_si256((const __m256i *)(w1 + 16 * j));
        __m256i x = _mm256_set1_epi32(r0[j]);
        a00 = _mm256_add_epi32(a00, _mm256_madd_epi16(x, v0)), a01 = _mm256_add_epi32(a01, _mm256_madd_epi16(x, v1));
        x = _mm256_set1_epi32(r1[j]);
        a10 = _mm256_add_epi32(a10, _mm256_madd_epi16(x, v0)), a11 = _mm256_add_epi32(a11, _mm256_madd_epi16(x, v1));
        x = _mm256_set1_epi32(r2[j]);
        a20 = _mm256_add_epi32(a20, _mm256_madd_epi16(x, v0)), a21 = _mm256_add_epi32(a21, _mm256_madd_epi16(x, v1));
        x = _mm256_set1_epi32(r3[j]);
        a30 = _mm256_add_epi32(a30, _mm256_madd_epi16(x, v0)), a31 = _mm256_add_epi32(a31, _mm256_madd_epi16(x, v1));
    }
    acc[0][0] = a00, acc[0][1] = a01, acc[1][0] = a10, acc[1][1] = a11;
    acc[2][0] = a20, acc[2][1] = a21, acc[3][0] = a30, acc[3][1] = a31;
}

/* MR pixels x 8 channels. */
static inline void gemm8(const int16_t *rows, int kp, const int16_t *w0, const int32_t *bias, __m256i acc[MR][2]) {
    const int32_t *r0 = (const int32_t *)rows, *r1 = r0 + kp, *r2 = r1 + kp, *r3 = r2 + kp;
    const __m256i b0 = _mm256_loadu_si256((const __m256i *)bias);
    __m256i a0 = b0, a1 = b0, a2 = b0, a3 = b0;
    for (int j = 0; j < kp; j++) {
        const __m256i v0 = _mm256_loadu_si256((const __m256i *)(w0 + 16 * j));
        a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(_mm256_set1_epi32(r0[j]), v0));
        a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(_mm256_set1_epi32(r1[j]), v0));
        a2 = _mm256_add_epi32(a2, _mm256_madd_epi16(_mm256_set1_epi32(r2[j]), v0));
        a3 = _mm256_add_epi32(a3, _mm256_madd_epi16(_mm256_set1_epi32(r3[j]), v0));
    }
    acc[0][0] = a0, acc[1][0] = a1, acc[2][0] = a2, acc[3][0] = a3;
}

/* ---- the direct path (ungrouped): windows read in place from a zero-point-padded copy of the image -------------
 * Per image, the input is copied once inside a border of the input zero point (the scratch buffer below, shared by
 * every call site), so a window is `segs` runs of `len` values at fixed offsets from its first tap (whose offset in
 * the copy, per output pixel, is a table made with the packed weights): one run per filter row (fw * in_c values)
 * when the taps of a row are adjacent, else one per tap. Each run is summed in steps
 * of DIRECT_STEP taps; a run whose length is not a multiple of the step reads up to DIRECT_STEP - 1 values past its
 * end, which their packed weights (0) cancel. The sums are register blocks of MR pixels x 8 or 16 channels, each
 * pixel's step broadcast straight from the image against a vector of 8 channels x DIRECT_STEP weights: 12 pixels
 * (8 where 12 would leave many idle, as in an 8x8 image; the whole image where it has at most 9). A whole block's
 * sums are requantized straight from registers; a partial one's through the shared accumulator array.
 *
 * With AVX-512 VNNI (vpdpbusd: unsigned x signed bytes, 4 products a lane) the copy holds u = x + 128 as uint8 (the
 * border zp + 128) and each step is 4 taps; sum(u * w) = sum(x * w) + 128 * sum(w), so the sums start from
 * bias_full - 128 * sum(w) of their channel (wrapping, as every sum here: the int32 results are the portable
 * kernel's bit for bit). Elsewhere (MNH_NO_VNNI builds this one on a VNNI host too) the copy is widened to int16
 * and each step is a pair (madd). */
#if defined(__AVX512VNNI__) && defined(__AVX512VL__) && !defined(MNH_NO_VNNI)
#define DIRECT_VNNI 1
typedef uint8_t direct_t; /* the padded image's values */
typedef int8_t direct_w;  /* the packed weights' */
enum { DIRECT_STEP = 4 };
#define DIRECT_DOT(a, x, w) _mm256_dpbusd_epi32(a, x, w)
#else
typedef int16_t direct_t;
typedef int16_t direct_w;
enum { DIRECT_STEP = 2 };
#define DIRECT_DOT(a, x, w) _mm256_add_epi32(a, _mm256_madd_epi16(x, w))
#endif
enum { DIRECT_VEC = 8 * DIRECT_STEP }; /* direct_w per step and 8-channel block: one vector */

#if defined(__AVX512VL__)
enum { MR16 = 12 }; /* 24 accumulators of the 32 vector registers */
#else
enum { MR16 = 6 };
#endif
enum { MR8 = 12, DIRECT_BAND = 32, DIRECT_ACC = 2 * MR16 > MR8 ? 2 * MR16 : MR8 };

typedef struct {
    int segs, len, lp, hp, wp;   /* runs per window, their length and steps; the padded image's height, width */
    int *off;                    /* each run's offset (values) from the window's first tap */
    int32_t *win;                /* each output pixel's window (its first tap's offset in the padded image), in order,
                                    then MR8 copies of the last (a last short block's spare pixels: computed, not
                                    stored) */
    direct_w *w;                 /* per 8-channel block: segs * lp steps x 8 channels (DIRECT_VEC values) */
    int32_t *bias;               /* the sums' start: bias_full (VNNI: less 128 * sum(w)), padded to whole blocks */
    mnh_rq rq;
    mnh_fq fq;                   /* fq.ok: the sums are small enough for mnh_fq8_apply */
    mnh_fr fr;                   /* where fq.ok: the same values by mnh_fr8_apply */
} direct_pack;

static direct_t *direct_scratch;
static size_t direct_cap;

enum { DIRECT_MAX_IMAGE = 1 << 23 }; /* values of the padded image; beyond, the im2col path */

/* cached under args + 1: the other path's pack is cached under args */
static const direct_pack *direct_prepare(const mn_word *args) {
    mnh_slot *slot;
    direct_pack *p = (direct_pack *)mnh_lookup(args + 1, &slot);
    if (p) return p;
    const int in_c = MN_I(IN_C), out_c = MN_I(OUT_C), fh = MN_I(F_H), fw = MN_I(F_W), dh = MN_I(D_H), dw = MN_I(D_W);
    const int in_h = MN_I(IN_H), in_w = MN_I(IN_W), k = fh * fw * in_c, blocks = mnh_blocks8(out_c);
    p = (direct_pack *)mnh_alloc(sizeof(direct_pack));
    if (!p) return NULL;
    p->hp = mn_max(in_h + MN_I(PAD_T), (MN_I(OUT_H) - 1) * MN_I(S_H) + (fh - 1) * dh + 1);
    p->wp = mn_max(in_w + MN_I(PAD_L), (MN_I(OUT_W) - 1) * MN_I(S_W) + (fw - 1) * dw + 1);
    p->segs = dw == 1 ? fh : fh * fw, p->len = dw == 1 ? fw * in_c : in_c;
    p->lp = (p->len + DIRECT_STEP - 1) / DIRECT_STEP;
    const int segs = p->segs, len = p->len, lp = p->lp;
    p->off = (int *)mnh_alloc((size_t)segs * sizeof(int));
    const int out_h = MN_I(OUT_H), out_w = MN_I(OUT_W), total = out_h * out_w;
    p->win = (int32_t *)mnh_alloc(((size_t)total + MR8) * sizeof(int32_t));
    p->w = (direct_w *)mnh_alloc((size_t)blocks * segs * lp * DIRECT_VEC * sizeof(direct_w));
    p->bias = (int32_t *)mnh_alloc((size_t)blocks * 8 * sizeof(int32_t));
    int32_t *shift = (int32_t *)mnh_alloc((size_t)blocks * 8 * sizeof(int32_t));
    int32_t *mult = (int32_t *)mnh_alloc((size_t)blocks * 8 * sizeof(int32_t));
    int64_t *bound = (int64_t *)mnh_alloc((size_t)blocks * 8 * sizeof(int64_t));
    if (!p->off || !p->win || !p->w || !p->bias || !shift || !mult || !bound) return NULL;
    for (int q = 0; q < total + MR8; q++) {
        const int oy = mn_min(q, total - 1) / out_w, ox = mn_min(q, total - 1) % out_w;
        p->win[q] = (int32_t)(((size_t)oy * MN_I(S_H) * p->wp + (size_t)ox * MN_I(S_W)) * in_c);
    }
    for (int s = 0; s < segs; s++) {
        const int fy = dw == 1 ? s : s / fw, fx = dw == 1 ? 0 : s % fw;
        p->off[s] = (fy * dh * p->wp + fx * dw) * in_c;
    }
    const int8_t *filter = MN_P(const int8_t, FILTER);
    for (int r = 0; r < out_c; r++) {
        direct_w *d = p->w + (size_t)(r / 8) * segs * lp * DIRECT_VEC + DIRECT_STEP * (r % 8);
        uint32_t sum = 0; /* of the channel's weights, wrapping */
        for (int s = 0; s < segs; s++)
            for (int e = 0; e < len; e++) {
                const int8_t v = filter[(size_t)r * k + s * len + e];
                d[((size_t)s * lp + e / DIRECT_STEP) * DIRECT_VEC + e % DIRECT_STEP] = v;
                sum += (uint32_t)(int32_t)v;
            }
        const int32_t bias_full = MN_P(const int32_t, BIAS_FULL)[r];
#if defined(DIRECT_VNNI)
        p->bias[r] = (int32_t)((uint32_t)bias_full - 128u * sum);
#else
        p->bias[r] = bias_full, (void)sum;
#endif
        mult[r] = MN_P(const int32_t, MULT)[r], shift[r] = MN_P(const int8_t, SHIFT)[r];
        bound[r] = (bias_full < 0 ? -(int64_t)bias_full : bias_full) + (int64_t)k * 128 * 128;
    }
    if (!mnh_rq_init(&p->rq, mult, shift, blocks * 8, 8)) return NULL;
    if (!mnh_fq_init(&p->fq, mult, shift, bound, MN_I(OUT_ZP), out_c, 8)) return NULL;
    if (p->fq.ok && !mnh_fr_init(&p->fr, &p->fq, out_c, 8)) return NULL;
    free(mult), free(shift), free(bound);
    mnh_keep(slot, args + 1, p);
    return p;
}

/* MR pixels (windows at x + win[0..MR)) x NV 8-channel blocks (weights w, blocks segs * lp * DIRECT_VEC values apart).
 * Always inlined where called by name (the main 16-channel loop); the others are called through a pointer. */
#define DIRECT_KERNEL(NAME, MR, NV)                                                                                \
    __attribute__((always_inline)) static inline void NAME(const direct_t *x, const int32_t *win,                 \
                                                           const direct_pack *p, const direct_w *w,               \
                                                           const int32_t *bias, __m256i *acc) {                   \
        __m256i a[MR][NV];                                                                                          \
        const size_t wstep = (size_t)p->segs * p->lp * DIRECT_VEC;                                                  \
        for (int v = 0; v < NV; v++) {                                                                              \
            const __m256i b = _mm256_loadu_si256((const __m256i *)(bias + 8 * v));                                  \
            for (int i = 0; i < MR; i++) a[i][v] = b;                                                               \
        }                                                                                                           \
        for (int s = 0; s < p->segs; s++) {                                                                         \
            const direct_t *r[MR];                                                                                  \
            for (int i = 0; i < MR; i++) r[i] = x + win[i] + p->off[s];                                             \
            const direct_w *ws = w + (size_t)s * p->lp * DIRECT_VEC;                                                \
            for (int j = 0; j < p->lp; j++) {                                                                       \
                __m256i wv[NV];                                                                                     \
                for (int v = 0; v < NV; v++)                                                                        \
                    wv[v] = _mm256_loadu_si256((const __m256i *)(ws + v * wstep + DIRECT_VEC * j));                 \
                for (int i = 0; i < MR; i++) {                                                                      \
                    int32_t step;                                                                                   \
                    memcpy(&step, r[i] + DIRECT_STEP * j, 4);                                                       \
                    const __m256i xv = _mm256_set1_epi32(step);                                                     \
                    for (int v = 0; v < NV; v++) a[i][v] = DIRECT_DOT(a[i][v], xv, wv[v]);                          \
                }                                                                                                   \
            }                                                                                                       \
        }                                                                                                           \
        for (int i = 0; i < MR; i++)                                                                                \
            for (int v = 0; v < NV; v++) acc[i * NV + v] = a[i][v];                                                 \
    }
DIRECT_KERNEL(direct16, MR16, 2)
DIRECT_KERNEL(direct16x8, 8, 2)
DIRECT_KERNEL(direct16x9, 9, 2)
DIRECT_KERNEL(direct16x4, 4, 2)
DIRECT_KERNEL(direct16x2, 2, 2)
DIRECT_KERNEL(direct16x1, 1, 2)
DIRECT_KERNEL(direct8, MR8, 1)
DIRECT_KERNEL(direct8x9, 9, 1)
DIRECT_KERNEL(direct8x4, 4, 1)
DIRECT_KERNEL(direct8x2, 2, 1)
DIRECT_KERNEL(direct8x1, 1, 1)

typedef void (*direct_kernel)(const direct_t *, const int32_t *, const direct_pack *, const direct_w *,
                              const int32_t *, __m256i *);

/* m pixels' 16 channels (acc[2 i], acc[2 i + 1]) requantized by mnh_fq and stored, n <= 16 of them per pixel. */
__attribute__((always_inline)) static inline void direct_store16(int8_t *out, size_t stride, int m, int n,
                                                                 const __m256i *acc, const mnh_fq8 *r0,
                                                                 const mnh_fq8 *r1, int left, int e0) {
    for (int i = 0; i < m; i++) {
        const __m256i y0 = mnh_fq8_apply(acc[2 * i], r0, left, e0), y1 = mnh_fq8_apply(acc[2 * i + 1], r1, left, e0);
        const __m256i t = _mm256_permute4x64_epi64(_mm256_packs_epi32(y0, y1), 0xD8);
        const __m128i b = _mm_packs_epi16(_mm256_castsi256_si128(t), _mm256_extracti128_si256(t, 1));
        if (n == 16) {
            _mm_storeu_si128((__m128i *)(out + i * stride), b);
        } else {
            int8_t tmp[16];
            _mm_storeu_si128((__m128i *)tmp, b);
            memcpy(out + i * stride, tmp, (size_t)n);
        }
    }
}

/* m pixels' 8 channels (acc[i]) requantized by mnh_fq and stored, n <= 8 of them per pixel. */
__attribute__((always_inline)) static inline void direct_store8(int8_t *out, size_t stride, int m, int n,
                                                                const __m256i *acc, const mnh_fq8 *r, int left,
                                                                int e0) {
    for (int i = 0; i < m; i++) {
        const __m128i b = mnh_bytes8(mnh_fq8_apply(acc[i], r, left, e0));
        if (n == 8) {
            _mm_storel_epi64((__m128i *)(out + i * stride), b);
        } else {
            int8_t tmp[16];
            _mm_storeu_si128((__m128i *)tmp, b);
            memcpy(out + i * stride, tmp, (size_t)n);
        }
    }
}

/* Two pixels' 16 channels (y0, y1 of each, int32 in channel order) as 32 bytes, pixel a's then b's, clamped to
 * [lo, hi] (the bytes of lo8, hi8): saturated to int16 then int8 (in lane order), the dwords put back in order. */
static inline __m256i direct_bytes2x16(__m256i a0, __m256i a1, __m256i b0, __m256i b1, __m256i lo8, __m256i hi8,
                                       int clamp) {
    const __m256i u = _mm256_packs_epi16(_mm256_packs_epi32(a0, a1), _mm256_packs_epi32(b0, b1));
    const __m256i v = _mm256_permutevar8x32_epi32(u, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    return clamp ? _mm256_min_epi8(_mm256_max_epi8(v, lo8), hi8) : v;
}

/* m pixels' 16 channels (acc[2 i], acc[2 i + 1]) requantized by mnh_fr and stored, n <= 16 of them per pixel, two
 * pixels at a time (an odd last one paired with itself). */
__attribute__((always_inline)) static inline void direct_put16(int8_t *out, size_t stride, int m, int n,
                                                               const __m256i *acc, const mnh_fr8 *r0,
                                                               const mnh_fr8 *r1, __m256i lo8, __m256i hi8, int left,
                                                               int clamp, int above) {
    for (int i = 0; i < m; i += 2) {
        const int j = i + 1 < m ? i + 1 : i;
        const __m256i a0 = mnh_fr8_apply_as(acc[2 * i], r0, left, above);
        const __m256i a1 = mnh_fr8_apply_as(acc[2 * i + 1], r1, left, above);
        const __m256i b0 = mnh_fr8_apply_as(acc[2 * j], r0, left, above);
        const __m256i b1 = mnh_fr8_apply_as(acc[2 * j + 1], r1, left, above);
        const __m256i b = direct_bytes2x16(a0, a1, b0, b1, lo8, hi8, clamp);
        if (n == 16) {
            _mm_storeu_si128((__m128i *)(out + i * stride), _mm256_castsi256_si128(b));
            if (j > i) _mm_storeu_si128((__m128i *)(out + j * stride), _mm256_extracti128_si256(b, 1));
        } else {
            int8_t tmp[32];
            _mm256_storeu_si256((__m256i *)tmp, b);
            memcpy(out + i * stride, tmp, (size_t)n);
            if (j > i) memcpy(out + j * stride, tmp + 16, (size_t)n);
        }
    }
}

/* m pixels' 8 channels (acc[i]) requantized by mnh_fr and stored, n <= 8 of them per pixel, four pixels at a time
 * (the last ones of a partial four repeated). */
__attribute__((always_inline)) static inline void direct_put8(int8_t *out, size_t stride, int m, int n,
                                                              const __m256i *acc, const mnh_fr8 *r, __m256i lo8,
                                                              __m256i hi8, int left) {
    for (int i = 0; i < m; i += 4) {
        const int i1 = mn_min(i + 1, m - 1), i2 = mn_min(i + 2, m - 1), i3 = mn_min(i + 3, m - 1);
        const __m256i b = direct_bytes2x16(mnh_fr8_apply(acc[i], r, left), mnh_fr8_apply(acc[i1], r, left),
                                           mnh_fr8_apply(acc[i2], r, left), mnh_fr8_apply(acc[i3], r, left),
                                           lo8, hi8, 1);
        int8_t tmp[32];
        _mm256_storeu_si256((__m256i *)tmp, b);
        for (int k = 0; k < 4 && i + k < m; k++) {
            if (n == 8) memcpy(out + (i + k) * stride, tmp + 8 * k, 8);
            else memcpy(out + (i + k) * stride, tmp + 8 * k, (size_t)n);
        }
    }
}

/* The scratch holds at least `need` values; 0 when out of memory. */
static int direct_reserve(size_t need) {
    if (need <= direct_cap) return 1;
    direct_t *b = (direct_t *)realloc(direct_scratch, need * sizeof(direct_t));
    if (!b) return 0;
    direct_scratch = b, direct_cap = need;
    return 1;
}

#if defined(DIRECT_VNNI)
/* n bytes of v: inline vector stores (the border runs are a few dozen bytes, a memset call each cost more) */
static inline void direct_fill(uint8_t *dst, uint8_t v, size_t n) {
#if defined(__AVX512BW__)
    const __m512i b = _mm512_set1_epi8((char)v);
    size_t i = 0;
    for (; i + 64 <= n; i += 64) _mm512_storeu_si512((void *)(dst + i), b);
    if (i < n) _mm512_mask_storeu_epi8(dst + i, ((__mmask64)1 << (n - i)) - 1, b);
#else
    memset(dst, v, n);
#endif
}
#define DIRECT_FILL(d, v, n) direct_fill(d, v, (size_t)(n))
#define DIRECT_COPY(d, s, n) mnh_flip(d, s, (size_t)(n))
#else
#define DIRECT_FILL(d, v, n) mnh_fill16(d, v, (int)(n))
#define DIRECT_COPY(d, s, n) mnh_widen(d, s, n)
#endif

/* One image copied into the scratch (direct_reserve'd) inside its zero-point border (VNNI: all values + 128). */
static direct_t *direct_image(const direct_pack *p, const int8_t *image, int in_h, int in_w, int in_c, int pad_t,
                              int pad_l, int32_t zp) {
    const size_t row = (size_t)p->wp * in_c;
    direct_t *x = direct_scratch;
#if defined(DIRECT_VNNI)
    const uint8_t v = (uint8_t)(zp + 128);
#else
    const int16_t v = (int16_t)zp;
#endif
    const int rows = mn_min(in_h, p->hp - pad_t), cols = mn_min(in_w, p->wp - pad_l);
    DIRECT_FILL(x, v, pad_t * row);
    if (pad_l == 0 && cols == in_w && cols == p->wp) { /* no column padded: the rows one run */
        DIRECT_COPY(x + (size_t)pad_t * row, image, rows * in_w * in_c);
        DIRECT_FILL(x + (size_t)(pad_t + rows) * row, v, (p->hp - pad_t - rows) * row + 32);
        return x;
    }
    for (int y = 0; y < rows; y++) {
        direct_t *d = x + (size_t)(pad_t + y) * row;
        DIRECT_FILL(d, v, pad_l * in_c);
        DIRECT_COPY(d + (size_t)pad_l * in_c, image + (size_t)y * in_w * in_c, cols * in_c);
        DIRECT_FILL(d + (size_t)(pad_l + cols) * in_c, v, (p->wp - pad_l - cols) * in_c);
    }
    DIRECT_FILL(x + (size_t)(pad_t + rows) * row, v, (p->hp - pad_t - rows) * row + 32);
    return x;
}

#if defined(DIRECT_VNNI)
/* ---- 1x1 heads: one or two output channels of a stride-1 unpadded 1x1 layer (a U-Net's output), pixels in lanes ----
 * The direct path would fill 8 channel lanes with one or two. Here, per output channel, 8 neighbouring pixels' sums
 * share a vector: each step gathers the 8 pixels' next four input bytes (as u = x + 128) against the channel's four
 * weights broadcast, from the same packed weights and start values; the channel's requantization parameters fill
 * every lane (mnh_fr8_channel, set once per call). A group's 8 pixels are read before its outputs are stored (a
 * streamed output stays behind its input); a last partial group reads its last pixel again in the spare lanes.
 * conv_head: 1 done; 0 not such a layer. */
__attribute__((always_inline)) static inline __m128i head_bytes(const int8_t *x, __m256i index, const direct_pack *p,
                                                                int c, const mnh_fr8 *r, int lp, int left) {
    const int32_t *w = (const int32_t *)(const void *)(p->w + 4 * c); /* step j: DIRECT_VEC bytes further */
    const __m256i top = _mm256_set1_epi8(-128);
    __m256i acc = _mm256_set1_epi32(p->bias[c]);
    for (int j = 0; j < lp; j++) {
        const __m256i g = _mm256_i32gather_epi32((const int *)(const void *)(x + 4 * j), index, 1);
        const __m256i u = _mm256_xor_si256(g, top);
        acc = _mm256_dpbusd_epi32(acc, u, _mm256_set1_epi32(w[j * DIRECT_VEC / 4]));
    }
    const __m256i y = left ? mnh_fr8_apply(acc, r, 1) : mnh_fr8_apply(acc, r, 0);
    const __m128i y16 = _mm_packs_epi32(_mm256_castsi256_si128(y), _mm256_extracti128_si256(y, 1));
    return _mm_packs_epi16(y16, _mm_setzero_si128());
}

static int conv_head(const mn_word *args, const direct_pack *p) {
    const int in_c = MN_I(IN_C), out_c = MN_I(OUT_C), lo = MN_I(ACT_MIN), hi = MN_I(ACT_MAX);
    const int total = MN_I(OUT_H) * MN_I(OUT_W), lp = p->lp, left = p->fq.any_left;
    if (out_c > 2 || MN_I(F_H) != 1 || MN_I(F_W) != 1 || MN_I(S_H) != 1 || MN_I(S_W) != 1 || MN_I(PAD_T) != 0 ||
        MN_I(PAD_L) != 0 || MN_I(OUT_W) != MN_I(IN_W) || MN_I(OUT_H) != MN_I(IN_H) || in_c % 4 != 0 ||
        in_c > (1 << 20) || total < 8 || !p->fq.ok || lo < -128 || lo > hi || hi > 127)
        return 0;
    const __m128i lo8 = _mm_set1_epi8((char)lo), hi8 = _mm_set1_epi8((char)hi);
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const mnh_fr8 r0 = mnh_fr8_channel(&p->fr, 0), r1 = mnh_fr8_channel(&p->fr, out_c - 1);
    for (int b = 0; b < MN_I(N); b++) {
        const int8_t *in = MN_P(const int8_t, IN) + (size_t)b * total * in_c;
        int8_t *out = MN_P(int8_t, OUT) + (size_t)b * total * out_c;
        for (int p0 = 0; p0 < total; p0 += 8) {
            const int m = mn_min(8, total - p0);
            const __m256i index = _mm256_mullo_epi32(_mm256_min_epi32(lanes, _mm256_set1_epi32(m - 1)),
                                                     _mm256_set1_epi32(in_c));
            const int8_t *x = in + (size_t)p0 * in_c;
            __m128i v = head_bytes(x, index, p, 0, &r0, lp, left);
            if (out_c == 2) v = _mm_unpacklo_epi8(v, head_bytes(x, index, p, 1, &r1, lp, left));
            v = _mm_min_epi8(_mm_max_epi8(v, lo8), hi8);
            if (m == 8 && out_c == 1) {
                _mm_storel_epi64((__m128i *)(out + p0), v);
            } else if (m == 8) {
                _mm_storeu_si128((__m128i *)(out + 2 * (size_t)p0), v);
            } else {
                int8_t tmp[16];
                _mm_storeu_si128((__m128i *)tmp, v);
                memcpy(out + (size_t)p0 * out_c, tmp, (size_t)m * out_c);
            }
        }
    }
    return 1;
}
#endif

static int conv_direct(const mn_word *args) {
    const int hp = mn_max(MN_I(IN_H) + MN_I(PAD_T), (MN_I(OUT_H) - 1) * MN_I(S_H) + (MN_I(F_H) - 1) * MN_I(D_H) + 1);
    const int wp = mn_max(MN_I(IN_W) + MN_I(PAD_L), (MN_I(OUT_W) - 1) * MN_I(S_W) + (MN_I(F_W) - 1) * MN_I(D_W) + 1);
    const size_t need = (size_t)hp * wp * MN_I(IN_C) + 32;
    if (need > DIRECT_MAX_IMAGE || !direct_reserve(need)) return 0;
    const direct_pack *p = direct_prepare(args);
    if (!p || !p->rq.vec) return 0;
#if defined(DIRECT_VNNI)
    if (MN_I(OUT_C) <= 2 && conv_head(args, p)) return 1;
#endif
    int8_t *out = MN_P(int8_t, OUT);
    const int8_t *in = MN_P(const int8_t, IN);
    const int n = MN_I(N), in_h = MN_I(IN_H), in_w = MN_I(IN_W), in_c = MN_I(IN_C);
    const int out_h = MN_I(OUT_H), out_w = MN_I(OUT_W), out_c = MN_I(OUT_C);
    const int32_t out_zp = MN_I(OUT_ZP), lo = MN_I(ACT_MIN), hi = MN_I(ACT_MAX);
    const int blocks = mnh_blocks8(out_c), total = out_h * out_w, wide = blocks >= 2;
    /* an image of at most 9 pixels: one block of pixels over 16- then 8-channel blocks (the weights read once) */
    const int few = total <= 9 ? (total <= 2 ? total : total <= 4 ? 4 : 9) : 0;
    const direct_kernel k8 = few == 9 ? direct8x9 : few == 4 ? direct8x4 : few == 2 ? direct8x2 : few == 1 ? direct8x1
                                                                                                           : direct8;
    /* 16-channel blocks of 8 pixels where MR16's would leave many more idle (an 8x8 image: 64 = 8 x 8) */
    const int by8 = wide && !few && MR16 > 8 && (total + 7) / 8 * 8 + total / 10 < (total + MR16 - 1) / MR16 * MR16;
    const direct_kernel k16 = few == 9 ? direct16x9 : few == 4 ? direct16x4 : few == 2 ? direct16x2
                              : few == 1 ? direct16x1 : by8 ? direct16x8 : NULL; /* else direct16, inlined */
    const int mr = few ? few : by8 ? 8 : wide ? MR16 : MR8, fast = p->fq.ok, left = p->fq.any_left, e0 = p->fq.any_e0;
    const int folded = fast && lo >= -128 && lo <= hi && hi <= 127; /* mnh_fr, the clamp on bytes */
    const __m256i lo8 = _mm256_set1_epi8((char)lo), hi8 = _mm256_set1_epi8((char)hi);
    const int clamp = lo > -128 || hi < 127; /* else the saturating packs are the clamp */
    const int above = lo >= out_zp;          /* a negative sum's output clamps as a zero sum's (mnh_fr8_apply_as) */
    const size_t wstep = (size_t)p->segs * p->lp * DIRECT_VEC;
    /* pixel blocks in bands whose windows stay in cache while each channel block's weights pass over them */
    const int bytes = p->segs * p->lp * DIRECT_STEP * (int)sizeof(direct_t); /* of a window */
    const int band = mn_max(1, mn_min(DIRECT_BAND, 16384 / (mr * bytes)));
    __m256i acc[DIRECT_ACC];
    for (int b = 0; b < n; b++) {
        const direct_t *x = direct_image(p, in + (size_t)b * in_h * in_w * in_c, in_h, in_w, in_c, MN_I(PAD_T),
                                         MN_I(PAD_L), -MN_I(IN_OFF));
        int8_t *ob = out + (size_t)b * total * out_c;
        for (int b0 = 0; b0 < total; b0 += band * mr) {
            const int nb = mn_min(band, (total - b0 + mr - 1) / mr);
            int bl = 0;
            for (; wide && few <= MR16 && bl + 2 <= blocks; bl += 2) { /* (few: its accumulators fit) */
                const int nn = mn_min(16, out_c - bl * 8);
                const mnh_fq8 r0 = mnh_fq8_load(&p->fq, bl * 8, lo, hi), r1 = mnh_fq8_load(&p->fq, bl * 8 + 8, lo, hi);
                mnh_fr8 f0, f1;
                if (folded) f0 = mnh_fr8_load(&p->fr, bl * 8), f1 = mnh_fr8_load(&p->fr, bl * 8 + 8);
                for (int j = 0; j < nb; j++) {
                    const int p0 = b0 + j * mr, m = mn_min(mr, total - p0);
                    int8_t *o = ob + (size_t)p0 * out_c + bl * 8;
                    if (!k16 && folded && m == MR16 && nn == 16) { /* a whole block: its sums kept in registers */
                        __m256i a[2 * MR16];
                        direct16(x, p->win + p0, p, p->w + bl * wstep, p->bias + bl * 8, a);
                        if (left) direct_put16(o, (size_t)out_c, MR16, 16, a, &f0, &f1, lo8, hi8, 1, 1, 0);
                        else if (clamp) direct_put16(o, (size_t)out_c, MR16, 16, a, &f0, &f1, lo8, hi8, 0, 1, 0);
                        else if (above) direct_put16(o, (size_t)out_c, MR16, 16, a, &f0, &f1, lo8, hi8, 0, 0, 1);
                        else direct_put16(o, (size_t)out_c, MR16, 16, a, &f0, &f1, lo8, hi8, 0, 0, 0);
                        continue;
                    }
                    if (k16) k16(x, p->win + p0, p, p->w + bl * wstep, p->bias + bl * 8, acc);
                    else direct16(x, p->win + p0, p, p->w + bl * wstep, p->bias + bl * 8, acc);
                    if (!fast) {
                        mnh_store8xm(o, (size_t)out_c, m, mn_min(8, nn), acc, 2, &p->rq, bl * 8, out_zp, lo, hi);
                        mnh_store8xm(o + 8, (size_t)out_c, m, nn - 8, acc + 1, 2, &p->rq, bl * 8 + 8, out_zp, lo, hi);
                    } else if (folded && !left) {
                        direct_put16(o, (size_t)out_c, m, nn, acc, &f0, &f1, lo8, hi8, 0, 1, 0);
                    } else if (folded) {
                        direct_put16(o, (size_t)out_c, m, nn, acc, &f0, &f1, lo8, hi8, 1, 1, 0);
                    } else if (!left && !e0) {
                        direct_store16(o, (size_t)out_c, m, nn, acc, &r0, &r1, 0, 0);
                    } else {
                        direct_store16(o, (size_t)out_c, m, nn, acc, &r0, &r1, 1, 1);
                    }
                }
            }
            for (; bl < blocks; bl++) {
                const int nn = mn_min(8, out_c - bl * 8);
                const mnh_fq8 r = mnh_fq8_load(&p->fq, bl * 8, lo, hi);
                mnh_fr8 f;
                if (folded) f = mnh_fr8_load(&p->fr, bl * 8);
                for (int j = 0; j < nb; j++) {
                    const int p0 = b0 + j * mr, m = mn_min(mr, total - p0);
                    int8_t *o = ob + (size_t)p0 * out_c + bl * 8;
                    if (!few && folded && m == MR8 && nn == 8) { /* a whole block: as above */
                        __m256i a[MR8];
                        direct8(x, p->win + p0, p, p->w + bl * wstep, p->bias + bl * 8, a);
                        if (left) direct_put8(o, (size_t)out_c, MR8, 8, a, &f, lo8, hi8, 1);
                        else direct_put8(o, (size_t)out_c, MR8, 8, a, &f, lo8, hi8, 0);
                        continue;
                    }
                    k8(x, p->win + p0, p, p->w + bl * wstep, p->bias + bl * 8, acc);
                    if (!fast) mnh_store8xm(o, (size_t)out_c, m, nn, acc, 1, &p->rq, bl * 8, out_zp, lo, hi);
                    else if (folded && !left) direct_put8(o, (size_t)out_c, m, nn, acc, &f, lo8, hi8, 0);
                    else if (folded) direct_put8(o, (size_t)out_c, m, nn, acc, &f, lo8, hi8, 1);
                    else if (!left && !e0) direct_store8(o, (size_t)out_c, m, nn, acc, &r, 0, 0);
                    else direct_store8(o, (size_t)out_c, m, nn, acc, &r, 1, 1);
                }
            }
        }
    }
    return 1;
}

void mn_conv_2d_s8(const mn_word *args) {
    if (MN_I(IN_C) == MN_I(F_C) && conv_direct(args)) return;
    const int in_c = MN_I(IN_C), fc = MN_I(F_C), groups = in_c / fc;
    /* a streamed output (stage) is stored pixel by pixel after its windows: groups would store between them */
    const conv_pack *p = MN_I(STAGE) && groups > 1 ? NULL : conv_prepare(args);
    if (!p) { mn_conv_2d_s8_portable(args); return; }
    int8_t *out = MN_P(int8_t, OUT);
    const int8_t *in = MN_P(const int8_t, IN);
    const int n = MN_I(N), in_h = MN_I(IN_H), in_w = MN_I(IN_W);
    const int out_h = MN_I(OUT_H), out_w = MN_I(OUT_W), out_c = MN_I(OUT_C);
    const int sh = MN_I(S_H), sw = MN_I(S_W), pad_t = MN_I(PAD_T), pad_l = MN_I(PAD_L);
    const int32_t out_zp = MN_I(OUT_ZP), lo = MN_I(ACT_MIN), hi = MN_I(ACT_MAX);
    const int per_group = out_c / groups, k = MN_I(F_H) * MN_I(F_W) * fc;
    const int kp = p->kp, blocks = p->blocks, total = n * out_h * out_w;
    __m256i acc[MR][2];

    const conv_geom geom = {in_h, in_w, in_c, MN_I(F_H), MN_I(F_W), fc, MN_I(D_H), MN_I(D_W), k,
                            (int16_t)-MN_I(IN_OFF), in + (size_t)n * in_h * in_w * in_c};
    int b = 0, oy = 0, ox = 0; /* the block's first pixel */

    /* pointwise (1x1, stride 1, unpadded, ungrouped, an even depth): the block's windows are its input pixels,
     * one contiguous run of int8 that widens to the block's rows as they lie */
    const int pointwise = geom.fh == 1 && geom.fw == 1 && sh == 1 && sw == 1 && groups == 1 && pad_t == 0 &&
                          pad_l == 0 && out_h == in_h && out_w == in_w && (in_c & 1) == 0;

    for (int p0 = 0; p0 < total; p0 += MR) {
        const int m = mn_min(MR, total - p0);
        for (int g = 0; g < groups; g++) {
            int bb = b, yy = oy, xx = ox;
            if (pointwise) mnh_widen_over(p->rows, in + (size_t)p0 * in_c, m * in_c, geom.end);
            for (int i = 0; i < m && !pointwise; i++) { /* every window of the block read before any output stored */
                im2col(p->rows + (size_t)i * 2 * kp, in + (size_t)bb * in_h * in_w * in_c, &geom, yy * sh - pad_t,
                       xx * sw - pad_l, g);
                if (++xx == out_w && (xx = 0, ++yy == out_h)) yy = 0, bb++;
            }
            if (g == groups - 1) b = bb, oy = yy, ox = xx;
            const int16_t *wg = p->w + (size_t)g * blocks * kp * 16;
            const size_t cg = (size_t)g * blocks * 8;
            for (int bl = 0; bl < blocks; bl += 2) {
                const int two = bl + 1 < blocks, c = bl * 8;
                if (two) gemm16(p->rows, kp, wg + (size_t)bl * kp * 16, wg + (size_t)(bl + 1) * kp * 16,
                                p->bias + cg + c, acc);
                else gemm8(p->rows, kp, wg + (size_t)bl * kp * 16, p->bias + cg + c, acc);
                int8_t *o = out + (size_t)p0 * out_c + (size_t)g * per_group + c;
                mnh_store8xm(o, (size_t)out_c, m, mn_min(8, per_group - c), &acc[0][0], 2, &p->rq, (int)cg + c, out_zp,
                             lo, hi);
                if (two) mnh_store8xm(o + 8, (size_t)out_c, m, mn_min(8, per_group - c - 8), &acc[0][1], 2, &p->rq,
                                      (int)cg + c + 8, out_zp, lo, hi);
            }
        }
    }
}
#else
void mn_conv_2d_s8(const mn_word *args) { mn_conv_2d_s8_portable(args); }
#endif
