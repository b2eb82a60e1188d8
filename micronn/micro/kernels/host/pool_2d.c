/* MAX_POOL_2D, int8: the host port (x86-64 with AVX2) of kernels/pool_2d.c, same symbols, same argument words
 * (AVERAGE_POOL_2D: below).
 *
 * The maximum is taken in two passes per output row, both 32 bytes at a time: down the window's input rows
 * (one row buffer of in_w * c bytes, skipped when the window is one row high), then across each output pixel's
 * columns, channels side by side. A maximum is exact in any order. An output row's inputs are all read before its
 * first pixel is stored, and its pixels are stored in raster order, so an output the planner streams over its
 * input (`stage`) reads what the portable kernel reads.
 */
#define mn_average_pool_2d_s8 mn_average_pool_2d_s8_portable
#define mn_max_pool_2d_s8 mn_max_pool_2d_s8_portable
#include "pool_2d.portable.inc"
#undef mn_average_pool_2d_s8
#undef mn_max_pool_2d_s8
#include "mn_host.h"

#if defined(MNH_AVX2)
/* AVERAGE_POOL_2D, int8: per output pixel, 8 channels at a time, the window's values summed as int32 lanes (the
 * portable kernel's sums, exact), then its rounding division (acc + half) / count or (acc - half) / count
 * truncated, as a double division: the quotient of integers below 2^31 is never close enough to an integer for
 * the double's rounding to cross it. Channels past the last 8, and empty windows, as the portable kernel does. */
void mn_average_pool_2d_s8(const mn_word *args) {
    int8_t *out = MN_P(int8_t, OUT);
    const int8_t *in = MN_P(const int8_t, IN);
    const int n = MN_I(N), in_h = MN_I(IN_H), in_w = MN_I(IN_W), c = MN_I(C), out_h = MN_I(OUT_H);
    const int out_w = MN_I(OUT_W), fh = MN_I(F_H), fw = MN_I(F_W), sh = MN_I(S_H), sw = MN_I(S_W);
    const int pad_t = MN_I(PAD_T), pad_l = MN_I(PAD_L), stage = MN_I(STAGE);
    const int32_t lo = MN_I(ACT_MIN), hi = MN_I(ACT_MAX);
    if (lo < -128 || hi > 127 || lo > hi) { mn_average_pool_2d_s8_portable(args); return; }
    const __m256i vlo = _mm256_set1_epi32(lo), vhi = _mm256_set1_epi32(hi);
    int8_t staged[stage ? c : 1];
    for (int b = 0; b < n; b++)
        for (int oy = 0; oy < out_h; oy++) {
            const int y0 = mn_max(oy * sh - pad_t, 0), y1 = mn_min(oy * sh - pad_t + fh, in_h);
            for (int ox = 0; ox < out_w; ox++) {
                const int x0 = mn_max(ox * sw - pad_l, 0), x1 = mn_min(ox * sw - pad_l + fw, in_w);
                const int32_t count = (y1 - y0) * (x1 - x0), half = count / 2;
                const int8_t *window = in + (((size_t)b * in_h + y0) * in_w + x0) * c;
                int8_t *o = stage ? staged : out + (((size_t)b * out_h + oy) * out_w + ox) * c;
                int ch = 0;
                if (count > 0) {
                    const __m256d dc = _mm256_set1_pd((double)count);
                    const __m256i vh = _mm256_set1_epi32(half), vnh = _mm256_set1_epi32(-half);
                    const __m256i zero = _mm256_setzero_si256();
                    for (; ch + 8 <= c; ch += 8) {
                        __m256i acc = zero;
                        for (int y = y0; y < y1; y++) {
                            const int8_t *x = window + (size_t)(y - y0) * in_w * c + ch;
                            for (int k = 0; k < x1 - x0; k++) {
                                const __m128i v = _mm_loadl_epi64((const __m128i *)(x + (size_t)k * c));
                                acc = _mm256_add_epi32(acc, _mm256_cvtepi8_epi32(v));
                            }
                        }
                        /* acc > 0: acc + half; else acc - half */
                        const __m256i pos = _mm256_cmpgt_epi32(acc, zero);
                        const __m256i num = _mm256_add_epi32(acc, _mm256_blendv_epi8(vnh, vh, pos));
                        const __m256d n0 = _mm256_cvtepi32_pd(_mm256_castsi256_si128(num));
                        const __m256d n1 = _mm256_cvtepi32_pd(_mm256_extracti128_si256(num, 1));
                        const __m128i q0 = _mm256_cvttpd_epi32(_mm256_div_pd(n0, dc));
                        const __m128i q1 = _mm256_cvttpd_epi32(_mm256_div_pd(n1, dc));
                        const __m256i q = _mm256_min_epi32(_mm256_max_epi32(_mm256_set_m128i(q1, q0), vlo), vhi);
                        _mm_storel_epi64((__m128i *)(o + ch), mnh_bytes8(q));
                    }
                }
                for (; ch < c; ch++) {
                    int32_t acc = 0;
                    for (int y = 0; y < y1 - y0; y++) {
                        const int8_t *x = window + (size_t)y * in_w * c + ch;
                        for (int k = 0; k < x1 - x0; k++) acc += x[k * c];
                    }
                    acc = acc > 0 ? (acc + half) / count : (acc - half) / count;
                    o[ch] = (int8_t)mn_clamp(acc, lo, hi);
                }
                if (stage) memcpy(out + (((size_t)b * out_h + oy) * out_w + ox) * c, staged, (size_t)c);
            }
        }
}

enum { ROW_BYTES = 1 << 16 }; /* the row buffer lives on the stack */

/* o[0..c) = clamp(max(-128, the `taps` pixels of t, c bytes apart)) */
static inline void across(int8_t *o, const int8_t *t, int taps, int c, int8_t lo, int8_t hi) {
    int ch = 0;
    for (; ch + 32 <= c; ch += 32) {
        __m256i m = _mm256_set1_epi8(-128);
        for (int k = 0; k < taps; k++) m = _mm256_max_epi8(m, _mm256_loadu_si256((const __m256i *)(t + (size_t)k * c + ch)));
        m = _mm256_min_epi8(_mm256_max_epi8(m, _mm256_set1_epi8(lo)), _mm256_set1_epi8(hi));
        _mm256_storeu_si256((__m256i *)(o + ch), m);
    }
    for (; ch + 8 <= c; ch += 8) {
        __m128i m = _mm_set1_epi8(-128);
        for (int k = 0; k < taps; k++) m = _mm_max_epi8(m, _mm_loadl_epi64((const __m128i *)(t + (size_t)k * c + ch)));
        m = _mm_min_epi8(_mm_max_epi8(m, _mm_set1_epi8(lo)), _mm_set1_epi8(hi));
        _mm_storel_epi64((__m128i *)(o + ch), m);
    }
    for (; ch < c; ch++) {
        int32_t m = -128;
        for (int k = 0; k < taps; k++) m = mn_max(m, t[(size_t)k * c + ch]);
        o[ch] = (int8_t)mn_clamp(m, lo, hi);
    }
}

void mn_max_pool_2d_s8(const mn_word *args) {
    const int n = MN_I(N), in_h = MN_I(IN_H), in_w = MN_I(IN_W), c = MN_I(C), out_h = MN_I(OUT_H);
    const int out_w = MN_I(OUT_W), fh = MN_I(F_H), fw = MN_I(F_W), sh = MN_I(S_H), sw = MN_I(S_W);
    const int pad_t = MN_I(PAD_T), pad_l = MN_I(PAD_L);
    const int32_t lo = MN_I(ACT_MIN), hi = MN_I(ACT_MAX);
    const size_t row = (size_t)in_w * c;
    if (lo < -128 || hi > 127 || lo > hi || row > ROW_BYTES) { /* vector clamps need an int8 range */
        mn_max_pool_2d_s8_portable(args);
        return;
    }
    const int8_t *in = MN_P(const int8_t, IN);
    int8_t *out = MN_P(int8_t, OUT);
    int8_t buf[ROW_BYTES];
    for (int b = 0; b < n; b++)
        for (int oy = 0; oy < out_h; oy++) {
            const int y0 = mn_max(oy * sh - pad_t, 0), y1 = mn_min(oy * sh - pad_t + fh, in_h);
            const int8_t *first = in + ((size_t)b * in_h + y0) * row, *t = first;
            if (y1 - y0 <= 0) {
                memset(buf, -128, row);
                t = buf;
            } else if (y1 - y0 > 1) {
                size_t i = 0;
                for (; i + 32 <= row; i += 32) {
                    __m256i m = _mm256_loadu_si256((const __m256i *)(first + i));
                    for (int y = 1; y < y1 - y0; y++)
                        m = _mm256_max_epi8(m, _mm256_loadu_si256((const __m256i *)(first + y * row + i)));
                    _mm256_storeu_si256((__m256i *)(buf + i), m);
                }
                for (; i < row; i++) {
                    int32_t m = first[i];
                    for (int y = 1; y < y1 - y0; y++) m = mn_max(m, first[y * row + i]);
                    buf[i] = (int8_t)m;
                }
                t = buf;
            }
            int8_t *o = out + ((size_t)b * out_h + oy) * out_w * c;
            for (int ox = 0; ox < out_w; ox++, o += c) {
                const int x0 = mn_max(ox * sw - pad_l, 0), x1 = mn_min(ox * sw - pad_l + fw, in_w);
                across(o, t + (size_t)x0 * c, x1 > x0 ? x1 - x0 : 0, c, (int8_t)lo, (int8_t)hi);
            }
        }
}
#else
void mn_average_pool_2d_s8(const mn_word *args) { mn_average_pool_2d_s8_portable(args); }
void mn_max_pool_2d_s8(const mn_word *args) { mn_max_pool_2d_s8_portable(args); }
#endif
