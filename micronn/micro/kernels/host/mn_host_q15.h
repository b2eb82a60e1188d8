/* The int16x8 kernels' output stage (TFLM's 64-bit MultiplyByQuantizedMultiplier with a Q15 multiplier and one
 * total right shift, mn_requant_q15) 8 channels at a time, for the host ports of conv_2d_s16.c,
 * depthwise_conv_2d_s16.c and fully_connected_s16.c.
 *
 * Where the lowering's bound on each window's sum (32768 * sum |w| of the channel) plus |bias| stays below 2^31
 * and the multiplier below 2^16, the sum plus bias is an exact int32 a, a * q15 + 2^(total-1) is exact in int64
 * (mul_epi32 of even and odd lanes), and its low 32 bits after the shift are those of a logical shift by
 * min(total, 32) followed by an arithmetic one by total - 32 (the high word floors again): TFLM's bits, truncated
 * to int32 as mn_requant_q15. Other channels make the whole call site run the scalar stage.
 */
#ifndef MN_HOST_Q15_H
#define MN_HOST_Q15_H

#include "mn_host.h"

#if defined(MNH_AVX2)
typedef struct {
    int vec;          /* every channel exact in the vector stage */
    int32_t *bias32;  /* per channel, padded to whole blocks of 8 */
    int32_t *q, *sr;  /* Q15 multiplier; arithmetic right shift max(total - 32, 0) */
    int64_t *rnd, *sl; /* per block of 8: even channels' then odd channels' 2^(total-1) and min(total, 32) */
} mnh_q15;

/* bound[c]: the largest |sum| of channel c before its bias. */
static inline int mnh_q15_init(mnh_q15 *p, const int64_t *bias, const int32_t *q15, const int32_t *total,
                               const int64_t *bound, int n) {
    const int m = (n + 7) / 8 * 8;
    p->bias32 = (int32_t *)mnh_alloc((size_t)m * sizeof(int32_t));
    p->q = (int32_t *)mnh_alloc((size_t)m * sizeof(int32_t));
    p->sr = (int32_t *)mnh_alloc((size_t)m * sizeof(int32_t));
    p->rnd = (int64_t *)mnh_alloc((size_t)m * sizeof(int64_t));
    p->sl = (int64_t *)mnh_alloc((size_t)m * sizeof(int64_t));
    if (!p->bias32 || !p->q || !p->sr || !p->rnd || !p->sl) return 0;
    p->vec = 1;
    for (int c = 0; c < n; c++) {
        const int64_t b = bias[c], lim = (int64_t)1 << 31;
        const int32_t t = total[c];
        if (b <= -lim || b >= lim || bound[c] + (b < 0 ? -b : b) >= lim || q15[c] <= -(1 << 16) ||
            q15[c] >= (1 << 16) || t < 0 || t > 63)
            p->vec = 0;
        const int slot = (c / 8) * 8 + (c % 2) * 4 + (c % 8) / 2;
        p->bias32[c] = (int32_t)b, p->q[c] = q15[c];
        p->sr[c] = t > 32 ? t - 32 : 0;
        p->rnd[slot] = t >= 1 && t <= 63 ? (int64_t)1 << (t - 1) : 0;
        p->sl[slot] = t < 32 ? t : 32;
    }
    return 1;
}

/* The 8 sums of channels c..c+8 (c a multiple of 8) through the output stage: mn_add_clamp(requant, zp, lo, hi). */
static inline __m256i mnh_q15_8(const mnh_q15 *p, int c, __m256i acc, __m256i zp, __m256i lo_zp, __m256i hi_zp) {
    const __m256i a = _mm256_add_epi32(acc, _mm256_loadu_si256((const __m256i *)(p->bias32 + c)));
    const __m256i q = _mm256_loadu_si256((const __m256i *)(p->q + c));
    const __m256i ve = _mm256_add_epi64(_mm256_mul_epi32(a, q), _mm256_loadu_si256((const __m256i *)(p->rnd + c)));
    const __m256i vo = _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(a, 32), _mm256_srli_epi64(q, 32)),
                                        _mm256_loadu_si256((const __m256i *)(p->rnd + c + 4)));
    const __m256i re = _mm256_srlv_epi64(ve, _mm256_loadu_si256((const __m256i *)(p->sl + c)));
    const __m256i ro = _mm256_srlv_epi64(vo, _mm256_loadu_si256((const __m256i *)(p->sl + c + 4)));
    __m256i r = _mm256_blend_epi32(re, _mm256_slli_epi64(ro, 32), 0xAA);
    r = _mm256_srav_epi32(r, _mm256_loadu_si256((const __m256i *)(p->sr + c)));
    r = _mm256_min_epi32(_mm256_max_epi32(r, lo_zp), hi_zp);
    return _mm256_add_epi32(r, zp);
}

/* 8 int32 lanes (in int16 range) to int16, stored: n <= 8 of them. */
static inline void mnh_store16(int16_t *out, __m256i y, int n) {
    const __m128i v = _mm_packs_epi32(_mm256_castsi256_si128(y), _mm256_extracti128_si256(y, 1));
    if (n == 8) { _mm_storeu_si128((__m128i *)out, v); return; }
    int16_t tmp[8];
    _mm_storeu_si128((__m128i *)tmp, v);
    memcpy(out, tmp, (size_t)n * sizeof(int16_t));
}
#endif /* AVX2 */
#endif /* MN_HOST_Q15_H */
