/* CONV_2D, float32: the host port (x86-64 with AVX2) of kernels/conv_2d_f32.c, same symbol, same argument words;
 * ungrouped filters (grouped ones run the portable kernel).
 *
 * Vectorized across output channels, never across a sum: each lane is one output channel's total, which adds its
 * taps in the portable kernel's order (filter_y, filter_x, in_channel; taps in the padding skipped), each product
 * rounded before its addition (no FMA), then the bias, then the clamp. Each sum is one chain of dependent
 * additions, so a tile keeps 8 to 12 of them in flight: P output pixels of a row that skip the same taps (the
 * interior ones all do) times B blocks of 8 output channels (8 x 1, 6 x 2, 4 x 3, 3 x 4), the pixels' inputs
 * broadcast, the blocks' weights loaded once per tap for the P pixels. The filter is repacked once per call site
 * as [channel block][tap][8 channels] (mn_host.h's cache). A compiler may swap the operands of the vector adds and
 * multiplies, which decides which NaN a sum of two NaNs keeps: a tile with a NaN sum is computed again with the
 * operand order fixed (mnh_add_ps, mnh_mul_ps).
 *
 * Paths: a row's pixels whose windows lie inside the input run as fconv_flat_run (tiles 7 x 1, 6 x 2, 3 x 3,
 * 2 x 4 called inline, each sum one run over the taps' precomputed offsets), or as fconv_single_run where there is
 * one input channel, 3 taps across at unit stride and dilation and at most 8 output channels (each input of a
 * filter row broadcast once for every pixel that takes it); border pixels and staged outputs take fconv_pixels.
 */
#define mn_conv_2d_f32 mn_conv_2d_f32_portable
#include "conv_2d_f32.portable.inc"
#undef mn_conv_2d_f32
#include "mn_host.h"

#if defined(MNH_AVX2)
typedef struct {
    float *w;    /* [out_c / 8 blocks][fh * fw * fc][8], zero past the last channel */
    float *bias; /* padded to whole blocks (0 without a bias) */
    int *off;    /* [fh * fw * fc]: each tap's input offset from its window's first (a window inside the input) */
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
    p->off = (int *)mnh_alloc((size_t)k * sizeof(int));
    if (!p->w || !p->bias || !p->off) return NULL;
    const int in_c = MN_I(IN_C), row = MN_I(IN_W) * in_c, fw = MN_I(F_W);
    for (int i = 0; i < k; i++) /* i = (fy * fw + fx) * in_c + c */
        p->off[i] = (i / (fw * in_c)) * MN_I(D_H) * row + (i / in_c % fw) * MN_I(D_W) * in_c + i % in_c;
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

typedef struct {
    const float *w, *bias; /* packed filter and bias */
    const int *off;        /* the taps' input offsets (fconv_pack.off) */
    const float *lo, *hi;
    int k, in_c, fh, fw, dw, has_bias;
    int single;      /* one input channel, unit stride and dilation across, fw 3, at most 8 output channels */
    size_t row_step; /* floats between two filter rows' inputs (dh * in_w * in_c) */
    size_t x_step, w_step; /* floats between two pixels' inputs (stride * in_c), between two blocks' weights */
} fconv_call;

/* The sums acc of P pixels x B blocks from block bl (exact: some sum is a NaN, so the bias is added the scalar
 * way) plus the bias, clamped, stored at o[p] + 8 * (bl + j): the last block's lanes past out_c are not stored. */
__attribute__((always_inline)) static inline void fconv_store(const fconv_call *cc, const __m256 *acc, int exact, int bl,
                                                              float *const *o, int out_c, const int P, const int B) {
    const __m256 lo = _mm256_set1_ps(*cc->lo), hi = _mm256_set1_ps(*cc->hi);
    for (int j = 0; j < B; j++) {
        const int c0 = (bl + j) * 8;
        const __m256 bias = _mm256_loadu_ps(cc->bias + c0);
        for (int p = 0; p < P; p++) {
            __m256 y = acc[p * B + j];
            if (cc->has_bias) y = exact ? mnh_add_ps(y, bias) : _mm256_add_ps(y, bias);
            y = fclamp(y, lo, hi);
            if (c0 + 8 <= out_c) {
                _mm256_storeu_ps(o[p] + c0, y);
            } else {
                float tail[8];
                _mm256_storeu_ps(tail, y);
                for (int i = 0; c0 + i < out_c; i++) o[p][c0 + i] = tail[i];
            }
        }
    }
}

/* P pixels (inputs x + p * x_step) x B blocks of 8 channels from block `bl`: each lane's sum over taps (fy, fx, c)
 * of rows x_rows[fy] (nr rows), columns [fx0, fx1), then bias and clamp, stored at o[p] + 8 * (bl + j). */
__attribute__((always_inline)) static inline void fconv_tile(const fconv_call *cc, const float *const *x_rows, int nr,
                                                             const int *fy_of, int fx0, int fx1, int bl, float **o,
                                                             int out_c, const int P, const int B) {
    __m256 acc[P * B];
    const int in_c = cc->in_c, fw = cc->fw, dw = cc->dw;
    const size_t xs = cc->x_step, ws = cc->w_step;
    const float *w0 = cc->w + (size_t)bl * ws;
/* one tap: B weight vectors at w, P pixels' inputs at x; ADD and MUL the vector operations */
#define TAP(x, w, ADD, MUL)                                                                                        \
    do {                                                                                                           \
        __m256 wv[B];                                                                                              \
        for (int j = 0; j < B; j++) wv[j] = _mm256_loadu_ps((w) + j * ws);                                         \
        for (int p = 0; p < P; p++) {                                                                              \
            const __m256 v = _mm256_broadcast_ss((x) + p * xs);                                                    \
            for (int j = 0; j < B; j++) acc[p * B + j] = ADD(acc[p * B + j], MUL(v, wv[j]));                       \
        }                                                                                                          \
    } while (0)
#define SUMS(ADD, MUL)                                                                                             \
    do {                                                                                                           \
        for (int i = 0; i < P * B; i++) acc[i] = _mm256_setzero_ps();                                              \
        for (int r = 0; r < nr; r++) {                                                                             \
            const float *x = x_rows[r], *w = w0 + (size_t)fy_of[r] * fw * in_c * 8;                                \
            if (dw == 1) { /* the row's taps (fx, c) are contiguous in the input and in the weights */             \
                for (int t = fx0 * in_c; t < fx1 * in_c; t++) TAP(x + t, w + (size_t)t * 8, ADD, MUL);             \
            } else {                                                                                               \
                for (int fx = fx0; fx < fx1; fx++)                                                                 \
                    for (int c = 0; c < in_c; c++)                                                                 \
                        TAP(x + (size_t)fx * dw * in_c + c, w + ((size_t)fx * in_c + c) * 8, ADD, MUL);           \
            }                                                                                                      \
        }                                                                                                          \
    } while (0)
    SUMS(_mm256_add_ps, _mm256_mul_ps);
    const int exact = mnh_any_nan(acc, P * B);
    if (exact) SUMS(mnh_add_ps, mnh_mul_ps); /* a NaN sum: again, each NaN the scalar code's (total's, input's) */
#undef SUMS
#undef TAP
    fconv_store(cc, acc, exact, bl, o, out_c, P, B);
}

/* a tile of `pixels` pixels (1 to the shape's P), all out_c channels: blocks B at a time */
static void fconv_pixels(const fconv_call *cc, const float *const *x_rows, int nr, const int *fy_of, int fx0, int fx1,
                         float **o, int out_c, int pixels) {
    const int blocks = mnh_blocks8(out_c);
#define TILE(P, B) fconv_tile(cc, x_rows, nr, fy_of, fx0, fx1, bl, o, out_c, P, B)
#define BLOCKS(P)                                                                                                  \
    do {                                                                                                           \
        int bl = 0;                                                                                                \
        for (; bl + 4 <= blocks; bl += 4) TILE(P, 4);                                                              \
        switch (blocks - bl) {                                                                                     \
        case 3: TILE(P, 3); break;                                                                                 \
        case 2: TILE(P, 2); break;                                                                                 \
        case 1: TILE(P, 1); break;                                                                                 \
        default: break;                                                                                            \
        }                                                                                                          \
    } while (0)
    const int bl = 0;
    if (blocks == 1) {
        switch (pixels) {
        case 8: TILE(8, 1); break;
        case 7: TILE(7, 1); break;
        case 6: TILE(6, 1); break;
        case 5: TILE(5, 1); break;
        case 4: TILE(4, 1); break;
        case 3: TILE(3, 1); break;
        case 2: TILE(2, 1); break;
        default: TILE(1, 1); break;
        }
    } else if (blocks == 2) {
        switch (pixels) {
        case 6: TILE(6, 2); break;
        case 5: TILE(5, 2); break;
        case 4: TILE(4, 2); break;
        case 3: TILE(3, 2); break;
        case 2: TILE(2, 2); break;
        default: TILE(1, 2); break;
        }
    } else if (blocks == 3) {
        switch (pixels) {
        case 4: TILE(4, 3); break;
        case 3: TILE(3, 3); break;
        case 2: TILE(2, 3); break;
        default: TILE(1, 3); break;
        }
    } else {
        switch (pixels) {
        case 3: BLOCKS(3); break;
        case 2: BLOCKS(2); break;
        default: BLOCKS(1); break;
        }
    }
#undef BLOCKS
#undef TILE
}

/* ---- windows inside the input: runs of pixels of a row, without per-tile setup ----------------------------------
 * P pixels (windows at x + p * x_step, outputs at o + p * out_c) x B blocks from block bl: each lane's sum over
 * every tap in the portable order, as one run over the taps' offsets (fconv_pack.off). */
__attribute__((always_inline)) static inline void fconv_flat(const fconv_call *cc, const float *x, float *o, int out_c,
                                                             int bl, const int P, const int B) {
    __m256 acc[P * B];
    const size_t xs = cc->x_step, ws = cc->w_step;
    const float *w0 = cc->w + (size_t)bl * ws;
    const int *off = cc->off, k = cc->k;
#define FLAT(ADD, MUL)                                                                                             \
    do {                                                                                                           \
        for (int i = 0; i < P * B; i++) acc[i] = _mm256_setzero_ps();                                              \
        for (int t = 0; t < k; t++) {                                                                              \
            const float *xt = x + off[t], *wt = w0 + (size_t)t * 8;                                                \
            __m256 wv[B];                                                                                          \
            for (int j = 0; j < B; j++) wv[j] = _mm256_loadu_ps(wt + j * ws);                                      \
            for (int p = 0; p < P; p++) {                                                                          \
                const __m256 v = _mm256_broadcast_ss(xt + p * xs);                                                 \
                for (int j = 0; j < B; j++) acc[p * B + j] = ADD(acc[p * B + j], MUL(v, wv[j]));                   \
            }                                                                                                      \
        }                                                                                                          \
    } while (0)
    FLAT(_mm256_add_ps, _mm256_mul_ps);
    const int exact = mnh_any_nan(acc, P * B);
    if (exact) FLAT(mnh_add_ps, mnh_mul_ps); /* a NaN sum: again, each NaN the scalar code's (total's, input's) */
#undef FLAT
    float *op[P];
    for (int p = 0; p < P; p++) op[p] = o + (size_t)p * out_c;
    fconv_store(cc, acc, exact, bl, op, out_c, P, B);
}

/* P pixels, all blocks (4 at a time, then the last 1 to 3) */
__attribute__((always_inline)) static inline void fconv_flat_blocks(const fconv_call *cc, const float *x, float *o,
                                                                    int out_c, const int P) {
    const int blocks = mnh_blocks8(out_c);
    int bl = 0;
    for (; bl + 4 <= blocks; bl += 4) fconv_flat(cc, x, o, out_c, bl, P, 4);
    switch (blocks - bl) {
    case 3: fconv_flat(cc, x, o, out_c, bl, P, 3); break;
    case 2: fconv_flat(cc, x, o, out_c, bl, P, 2); break;
    case 1: fconv_flat(cc, x, o, out_c, bl, P, 1); break;
    default: break;
    }
}

/* One input channel, unit stride and dilation across, 3 taps per filter row, one block of channels: P pixels
 * side by side read P + 2 inputs per filter row, each broadcast once and multiplied into every pixel that takes it
 * (pixel p's tap fx is input p + fx: in increasing e = p + fx, each pixel's taps come in the portable order, filter
 * row by filter row). */
__attribute__((always_inline)) static inline void fconv_single(const fconv_call *cc, const float *x, float *o,
                                                               int out_c, const int P) {
    __m256 acc[P];
    const int fh = cc->fh;
    const size_t rs = cc->row_step;
#define ROWS(ADD, MUL)                                                                                             \
    do {                                                                                                           \
        for (int i = 0; i < P; i++) acc[i] = _mm256_setzero_ps();                                                  \
        const float *xr = x, *wr = cc->w;                                                                          \
        for (int fy = 0; fy < fh; fy++, xr += rs, wr += 24) {                                                      \
            const __m256 w0 = _mm256_loadu_ps(wr), w1 = _mm256_loadu_ps(wr + 8), w2 = _mm256_loadu_ps(wr + 16);     \
            _Pragma("GCC unroll 16") for (int e = 0; e < P + 2; e++) {                                             \
                const __m256 v = _mm256_broadcast_ss(xr + e);                                                      \
                if (e - 2 >= 0 && e - 2 < P) acc[e - 2] = ADD(acc[e - 2], MUL(v, w2));                             \
                if (e - 1 >= 0 && e - 1 < P) acc[e - 1] = ADD(acc[e - 1], MUL(v, w1));                             \
                if (e < P) acc[e] = ADD(acc[e], MUL(v, w0));                                                       \
            }                                                                                                      \
        }                                                                                                          \
    } while (0)
    ROWS(_mm256_add_ps, _mm256_mul_ps);
    const int exact = mnh_any_nan(acc, P);
    if (exact) ROWS(mnh_add_ps, mnh_mul_ps); /* a NaN sum: again, each NaN the scalar code's (total's, input's) */
#undef ROWS
    const __m256 lo = _mm256_set1_ps(*cc->lo), hi = _mm256_set1_ps(*cc->hi), bias = _mm256_loadu_ps(cc->bias);
    for (int p = 0; p < P; p++) {
        __m256 y = acc[p];
        if (cc->has_bias) y = exact ? mnh_add_ps(y, bias) : _mm256_add_ps(y, bias);
        y = fclamp(y, lo, hi);
        float *dst = o + (size_t)p * out_c;
        if (out_c == 8) {
            _mm256_storeu_ps(dst, y);
        } else {
            float tail[8];
            _mm256_storeu_ps(tail, y);
            for (int i = 0; i < out_c; i++) dst[i] = tail[i];
        }
    }
}

/* fconv_single over n pixels of a row: tiles of 8, the last 1 to 7 */
__attribute__((noinline)) static void fconv_single_run(const fconv_call *cc, const float *x, float *o, int out_c,
                                                       int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8) fconv_single(cc, x + i, o + (size_t)i * out_c, out_c, 8);
    switch (n - i) {
    case 7: fconv_single(cc, x + i, o + (size_t)i * out_c, out_c, 7); break;
    case 6: fconv_single(cc, x + i, o + (size_t)i * out_c, out_c, 6); break;
    case 5: fconv_single(cc, x + i, o + (size_t)i * out_c, out_c, 5); break;
    case 4: fconv_single(cc, x + i, o + (size_t)i * out_c, out_c, 4); break;
    case 3: fconv_single(cc, x + i, o + (size_t)i * out_c, out_c, 3); break;
    case 2: fconv_single(cc, x + i, o + (size_t)i * out_c, out_c, 2); break;
    case 1: fconv_single(cc, x + i, o + (size_t)i * out_c, out_c, 1); break;
    default: break;
    }
}

/* n pixels of a row whose windows lie inside the input (the first's window at x, its output at o): tiles of
 * 7 x 1, 6 x 2, 3 x 3 or 2 x 4 blocks (the sums, weights and a broadcast input within the 16 vector registers),
 * the last pixels in one smaller tile */
static void fconv_flat_run(const fconv_call *cc, const float *x, float *o, int out_c, int n) {
    const int blocks = mnh_blocks8(out_c);
    const size_t xs = cc->x_step;
    int i = 0;
#define RUN(P, B)                                                                                                  \
    for (; i + P <= n; i += P) fconv_flat(cc, x + i * xs, o + (size_t)i * out_c, out_c, 0, P, B)
#define REST(P, B)                                                                                                 \
    case P: fconv_flat(cc, x + i * xs, o + (size_t)i * out_c, out_c, 0, P, B); break
    if (cc->single) {
        fconv_single_run(cc, x, o, out_c, n);
    } else if (blocks == 1) {
        RUN(7, 1);
        switch (n - i) { REST(6, 1); REST(5, 1); REST(4, 1); REST(3, 1); REST(2, 1); REST(1, 1); default: break; }
    } else if (blocks == 2) {
        RUN(6, 2);
        switch (n - i) { REST(5, 2); REST(4, 2); REST(3, 2); REST(2, 2); REST(1, 2); default: break; }
    } else if (blocks == 3) {
        RUN(3, 3);
        switch (n - i) { REST(2, 3); REST(1, 3); default: break; }
    } else {
        for (; i + 2 <= n; i += 2) fconv_flat_blocks(cc, x + i * xs, o + (size_t)i * out_c, out_c, 2);
        if (n - i == 1) fconv_flat_blocks(cc, x + i * xs, o + (size_t)i * out_c, out_c, 1);
    }
#undef RUN
#undef REST
}

/* the pixels of a tile of blocks (8 x 1, 6 x 2, 4 x 3, 3 x more) */
static inline int fconv_tile_pixels(int out_c) {
    const int blocks = mnh_blocks8(out_c);
    return blocks == 1 ? 8 : blocks == 2 ? 6 : blocks == 3 ? 4 : 3;
}

/* [*lo, *hi): the output columns whose every tap lies inside the input (origin ox * s - pad, taps taps) */
static inline void interior(int out, int s, int pad, int d, int size, int taps, int *lo, int *hi) {
    int a = 0, b = out;
    while (a < out && a * s - pad < 0) a++;
    while (b > a && (b - 1) * s - pad + (taps - 1) * d >= size) b--;
    *lo = a, *hi = b;
}

void mn_conv_2d_f32(const mn_word *args) {
    const fconv_pack *p = MN_I(IN_C) == MN_I(F_C) ? fconv_prepare(args) : NULL;
    if (!p) { mn_conv_2d_f32_portable(args); return; }
    float *out = MN_P(float, OUT);
    const float *in = MN_P(const float, IN);
    const int n = MN_I(N), in_h = MN_I(IN_H), in_w = MN_I(IN_W), in_c = MN_I(IN_C);
    const int out_h = MN_I(OUT_H), out_w = MN_I(OUT_W), out_c = MN_I(OUT_C);
    const int fh = MN_I(F_H), fw = MN_I(F_W), sh = MN_I(S_H), sw = MN_I(S_W);
    const int dh = MN_I(D_H), dw = MN_I(D_W), pad_t = MN_I(PAD_T), pad_l = MN_I(PAD_L), stage = MN_I(STAGE);
    const float lo = mn_f32_arg(args, ACT_MIN), hi = mn_f32_arg(args, ACT_MAX);
    const int k = fh * fw * in_c, tp = fconv_tile_pixels(out_c);
    const fconv_call cc = {p->w, p->bias, p->off, &lo, &hi, k, in_c, fh, fw, dw, MN_P(const float, BIAS) != NULL,
                           in_c == 1 && sw == 1 && dw == 1 && fw == 3 && out_c <= 8, (size_t)dh * in_w * in_c,
                           (size_t)sw * in_c, (size_t)k * 8};
    /* a streamed output (stage): a tile's pixels stored once all are done, directly when one tile call sums all
     * their channels before storing any */
    const int staging = stage && mnh_blocks8(out_c) > 4;
    float staged[staging ? 8 * out_c : 1];
    const float *x_rows[fh];
    int fy_of[fh];
    float *o[8];
    int in_lo, in_hi;
    interior(out_w, sw, pad_l, dw, in_w, fw, &in_lo, &in_hi);

    for (int b = 0; b < n; b++) {
        const float *image = in + (size_t)b * in_h * in_w * in_c;
        for (int oy = 0; oy < out_h; oy++) {
            const int iy0 = oy * sh - pad_t;
            int fy0, fy1;
            mn_f32_taps(iy0, dh, in_h, fh, &fy0, &fy1);
            const int nr = fy1 > fy0 ? fy1 - fy0 : 0;
            for (int r = 0; r < nr; r++) fy_of[r] = fy0 + r;
            float *out_row = out + ((size_t)b * out_h + oy) * out_w * out_c;
            for (int ox = 0; ox < out_w;) {
                const int ix0 = ox * sw - pad_l;
                if (!staging && nr == fh && ox == in_lo && in_hi > in_lo) { /* the row's windows inside the input */
                    fconv_flat_run(&cc, image + (size_t)iy0 * in_w * in_c + (ptrdiff_t)ix0 * in_c,
                                   out_row + (size_t)ox * out_c, out_c, in_hi - in_lo);
                    ox = in_hi;
                    continue;
                }
                int fx0 = 0, fx1 = fw, pixels = 1;
                if (ox >= in_lo && ox < in_hi) { /* every tap: a tile of up to tp pixels */
                    pixels = in_hi - ox < tp ? in_hi - ox : tp;
                } else {
                    mn_f32_taps(ix0, dw, in_w, fw, &fx0, &fx1);
                }
                for (int r = 0; r < nr; r++)
                    x_rows[r] = image + (size_t)(iy0 + fy_of[r] * dh) * in_w * in_c + (ptrdiff_t)ix0 * in_c;
                for (int i = 0; i < pixels; i++)
                    o[i] = staging ? staged + (size_t)i * out_c : out_row + (size_t)(ox + i) * out_c;
                fconv_pixels(&cc, x_rows, nr, fy_of, fx0, fx1, o, out_c, pixels);
                if (staging) memcpy(out_row + (size_t)ox * out_c, staged, sizeof(float) * out_c * pixels);
                ox += pixels;
            }
        }
    }
}
#else
void mn_conv_2d_f32(const mn_word *args) { mn_conv_2d_f32_portable(args); }
#endif
