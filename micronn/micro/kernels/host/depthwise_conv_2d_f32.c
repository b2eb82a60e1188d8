/* DEPTHWISE_CONV_2D, float32: the host port (x86-64 with AVX2) of kernels/depthwise_conv_2d_f32.c, same symbol,
 * same argument words; depth multiplier 1 (others run the portable kernel).
 *
 * Vectorized across channels, never across a sum: each lane is one channel's total over the valid taps in the
 * portable kernel's order (filter_y, filter_x), each product rounded before its addition (no FMA), then
 * bias + total and the clamp. Each sum is one chain of dependent additions, so a tile keeps 8 of them in flight: P
 * output pixels of a row that skip the same taps (the interior ones all do) times B blocks of 8 channels (8 x 1,
 * 4 x 2). Channels past the last 8 are summed one at a time the same way. A tile with a NaN sum is computed again
 * with the vector operations' operand order fixed (mnh_add_ps, mnh_mul_ps: a compiler may swap them). A row's
 * pixels whose windows lie inside the (padded) input, channels a multiple of 8, run as fdw_flat_run (tiles called
 * inline, tap pointers stepped); the rest as fdw_run's tiles.
 */
#define mn_depthwise_conv_2d_f32 mn_depthwise_conv_2d_f32_portable
#include "depthwise_conv_2d_f32.portable.inc"
#undef mn_depthwise_conv_2d_f32
#include "mn_host.h"

#if defined(MNH_AVX2)
typedef struct {
    const float *filter, *bias;
    int c_n, fw, dw;
    size_t x_step, row; /* floats between two pixels' inputs (stride * c_n); input row length */
    float lo, hi;
} fdw_call;

/* The sums acc of P pixels x B blocks of 8 channels from channel c (exact: some sum is a NaN, so the bias is added
 * the scalar way) plus the bias, clamped, stored at o[p] + c + 8 * j. */
__attribute__((always_inline)) static inline void fdw_store(const fdw_call *cc, const __m256 *acc, int exact, int c,
                                                            float *const *o, const int P, const int B) {
    const __m256 lo = _mm256_set1_ps(cc->lo), hi = _mm256_set1_ps(cc->hi);
    for (int j = 0; j < B; j++) {
        const __m256 bias = cc->bias ? _mm256_loadu_ps(cc->bias + c + 8 * j) : _mm256_setzero_ps();
        for (int p = 0; p < P; p++) {
            __m256 total = acc[p * B + j];
            if (cc->bias) total = exact ? mnh_add_ps(bias, total) : _mm256_add_ps(bias, total); /* a NaN bias wins */
            total = _mm256_blendv_ps(total, lo, _mm256_cmp_ps(total, lo, _CMP_LT_OQ));
            total = _mm256_blendv_ps(total, hi, _mm256_cmp_ps(hi, total, _CMP_LT_OQ));
            _mm256_storeu_ps(o[p] + c + 8 * j, total);
        }
    }
}

/* P pixels (inputs x + p * x_step) x B blocks of 8 channels from channel c: each lane's sum over taps (fy, fx) of
 * the rows x (nr of them, dh rows apart, first filter row fy0), columns [fx0, fx1), then bias and clamp. */
__attribute__((always_inline)) static inline void fdw_tile(const fdw_call *cc, const float *x, int nr, int dh, int fy0,
                                                           int fx0, int fx1, int c, float **o, const int P,
                                                           const int B) {
    __m256 acc[P * B];
#define SUMS(ADD, MUL)                                                                                             \
    do {                                                                                                           \
        for (int i = 0; i < P * B; i++) acc[i] = _mm256_setzero_ps();                                              \
        for (int r = 0; r < nr; r++) {                                                                             \
            const float *x_row = x + (size_t)r * dh * cc->row + c;                                                 \
            const float *w_row = cc->filter + (size_t)(fy0 + r) * cc->fw * cc->c_n + c;                            \
            for (int fx = fx0; fx < fx1; fx++) {                                                                   \
                const float *xt = x_row + (size_t)fx * cc->dw * cc->c_n;                                           \
                for (int j = 0; j < B; j++) {                                                                      \
                    const __m256 wv = _mm256_loadu_ps(w_row + (size_t)fx * cc->c_n + 8 * j);                       \
                    for (int p = 0; p < P; p++)                                                                    \
                        acc[p * B + j] = ADD(acc[p * B + j], MUL(_mm256_loadu_ps(xt + p * cc->x_step + 8 * j), wv)); \
                }                                                                                                  \
            }                                                                                                      \
        }                                                                                                          \
    } while (0)
    SUMS(_mm256_add_ps, _mm256_mul_ps);
    const int exact = mnh_any_nan(acc, P * B);
    if (exact) SUMS(mnh_add_ps, mnh_mul_ps); /* a NaN sum: again, each NaN the scalar code's (total's, input's) */
#undef SUMS
    fdw_store(cc, acc, exact, c, o, P, B);
}

/* ---- windows inside the input: runs of pixels of a row, without per-tile setup ----------------------------------
 * P pixels (windows at x + p * x_step, outputs at o + p * c_n) x B blocks of 8 channels from channel c: each lane's
 * sum over every tap (fy, fx) in order, the taps' input offsets from the window's first stepped per filter row. */
__attribute__((always_inline)) static inline void fdw_flat(const fdw_call *cc, const float *x, float *o, int fh,
                                                           size_t row_step, int c, const int P, const int B) {
    __m256 acc[P * B];
    const int fw = cc->fw, c_n = cc->c_n;
    const size_t xs = cc->x_step, tap = (size_t)cc->dw * c_n;
#define FLAT(ADD, MUL)                                                                                             \
    do {                                                                                                           \
        for (int i = 0; i < P * B; i++) acc[i] = _mm256_setzero_ps();                                              \
        const float *xr = x + c, *wr = cc->filter + c;                                                             \
        for (int fy = 0; fy < fh; fy++, xr += row_step, wr += (size_t)fw * c_n) {                                  \
            const float *xt = xr, *wt = wr;                                                                        \
            for (int fx = 0; fx < fw; fx++, xt += tap, wt += c_n)                                                  \
                for (int j = 0; j < B; j++) {                                                                      \
                    const __m256 wv = _mm256_loadu_ps(wt + 8 * j);                                                 \
                    for (int p = 0; p < P; p++)                                                                    \
                        acc[p * B + j] = ADD(acc[p * B + j], MUL(_mm256_loadu_ps(xt + p * xs + 8 * j), wv));       \
                }                                                                                                  \
        }                                                                                                          \
    } while (0)
    FLAT(_mm256_add_ps, _mm256_mul_ps);
    const int exact = mnh_any_nan(acc, P * B);
    if (exact) FLAT(mnh_add_ps, mnh_mul_ps); /* a NaN sum: again, each NaN the scalar code's (total's, input's) */
#undef FLAT
    float *op[P];
    for (int p = 0; p < P; p++) op[p] = o + (size_t)p * c_n;
    fdw_store(cc, acc, exact, c, op, P, B);
}

/* n pixels of a row whose windows lie inside the input (the first's window at x, its output at o), channels a
 * multiple of 8 (8 or 16 when streamed: a pixel's channels all summed before it is stored): tiles of 8 pixels x 1
 * block (7 x 1 where more blocks follow), 4 x 2 */
static void fdw_flat_run(const fdw_call *cc, const float *x, float *o, int fh, size_t row_step, int n) {
    const int c_n = cc->c_n;
    const size_t xs = cc->x_step;
    int i = 0;
#define REST(P, B)                                                                                                 \
    case P: fdw_flat(cc, x + i * xs, o + (size_t)i * c_n, fh, row_step, c, P, B); break
    if (c_n == 8) {
        const int c = 0;
        for (; i + 8 <= n; i += 8) fdw_flat(cc, x + i * xs, o + (size_t)i * c_n, fh, row_step, 0, 8, 1);
        switch (n - i) { REST(7, 1); REST(6, 1); REST(5, 1); REST(4, 1); REST(3, 1); REST(2, 1); REST(1, 1); default: break; }
    } else {
        for (; i + 4 <= n; i += 4) {
            int c = 0;
            for (; c + 16 <= c_n; c += 16) fdw_flat(cc, x + i * xs, o + (size_t)i * c_n, fh, row_step, c, 4, 2);
            if (c < c_n) fdw_flat(cc, x + i * xs, o + (size_t)i * c_n, fh, row_step, c, 4, 1);
        }
        for (; i < n; i++) {
            int c = 0;
            for (; c + 16 <= c_n; c += 16) fdw_flat(cc, x + i * xs, o + (size_t)i * c_n, fh, row_step, c, 1, 2);
            if (c < c_n) fdw_flat(cc, x + i * xs, o + (size_t)i * c_n, fh, row_step, c, 1, 1);
        }
    }
#undef REST
}

static void fdw_run(const mn_word *args) {
    float *out = MN_P(float, OUT);
    const float *in = MN_P(const float, IN), *filter = MN_P(const float, FILTER), *bias = MN_P(const float, BIAS);
    const int n = MN_I(N), in_h = MN_I(IN_H), in_w = MN_I(IN_W), c_n = MN_I(IN_C);
    const int out_h = MN_I(OUT_H), out_w = MN_I(OUT_W);
    const int fh = MN_I(F_H), fw = MN_I(F_W), sh = MN_I(S_H), sw = MN_I(S_W);
    const int dh = MN_I(D_H), dw = MN_I(D_W), pad_t = MN_I(PAD_T), pad_l = MN_I(PAD_L), stage = MN_I(STAGE);
    const float flo = mn_f32_arg(args, ACT_MIN), fhi = mn_f32_arg(args, ACT_MAX);
    const fdw_call cc = {filter, bias, c_n, fw, dw, (size_t)sw * c_n, (size_t)in_w * c_n, flo, fhi};
    const int blocks = c_n / 8, tp = blocks == 1 ? 8 : 4;
    /* a streamed output (stage): a tile's pixels stored once all are done, directly when one tile call sums all
     * their channels before storing any (8 or 16 channels) */
    const int staging = stage && c_n != 8 && c_n != 16;
    const int flat = c_n % 8 == 0 && !staging;
    float staged[staging ? 8 * c_n : 1];
    float *o[8];
    int in_lo = 0, in_hi = out_w; /* the output columns whose every tap lies inside the input */
    while (in_lo < out_w && in_lo * sw - pad_l < 0) in_lo++;
    while (in_hi > in_lo && (in_hi - 1) * sw - pad_l + (fw - 1) * dw >= in_w) in_hi--;

    for (int b = 0; b < n; b++) {
        const float *image = in + (size_t)b * in_h * in_w * c_n;
        for (int oy = 0; oy < out_h; oy++) {
            const int iy0 = oy * sh - pad_t;
            int fy0, fy1;
            mn_f32_taps(iy0, dh, in_h, fh, &fy0, &fy1);
            const int nr = fy1 > fy0 ? fy1 - fy0 : 0;
            float *out_row = out + ((size_t)b * out_h + oy) * out_w * c_n;
            for (int ox = 0; ox < out_w;) {
                const int ix0 = ox * sw - pad_l;
                if (flat && nr == fh && ox == in_lo && in_hi > in_lo) { /* the row's windows inside the input */
                    fdw_flat_run(&cc, image + ((ptrdiff_t)iy0 * in_w + ix0) * c_n, out_row + (size_t)ox * c_n, fh,
                                 (size_t)dh * in_w * c_n, in_hi - in_lo);
                    ox = in_hi;
                    continue;
                }
                int fx0 = 0, fx1 = fw, pixels = 1;
                if (ox >= in_lo && ox < in_hi) { /* every tap: a tile of up to tp pixels */
                    pixels = in_hi - ox < tp ? in_hi - ox : tp;
                } else {
                    mn_f32_taps(ix0, dw, in_w, fw, &fx0, &fx1);
                }
                const float *x = image + ((ptrdiff_t)(iy0 + fy0 * dh) * in_w + ix0) * c_n;
                for (int i = 0; i < pixels; i++)
                    o[i] = staging ? staged + (size_t)i * c_n : out_row + (size_t)(ox + i) * c_n;
                int c = 0;
#define TILES(P)                                                                                                   \
    do {                                                                                                           \
        for (; c + 16 <= c_n; c += 16) fdw_tile(&cc, x, nr, dh, fy0, fx0, fx1, c, o, P, 2);                       \
        for (; c + 8 <= c_n; c += 8) fdw_tile(&cc, x, nr, dh, fy0, fx0, fx1, c, o, P, 1);                         \
    } while (0)
                if (pixels > 4) { /* 8 channels: tp = 8 */
                    switch (pixels) {
                    case 8: fdw_tile(&cc, x, nr, dh, fy0, fx0, fx1, 0, o, 8, 1); break;
                    case 7: fdw_tile(&cc, x, nr, dh, fy0, fx0, fx1, 0, o, 7, 1); break;
                    case 6: fdw_tile(&cc, x, nr, dh, fy0, fx0, fx1, 0, o, 6, 1); break;
                    default: fdw_tile(&cc, x, nr, dh, fy0, fx0, fx1, 0, o, 5, 1); break;
                    }
                    c = 8;
                } else {
                    switch (pixels) {
                    case 4: TILES(4); break;
                    case 3: TILES(3); break;
                    case 2: TILES(2); break;
                    default: TILES(1); break;
                    }
                }
#undef TILES
                for (int i = 0; i < pixels; i++) /* the channels past the last 8, one at a time */
                    for (int ch = c; ch < c_n; ch++) {
                        float total = 0.0f;
                        for (int r = 0; r < nr; r++) {
                            const float *x_row = x + (size_t)r * dh * in_w * c_n + i * cc.x_step + ch;
                            const float *w_row = filter + (size_t)(fy0 + r) * fw * c_n + ch;
                            for (int fx = fx0; fx < fx1; fx++)
                                total = mn_f32_mac(total, x_row[(size_t)fx * dw * c_n], w_row[(size_t)fx * c_n]);
                        }
                        if (bias) total = bias[ch] + total;
                        o[i][ch] = mn_f32_clamp(total, flo, fhi);
                    }
                if (staging) memcpy(out_row + (size_t)ox * c_n, staged, sizeof(float) * c_n * pixels);
                ox += pixels;
            }
        }
    }
}
/* A zero-padded copy of the input, per call site, whose every window lies inside it: the border pixels then take
 * the interior's whole tiles. Exact when every weight is finite: a pad tap adds 0 * w = +-0, and a running sum
 * that starts at +0 is never -0 (+0 + -0 = +0), so adding +-0 leaves it as it was, a NaN's payload included. */
typedef struct {
    float *x;      /* [n][ph][pw][c], zero outside the copied input; NULL: run unpadded */
    int ph, pw;
} fdw_padded;

static const fdw_padded *fdw_pad_prepare(const mn_word *args) {
    mnh_slot *slot;
    fdw_padded *p = (fdw_padded *)mnh_lookup(args, &slot);
    if (p) return p;
    p = (fdw_padded *)mnh_alloc(sizeof(fdw_padded));
    if (!p) return NULL;
    const int n = MN_I(N), in_h = MN_I(IN_H), in_w = MN_I(IN_W), c_n = MN_I(IN_C), fh = MN_I(F_H), fw = MN_I(F_W);
    const int pad_t = MN_I(PAD_T), pad_l = MN_I(PAD_L);
    const int need_h = (MN_I(OUT_H) - 1) * MN_I(S_H) + (fh - 1) * MN_I(D_H) + 1;
    const int need_w = (MN_I(OUT_W) - 1) * MN_I(S_W) + (fw - 1) * MN_I(D_W) + 1;
    const int ph = need_h > pad_t + in_h ? need_h : pad_t + in_h, pw = need_w > pad_l + in_w ? need_w : pad_l + in_w;
    const float *filter = MN_P(const float, FILTER);
    int finite = pad_t >= 0 && pad_l >= 0 && (pad_t > 0 || pad_l > 0 || need_h > in_h || need_w > in_w);
    for (long i = 0; finite && i < (long)fh * fw * c_n; i++) { /* the exponent not all ones */
        uint32_t bits;
        memcpy(&bits, filter + i, sizeof bits);
        finite = (bits & 0x7f800000u) != 0x7f800000u;
    }
    const size_t floats = (size_t)n * ph * pw * c_n;
    if (finite && floats <= ((size_t)1 << 20)) {
        p->x = (float *)mnh_alloc(floats * sizeof(float));
        p->ph = ph, p->pw = pw;
    }
    mnh_keep(slot, args, p);
    return p;
}

void mn_depthwise_conv_2d_f32(const mn_word *args) {
    if (MN_I(MULT) != 1) { mn_depthwise_conv_2d_f32_portable(args); return; }
    const fdw_padded *p = fdw_pad_prepare(args);
    if (!p || !p->x) { fdw_run(args); return; }
    const int n = MN_I(N), in_h = MN_I(IN_H), in_w = MN_I(IN_W), c_n = MN_I(IN_C);
    const int pad_t = MN_I(PAD_T), pad_l = MN_I(PAD_L);
    const float *in = MN_P(const float, IN);
    for (int b = 0; b < n; b++)
        for (int y = 0; y < in_h; y++)
            memcpy(p->x + (((size_t)b * p->ph + pad_t + y) * p->pw + pad_l) * c_n,
                   in + ((size_t)b * in_h + y) * in_w * c_n, sizeof(float) * in_w * c_n);
    mn_word padded[STAGE + 1];
    memcpy(padded, args, sizeof(padded));
    padded[IN] = (mn_word)p->x;
    padded[IN_H] = (mn_word)p->ph, padded[IN_W] = (mn_word)p->pw;
    padded[PAD_T] = 0, padded[PAD_L] = 0, padded[STAGE] = 0; /* the output no longer overlaps what is read */
    fdw_run(padded);
}
#else
void mn_depthwise_conv_2d_f32(const mn_word *args) { mn_depthwise_conv_2d_f32_portable(args); }
#endif
