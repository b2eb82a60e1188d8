/* AVERAGE_POOL_2D and MAX_POOL_2D, float32: the host port (x86-64 with AVX2) of kernels/pool_2d_f32.c, same
 * symbols, same argument words.
 *
 * Vectorized across channels only: each lane walks its channel's taps in the portable kernel's order (row by
 * row), the sum adding one tap at a time from +0.0 then divided by the count, the maximum replaced only where it
 * is less than the tap (so NaNs never win and the first of equal zeros stays), then the clamp. Channels past the
 * last 8 run the same steps one at a time.
 */
#define mn_average_pool_2d_f32 mn_average_pool_2d_f32_portable
#define mn_max_pool_2d_f32 mn_max_pool_2d_f32_portable
#include "pool_2d_f32.portable.inc"
#undef mn_average_pool_2d_f32
#undef mn_max_pool_2d_f32
#include "mn_host.h"

#if defined(MNH_AVX2)
/* `average` is a constant at each call site, so each op gets its own loop. */
__attribute__((always_inline)) static inline void pool_host(const mn_word *args, const int average) {
    float *out = MN_P(float, OUT);
    const float *in = MN_P(const float, IN);
    const int n = MN_I(N), in_h = MN_I(IN_H), in_w = MN_I(IN_W), c = MN_I(C), out_h = MN_I(OUT_H);
    const int out_w = MN_I(OUT_W), fh = MN_I(F_H), fw = MN_I(F_W), sh = MN_I(S_H), sw = MN_I(S_W);
    const int pad_t = MN_I(PAD_T), pad_l = MN_I(PAD_L), stage = MN_I(STAGE);
    const float flo = mn_f32_arg(args, ACT_MIN), fhi = mn_f32_arg(args, ACT_MAX);
    const __m256 lo = _mm256_set1_ps(flo), hi = _mm256_set1_ps(fhi);
    const int staging = stage && c != 8; /* 8 channels: one vector, stored after all its taps are read */
    float staged[staging ? c : 1];

    for (int b = 0; b < n; b++)
        for (int oy = 0; oy < out_h; oy++) {
            const int iy0 = oy * sh - pad_t;
            int y0, y1;
            mn_f32_taps(iy0, 1, in_h, fh, &y0, &y1);
            for (int ox = 0; ox < out_w; ox++) {
                const int ix0 = ox * sw - pad_l;
                int x0, x1;
                mn_f32_taps(ix0, 1, in_w, fw, &x0, &x1);
                const float count = (float)((y1 - y0) * (x1 - x0));
                float *o = staging ? staged : out + (((size_t)b * out_h + oy) * out_w + ox) * c;
                const float *window = in + (((size_t)b * in_h + iy0) * in_w + ix0 + x0) * c;
                int ch = 0;
                for (; ch + 8 <= c; ch += 8) {
                    __m256 acc = average ? _mm256_setzero_ps() : _mm256_set1_ps(MN_F32_LOWEST);
                    for (int y = y0; y < y1; y++) {
                        const float *x = window + (size_t)y * in_w * c + ch;
                        for (int k = 0; k < x1 - x0; k++) {
                            const __m256 v = _mm256_loadu_ps(x + (size_t)k * c);
                            if (average) acc = _mm256_add_ps(acc, v);
                            else acc = _mm256_max_ps(v, acc); /* v where acc < v: a NaN or an equal zero keeps acc */
                        }
                    }
                    if (average) acc = _mm256_div_ps(acc, _mm256_set1_ps(count));
                    acc = _mm256_blendv_ps(acc, lo, _mm256_cmp_ps(acc, lo, _CMP_LT_OQ));
                    acc = _mm256_blendv_ps(acc, hi, _mm256_cmp_ps(hi, acc, _CMP_LT_OQ));
                    _mm256_storeu_ps(o + ch, acc);
                }
                for (; ch < c; ch++) {
                    float acc = average ? 0.0f : MN_F32_LOWEST;
                    for (int y = y0; y < y1; y++) {
                        const float *x = window + (size_t)y * in_w * c + ch;
                        for (int k = 0; k < x1 - x0; k++) {
                            const float v = x[(size_t)k * c];
                            if (average) acc = acc + v;
                            else if (acc < v) acc = v;
                        }
                    }
                    if (average) acc = acc / count;
                    o[ch] = mn_f32_clamp(acc, flo, fhi);
                }
                if (staging) memcpy(out + (((size_t)b * out_h + oy) * out_w + ox) * c, staged, sizeof(float) * c);
            }
        }
}

/* One output pixel's V vectors of 8 channels (window at x, rows `row` floats apart, channels c floats apart per
 * tap), every vector's taps read before any is stored: the sum from +0.0 adding one tap at a time row by row, then
 * divided by the count (average), or the maximum replaced only where it is less than the tap (so NaNs never win and
 * the first of equal zeros stays); then the clamp. */
__attribute__((always_inline)) static inline void pool_pixel(const float *x, float *o, size_t row, int c, int fh,
                                                             int fw, __m256 count, __m256 lo, __m256 hi,
                                                             const int average, const int V) {
    __m256 acc[V];
    for (int v = 0; v < V; v++) acc[v] = average ? _mm256_setzero_ps() : _mm256_set1_ps(MN_F32_LOWEST);
#define TAP(t)                                                                                                     \
    for (int v = 0; v < V; v++)                                                                                    \
        acc[v] = average ? mnh_add_ps(acc[v], _mm256_loadu_ps((t) + 8 * v)) : _mm256_max_ps(_mm256_loadu_ps((t) + 8 * v), acc[v])
    if (fh == 2 && fw == 2) {
        TAP(x);
        TAP(x + c);
        TAP(x + row);
        TAP(x + row + c);
    } else {
        for (int y = 0; y < fh; y++)
            for (int k = 0; k < fw; k++) TAP(x + y * row + (size_t)k * c);
    }
#undef TAP
    for (int v = 0; v < V; v++) {
        __m256 y = average ? _mm256_div_ps(acc[v], count) : acc[v];
        y = _mm256_blendv_ps(y, lo, _mm256_cmp_ps(y, lo, _CMP_LT_OQ));
        y = _mm256_blendv_ps(y, hi, _mm256_cmp_ps(hi, y, _CMP_LT_OQ));
        _mm256_storeu_ps(o + 8 * v, y);
    }
}

/* The pools where every window lies inside the input (no padding reached) and the channels are whole vectors (any
 * count unstreamed; up to 32 when the output is streamed over the input: a pixel's vectors are stored after all its
 * taps are read): the same per-lane steps as pool_host, without its per-pixel window bounds. 0: not such a call. */
__attribute__((always_inline)) static inline int pool_full(const mn_word *args, const int average) {
    const int n = MN_I(N), in_h = MN_I(IN_H), in_w = MN_I(IN_W), c = MN_I(C), out_h = MN_I(OUT_H);
    const int out_w = MN_I(OUT_W), fh = MN_I(F_H), fw = MN_I(F_W), sh = MN_I(S_H), sw = MN_I(S_W);
    const int pad_t = MN_I(PAD_T), pad_l = MN_I(PAD_L), stage = MN_I(STAGE);
    if (c % 8 || (stage && c > 32) || pad_t || pad_l || fh < 1 || fw < 1 || out_h < 1 || out_w < 1 ||
        (out_h - 1) * sh + fh > in_h || (out_w - 1) * sw + fw > in_w)
        return 0;
    float *out = MN_P(float, OUT);
    const float *in = MN_P(const float, IN);
    const __m256 lo = _mm256_set1_ps(mn_f32_arg(args, ACT_MIN)), hi = _mm256_set1_ps(mn_f32_arg(args, ACT_MAX));
    const __m256 count = _mm256_set1_ps((float)(fh * fw));
    const size_t row = (size_t)in_w * c, step = (size_t)sw * c;
    const int vectors = c / 8;
    for (int b = 0; b < n; b++)
        for (int oy = 0; oy < out_h; oy++) {
            const float *x = in + ((size_t)b * in_h + (size_t)oy * sh) * row;
            float *o = out + ((size_t)b * out_h + oy) * out_w * c;
#define PIXELS(V)                                                                                                  \
    for (int ox = 0; ox < out_w; ox++, x += step, o += c) pool_pixel(x, o, row, c, fh, fw, count, lo, hi, average, V)
            switch (vectors) {
            case 1: PIXELS(1); break;
            case 2: PIXELS(2); break;
            case 3: PIXELS(3); break;
            case 4: PIXELS(4); break;
            default: /* unstreamed: a vector at a time */
                for (int ox = 0; ox < out_w; ox++, x += step, o += c)
                    for (int v = 0; v < vectors; v++)
                        pool_pixel(x + 8 * v, o + 8 * v, row, c, fh, fw, count, lo, hi, average, 1);
                break;
            }
#undef PIXELS
        }
    return 1;
}

static int average_pool_full(const mn_word *args) { return pool_full(args, 1); }
static int max_pool_full(const mn_word *args) { return pool_full(args, 0); }

void mn_average_pool_2d_f32(const mn_word *args) {
    if (!average_pool_full(args)) pool_host(args, 1);
}

void mn_max_pool_2d_f32(const mn_word *args) {
    if (!max_pool_full(args)) pool_host(args, 0);
}
#else
void mn_average_pool_2d_f32(const mn_word *args) { mn_average_pool_2d_f32_portable(args); }
void mn_max_pool_2d_f32(const mn_word *args) { mn_max_pool_2d_f32_portable(args); }
#endif
