/* TRANSPOSE_CONV, int8: the host port (x86-64 with AVX2) of kernels/transpose_conv.c, same symbol, same argument
 * words.
 *
 * Gathered per output pixel instead of scattered per input pixel: the taps that land on output (oy, ox) are those
 * fy, fx with oy + pad_t - fy and ox + pad_l - fx non-negative multiples of the strides inside the input. Each
 * pixel's sums stay in registers (8 channels per vector, up to 32 at once), start from the bias and take
 * (x + offset) . W[oc, fy, fx, :] for every such tap, then are requantized and stored; int32 sums wrap, so the
 * order differs from the portable kernel's without changing a byte. The input is widened to int16 (offset added)
 * once per call and the weights are repacked per tap once per call site (mn_host.h), so the int32 scratch is
 * not used. A filter the size of its stride (no overlapping taps, as in a U-Net's 2x2 stride-2 upsampling) takes
 * the path below ts_prepare instead: a 1x1 convolution into fh * fw * out_c columns, AVX-512 VNNI where there is.
 */
#define mn_transpose_conv_s8 mn_transpose_conv_s8_portable
#include "transpose_conv.portable.inc"
#undef mn_transpose_conv_s8
#include "mn_host.h"

#if defined(MNH_AVX2)
typedef struct {
    int kp, blocks;
    int16_t *w;     /* per tap (fy, fx): mnh_pack_rows8 of W[:, fy, fx, :] */
    int32_t *bias;  /* padded to whole blocks */
    mnh_rq rq;
    int16_t *x;     /* the input plus offset as int16, 2 * kp per pixel */
} tc_pack;

static const tc_pack *tc_prepare(const mn_word *args) {
    mnh_slot *slot;
    tc_pack *p = (tc_pack *)mnh_lookup(args, &slot);
    if (p) return p;
    const int in_c = MN_I(IN_C), out_c = MN_I(OUT_C), taps = MN_I(F_H) * MN_I(F_W), kp = mnh_pairs(in_c);
    const int blocks = mnh_blocks8(out_c);
    const size_t pixels = (size_t)MN_I(N) * MN_I(IN_H) * MN_I(IN_W), tap_size = (size_t)blocks * kp * 16;
    p = (tc_pack *)mnh_alloc(sizeof(tc_pack));
    if (!p) return NULL;
    p->kp = kp, p->blocks = blocks;
    p->w = (int16_t *)mnh_alloc(taps * tap_size * sizeof(int16_t));
    p->bias = (int32_t *)mnh_alloc((size_t)blocks * 8 * sizeof(int32_t));
    p->x = (int16_t *)mnh_alloc((pixels * 2 * kp + 16) * sizeof(int16_t));
    if (!p->w || !p->bias || !p->x ||
        !mnh_rq_init(&p->rq, MN_P(const int32_t, MULT), MN_P(const int32_t, SHIFT), out_c, 8))
        return NULL;
    const int8_t *filter = MN_P(const int8_t, FILTER);
    for (int t = 0; t < taps; t++)
        mnh_pack_rows8(p->w + t * tap_size, filter + (size_t)t * in_c, out_c, in_c, (size_t)taps * in_c);
    memcpy(p->bias, MN_P(const int32_t, BIAS), (size_t)out_c * sizeof(int32_t));
    mnh_keep(slot, args, p);
    return p;
}

/* m (1..4) blocks of 8 channels, from block j0, of one output pixel: the sums over its `count` taps. */
__attribute__((always_inline)) static inline void pixel(__m256i *acc, const tc_pack *p, int j0, const int m,
                                                        const int16_t *const *xs, const int16_t *const *ws,
                                                        int count) {
    const int kp = p->kp;
    for (int j = 0; j < m; j++) acc[j] = _mm256_loadu_si256((const __m256i *)(p->bias + 8 * (j0 + j)));
    for (int t = 0; t < count; t++) {
        const int32_t *x = (const int32_t *)xs[t];
        const int16_t *w = ws[t] + (size_t)j0 * kp * 16;
        for (int i = 0; i < kp; i++, w += 16) {
            const __m256i xv = _mm256_set1_epi32(x[i]);
            for (int j = 0; j < m; j++)
                acc[j] = _mm256_add_epi32(acc[j], _mm256_madd_epi16(xv, _mm256_loadu_si256(
                                                                          (const __m256i *)(w + (size_t)j * kp * 16))));
        }
    }
}

/* ---- filter == stride: each output pixel takes exactly one tap -------------------------------------------------
 * Then the layer is a 1x1 convolution of the input with fh * fw * out_c "columns", column (fy, fx, oc) = W[oc, fy, fx,
 * :], each input pixel's column (fy, fx, oc) landing on output (iy * sh - pad_t + fy, ix * sw - pad_l + fx), channel
 * oc: the columns of one fy are fw * out_c consecutive bytes of one output row, so out_c < 8 fills whole vectors too.
 * Taken where every output pixel gets a tap (pad < stride, the last output inside the last input's reach); the taps
 * that land outside the output are computed, not stored. Per call the input is copied once (widened to int16; with
 * AVX-512 VNNI, uint8 x + 128, summed 4 a step by vpdpbusd), then register blocks of pixels x 8 or 16 columns sum
 * from each column's start: bias + offset * sum(w) (VNNI: bias + (offset - 128) * sum(w)), in wrapping uint32, so the
 * int32 sums are the portable kernel's bit for bit. A step reads up to TS_STEP - 1 values past its pixel (the next
 * pixel's, or the copy's zeroed tail), whose packed weights are 0. */
#if defined(__AVX512VNNI__) && defined(__AVX512VL__) && !defined(MNH_NO_VNNI)
#define TS_VNNI 1
typedef uint8_t ts_t; /* the input copy's values */
typedef int8_t ts_w;  /* the packed weights' */
enum { TS_STEP = 4, TS_BIAS = 128 };
#define TS_DOT(a, x, w) _mm256_dpbusd_epi32(a, x, w)
#else
typedef int16_t ts_t;
typedef int16_t ts_w;
enum { TS_STEP = 2, TS_BIAS = 0 };
#define TS_DOT(a, x, w) _mm256_add_epi32(a, _mm256_madd_epi16(x, w))
#endif
enum { TS_VEC = 8 * TS_STEP, TS_MR = 12 }; /* ts_w per step and 8-column block: one vector; pixels per block */

typedef struct {
    int cols, blocks, steps, runs8, runs16; /* runsN: every N aligned columns are consecutive bytes of one row */
    ts_w *w;                                /* per 8-column block: steps x TS_VEC values */
    int32_t *start;                         /* per column, padded to whole blocks */
    int *at, *tap;                          /* per column: its byte from the pixel's first output, fy * fw + fx */
    mnh_rq rq;
    mnh_fq fq; /* fq.ok: the sums are small enough for mnh_fq8_apply */
} ts_pack;

static ts_t *ts_scratch;
static size_t ts_cap;

/* cached under args + 1: the gather path's pack is cached under args */
static const ts_pack *ts_prepare(const mn_word *args) {
    mnh_slot *slot;
    ts_pack *p = (ts_pack *)mnh_lookup(args + 1, &slot);
    if (p) return p;
    const int in_c = MN_I(IN_C), out_c = MN_I(OUT_C), fw = MN_I(F_W), taps = MN_I(F_H) * fw, out_w = MN_I(OUT_W);
    const int cols = taps * out_c, blocks = mnh_blocks8(cols), steps = (in_c + TS_STEP - 1) / TS_STEP;
    const uint32_t off = (uint32_t)MN_I(IN_OFF) - TS_BIAS;
    const int64_t lo_x = -128 + (int64_t)MN_I(IN_OFF), hi_x = 127 + (int64_t)MN_I(IN_OFF); /* x + offset's range */
    const int64_t reach = -lo_x > hi_x ? -lo_x : hi_x;                                      /* max |x + offset| */
    p = (ts_pack *)mnh_alloc(sizeof(ts_pack));
    if (!p) return NULL;
    p->cols = cols, p->blocks = blocks, p->steps = steps;
    p->runs8 = fw * out_c % 8 == 0, p->runs16 = fw * out_c % 16 == 0;
    p->w = (ts_w *)mnh_alloc((size_t)blocks * steps * TS_VEC * sizeof(ts_w));
    p->start = (int32_t *)mnh_alloc((size_t)blocks * 8 * sizeof(int32_t));
    p->at = (int *)mnh_alloc((size_t)cols * sizeof(int));
    p->tap = (int *)mnh_alloc((size_t)cols * sizeof(int));
    int32_t *mult = (int32_t *)mnh_alloc((size_t)cols * sizeof(int32_t));
    int32_t *shift = (int32_t *)mnh_alloc((size_t)cols * sizeof(int32_t));
    int64_t *bound = (int64_t *)mnh_alloc((size_t)cols * sizeof(int64_t));
    if (!p->w || !p->start || !p->at || !p->tap || !mult || !shift || !bound) return NULL;
    const int8_t *filter = MN_P(const int8_t, FILTER);
    const int32_t *bias = MN_P(const int32_t, BIAS);
    for (int c = 0; c < cols; c++) {
        const int t = c / out_c, oc = c % out_c;
        const int8_t *src = filter + ((size_t)oc * taps + t) * in_c;
        ts_w *d = p->w + (size_t)(c / 8) * steps * TS_VEC + TS_STEP * (c % 8);
        uint32_t sum = 0; /* of the column's weights, wrapping */
        for (int e = 0; e < in_c; e++) {
            d[(size_t)(e / TS_STEP) * TS_VEC + e % TS_STEP] = src[e];
            sum += (uint32_t)(int32_t)src[e];
        }
        p->start[c] = (int32_t)((uint32_t)bias[oc] + off * sum);
        p->at[c] = ((t / fw) * out_w + t % fw) * out_c + oc, p->tap[c] = t;
        mult[c] = MN_P(const int32_t, MULT)[oc], shift[c] = MN_P(const int32_t, SHIFT)[oc];
        bound[c] = (bias[oc] < 0 ? -(int64_t)bias[oc] : bias[oc]) + (int64_t)in_c * reach * 128;
    }
    if (!mnh_rq_init(&p->rq, mult, shift, cols, 8)) return NULL;
    if (!mnh_fq_init(&p->fq, mult, shift, bound, MN_I(OUT_ZP), cols, 8)) return NULL;
    free(mult), free(shift), free(bound);
    mnh_keep(slot, args + 1, p);
    return p;
}

/* MR pixels (x[0..MR)) x NV 8-column blocks (weights w, blocks wstep values apart), from start. */
#define TS_KERNEL(NAME, MR, NV)                                                                                     \
    static void NAME(const ts_t *const *x, const ts_w *w, size_t wstep, int steps, const int32_t *start,            \
                     __m256i *acc) {                                                                                \
        __m256i a[MR][NV];                                                                                          \
        for (int v = 0; v < NV; v++) {                                                                              \
            const __m256i b = _mm256_loadu_si256((const __m256i *)(start + 8 * v));                                 \
            for (int i = 0; i < MR; i++) a[i][v] = b;                                                               \
        }                                                                                                           \
        for (int j = 0; j < steps; j++) {                                                                           \
            __m256i wv[NV];                                                                                         \
            for (int v = 0; v < NV; v++) wv[v] = _mm256_loadu_si256((const __m256i *)(w + v * wstep + TS_VEC * j)); \
            for (int i = 0; i < MR; i++) {                                                                          \
                int32_t step;                                                                                       \
                memcpy(&step, x[i] + TS_STEP * j, 4);                                                               \
                const __m256i xv = _mm256_set1_epi32(step);                                                         \
                for (int v = 0; v < NV; v++) a[i][v] = TS_DOT(a[i][v], xv, wv[v]);                                  \
            }                                                                                                       \
        }                                                                                                           \
        for (int i = 0; i < MR; i++)                                                                                \
            for (int v = 0; v < NV; v++) acc[i * NV + v] = a[i][v];                                                 \
    }
TS_KERNEL(ts16, TS_MR / 2, 2)
TS_KERNEL(ts8, TS_MR, 1)

/* The requantization of 8 columns, loaded once for a block of pixels: mnh_fq's where it holds, else mnh_rq's. */
typedef struct { mnh_fq8 f; mnh_rq8 r; } ts_rq8;

static inline ts_rq8 ts_rq8_load(const ts_pack *p, int c, int32_t zp, int32_t lo, int32_t hi) {
    ts_rq8 r;
    if (p->fq.ok) r.f = mnh_fq8_load(&p->fq, c, lo, hi);
    else r.r = mnh_rq8_load(&p->rq, c, zp, lo, hi);
    return r;
}

/* 8 sums requantized (zp added, clamped); mode 0: mnh_fq without left shifts or shifts of 0, 1: mnh_fq, 2: mnh_rq */
__attribute__((always_inline)) static inline __m256i ts_requant(__m256i acc, const ts_rq8 *r, int mode) {
    if (mode == 0) return mnh_fq8_apply(acc, &r->f, 0, 0);
    if (mode == 1) return mnh_fq8_apply(acc, &r->f, 1, 1);
    return mnh_requant8r(acc, &r->r);
}

/* Where one input pixel's outputs go: `base` + at[c] is column c's byte (when inside), oy, ox its first output. */
typedef struct { ptrdiff_t base; int oy, ox, inside; } ts_pos;

/* n bytes of columns c.. of one pixel, those whose output lies inside [0, out_h) x [0, out_w). */
static void ts_store_some(int8_t *out, const ts_pack *p, const ts_pos *q, const int8_t *bytes, int c, int n, int fw,
                          int out_h, int out_w) {
    for (int j = 0; j < n && c + j < p->cols; j++) {
        const int t = p->tap[c + j], oy = q->oy + t / fw, ox = q->ox + t % fw;
        if (oy >= 0 && oy < out_h && ox >= 0 && ox < out_w) out[q->base + p->at[c + j]] = bytes[j];
    }
}

static int ts_run(const mn_word *args) {
    const int n = MN_I(N), in_h = MN_I(IN_H), in_w = MN_I(IN_W), in_c = MN_I(IN_C), out_h = MN_I(OUT_H);
    const int out_w = MN_I(OUT_W), out_c = MN_I(OUT_C), fh = MN_I(F_H), fw = MN_I(F_W), pad_t = MN_I(PAD_T);
    const int pad_l = MN_I(PAD_L);
    const int32_t out_zp = MN_I(OUT_ZP), lo = MN_I(ACT_MIN), hi = MN_I(ACT_MAX);
    if (fh != MN_I(S_H) || fw != MN_I(S_W) || pad_t < 0 || pad_t >= fh || pad_l < 0 || pad_l >= fw ||
        out_h - 1 + pad_t >= in_h * fh || out_w - 1 + pad_l >= in_w * fw)
        return 0;
    const size_t pixels = (size_t)n * in_h * in_w, values = pixels * in_c;
    if (values + 64 > ts_cap) {
        ts_t *b = (ts_t *)realloc(ts_scratch, (values + 64) * sizeof(ts_t));
        if (!b) return 0;
        ts_scratch = b, ts_cap = values + 64;
    }
    const ts_pack *p = ts_prepare(args);
    if (!p || (!p->fq.ok && !p->rq.vec)) return 0;
    const int8_t *in = MN_P(const int8_t, IN);
    int8_t *out = MN_P(int8_t, OUT);
    ts_t *x = ts_scratch;
#if defined(TS_VNNI)
    mnh_flip(x, in, values);
#else
    for (size_t i = 0; i < values; i += 1 << 20) /* mnh_widen takes an int count */
        mnh_widen(x + i, in + i, (int)(values - i < (1u << 20) ? values - i : 1u << 20));
#endif
    memset(x + values, 0, 64 * sizeof(ts_t));
    const int blocks = p->blocks, steps = p->steps, runs8 = p->runs8, runs16 = p->runs16;
    const int mode = !p->fq.ok ? 2 : p->fq.any_left || p->fq.any_e0 ? 1 : 0;
    const size_t wstep = (size_t)steps * TS_VEC;
    __m256i acc[2 * TS_MR];
    const ts_t *px[TS_MR];
    ts_pos pos[TS_MR];
    int b = 0, iy = 0, ix = 0; /* the block's first pixel */
    for (size_t q0 = 0; q0 < pixels; q0 += TS_MR) {
        const int m = pixels - q0 < TS_MR ? (int)(pixels - q0) : TS_MR;
        for (int i = 0; i < TS_MR; i++) {
            if (i >= m) { px[i] = px[m - 1]; continue; } /* computed, not stored */
            px[i] = x + (q0 + i) * in_c;
            const int oy = iy * fh - pad_t, ox = ix * fw - pad_l;
            pos[i].oy = oy, pos[i].ox = ox;
            pos[i].base = (((ptrdiff_t)b * out_h + oy) * out_w + ox) * out_c;
            pos[i].inside = oy >= 0 && oy + fh <= out_h && ox >= 0 && ox + fw <= out_w;
            if (++ix == in_w && (ix = 0, ++iy == in_h)) iy = 0, b++;
        }
        int bl = 0;
        for (; bl + 2 <= blocks; bl += 2) {
            const int c = 8 * bl, at0 = p->at[c], at8 = p->at[c + 8];
            ts16(px, p->w + bl * wstep, wstep, steps, p->start + c, acc);
            if (m > TS_MR / 2) ts16(px + TS_MR / 2, p->w + bl * wstep, wstep, steps, p->start + c, acc + TS_MR);
            const ts_rq8 r0 = ts_rq8_load(p, c, out_zp, lo, hi), r1 = ts_rq8_load(p, c + 8, out_zp, lo, hi);
            for (int i = 0; i < m; i++) {
                const __m256i y0 = ts_requant(acc[2 * i], &r0, mode), y1 = ts_requant(acc[2 * i + 1], &r1, mode);
                const __m256i t = _mm256_permute4x64_epi64(_mm256_packs_epi32(y0, y1), 0xD8);
                const __m128i v = _mm_packs_epi16(_mm256_castsi256_si128(t), _mm256_extracti128_si256(t, 1));
                if (pos[i].inside && runs16) {
                    _mm_storeu_si128((__m128i *)(out + pos[i].base + at0), v);
                } else if (pos[i].inside && runs8) {
                    _mm_storel_epi64((__m128i *)(out + pos[i].base + at0), v);
                    _mm_storel_epi64((__m128i *)(out + pos[i].base + at8), _mm_unpackhi_epi64(v, v));
                } else {
                    int8_t tmp[16];
                    _mm_storeu_si128((__m128i *)tmp, v);
                    ts_store_some(out, p, &pos[i], tmp, c, 16, fw, out_h, out_w);
                }
            }
        }
        for (; bl < blocks; bl++) {
            const int c = 8 * bl, at0 = p->at[c];
            ts8(px, p->w + bl * wstep, wstep, steps, p->start + c, acc);
            const ts_rq8 r = ts_rq8_load(p, c, out_zp, lo, hi);
            for (int i = 0; i < m; i++) {
                const __m128i v = mnh_bytes8(ts_requant(acc[i], &r, mode));
                if (pos[i].inside && runs8) {
                    _mm_storel_epi64((__m128i *)(out + pos[i].base + at0), v);
                } else {
                    int8_t tmp[16];
                    _mm_storeu_si128((__m128i *)tmp, v);
                    ts_store_some(out, p, &pos[i], tmp, c, 8, fw, out_h, out_w);
                }
            }
        }
    }
    return 1;
}

void mn_transpose_conv_s8(const mn_word *args) {
    if (ts_run(args)) return;
    const int n = MN_I(N), in_h = MN_I(IN_H), in_w = MN_I(IN_W), in_c = MN_I(IN_C), out_h = MN_I(OUT_H);
    const int out_w = MN_I(OUT_W), out_c = MN_I(OUT_C), fh = MN_I(F_H), fw = MN_I(F_W), sh = MN_I(S_H);
    const int sw = MN_I(S_W), pad_t = MN_I(PAD_T), pad_l = MN_I(PAD_L);
    const int32_t in_off = MN_I(IN_OFF), out_zp = MN_I(OUT_ZP), lo = MN_I(ACT_MIN), hi = MN_I(ACT_MAX);
    /* x + offset must fit int16 (madd's pairs then cannot overflow); at most 64 taps per pixel on the stack */
    const tc_pack *p = in_off >= -32000 && in_off <= 32000 && fh * fw <= 64 && sh > 0 && sw > 0 ? tc_prepare(args)
                                                                                                 : NULL;
    if (!p) {
        mn_transpose_conv_s8_portable(args);
        return;
    }
    const int kp = p->kp, blocks = p->blocks;
    const size_t tap_size = (size_t)blocks * kp * 16, pixels = (size_t)n * in_h * in_w;
    const int8_t *in = MN_P(const int8_t, IN);
    int8_t *out = MN_P(int8_t, OUT);
    const __m256i off = _mm256_set1_epi16((int16_t)in_off);
    for (size_t q = 0; q < pixels; q++) {
        int16_t *d = p->x + q * 2 * kp;
        mnh_widen(d, in + q * in_c, in_c);
        for (int i = 0; i < 2 * kp; i += 16) /* the odd pad lane gets the offset too: its weight is 0 */
            _mm256_storeu_si256((__m256i *)(d + i), _mm256_add_epi16(_mm256_loadu_si256((const __m256i *)(d + i)), off));
    }
    /* the loop above may write up to 15 int16 past a pixel: the next pixel's widening overwrites them first */
    const int16_t *xs[64], *ws[64];
    for (int b = 0; b < n; b++)
        for (int oy = 0; oy < out_h; oy++) {
            int fys[64], iys[64], ny = 0;
            for (int fy = 0; fy < fh; fy++) {
                const int t = oy + pad_t - fy;
                if (t >= 0 && t % sh == 0 && t / sh < in_h) fys[ny] = fy, iys[ny++] = t / sh;
            }
            for (int ox = 0; ox < out_w; ox++) {
                int count = 0;
                for (int fx = 0; fx < fw; fx++) {
                    const int u = ox + pad_l - fx;
                    if (u < 0 || u % sw || u / sw >= in_w) continue;
                    for (int k = 0; k < ny; k++) {
                        xs[count] = p->x + (((size_t)b * in_h + iys[k]) * in_w + u / sw) * 2 * kp;
                        ws[count++] = p->w + ((size_t)fys[k] * fw + fx) * tap_size;
                    }
                }
                int8_t *o = out + (((size_t)b * out_h + oy) * out_w + ox) * out_c;
                __m256i acc[4];
                for (int j0 = 0; j0 < blocks; j0 += 4) {
                    const int m = blocks - j0 < 4 ? blocks - j0 : 4;
                    switch (m) {
                    case 1: pixel(acc, p, j0, 1, xs, ws, count); break;
                    case 2: pixel(acc, p, j0, 2, xs, ws, count); break;
                    case 3: pixel(acc, p, j0, 3, xs, ws, count); break;
                    default: pixel(acc, p, j0, 4, xs, ws, count); break;
                    }
                    for (int j = 0; j < m; j++) {
                        const int c = 8 * (j0 + j), nc = out_c - c < 8 ? out_c - c : 8;
                        mnh_store8(o + c, nc, acc[j], &p->rq, c, out_zp, lo, hi);
                    }
                }
            }
        }
}
#else
void mn_transpose_conv_s8(const mn_word *args) { mn_transpose_conv_s8_portable(args); }
#endif
