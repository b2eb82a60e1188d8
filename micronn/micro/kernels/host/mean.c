/* MEAN, int8: the host port (x86-64 with AVX2) of kernels/mean.c, same symbol, same argument words.
 *
 * The same walk and the same wrapping int32 sums: a row that adds contiguous int8 values into contiguous
 * accumulators (the kept axes innermost, as in a global average over height and width) goes 16 values a step, a
 * contiguous row reduced into one accumulator 32 values a step (the byte sums of x + 128 less 128 per value); other
 * rows are the portable kernel's. The rescaling then runs 8 outputs at a time with mnh_requant8r's arithmetic (one
 * multiplier and shift for all: mn_mbqm's values, then the zero point and the int8 clamp), where its parameters
 * allow it.
 */
#define mn_mean_s8 mn_mean_s8_portable
#include "mean.portable.inc"
#undef mn_mean_s8
#include "mn_host.h"

#if defined(MNH_AVX2)
static void fast_sum_rows(uint8_t *p0, const uint8_t *p1, const uint8_t *p2, int32_t n, int32_t s0, int32_t s1,
                          int32_t s2, const mn_word *args) {
    int32_t i = 0;
    if (s0 == 4 && s1 == 1) {
        for (; i + 16 <= n; i += 16) {
            const __m128i x = _mm_loadu_si128((const __m128i *)(p1 + i));
            __m256i *a = (__m256i *)(p0 + 4 * (size_t)i);
            _mm256_storeu_si256(a, _mm256_add_epi32(_mm256_loadu_si256(a), _mm256_cvtepi8_epi32(x)));
            _mm256_storeu_si256(a + 1, _mm256_add_epi32(_mm256_loadu_si256(a + 1),
                                                         _mm256_cvtepi8_epi32(_mm_srli_si128(x, 8))));
        }
    } else if (s0 == 0 && s1 == 1 && n >= 32) {
        const __m256i top = _mm256_set1_epi8(-128);
        __m256i sums = _mm256_setzero_si256(); /* four 64-bit sums of x + 128 */
        for (; i + 32 <= n; i += 32) {
            const __m256i u = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(p1 + i)), top);
            sums = _mm256_add_epi64(sums, _mm256_sad_epu8(u, _mm256_setzero_si256()));
        }
        const __m128i s = _mm_add_epi64(_mm256_castsi256_si128(sums), _mm256_extracti128_si256(sums, 1));
        const uint32_t u = (uint32_t)(_mm_cvtsi128_si64(s) + _mm_extract_epi64(s, 1)); /* wraps as the sum does */
        *(uint32_t *)p0 += u - 128u * (uint32_t)i;
    }
    if (i < n) sum_rows(p0 + (size_t)s0 * i, p1 + (size_t)s1 * i, p2, n - i, s0, s1, s2, args);
}

void mn_mean_s8(const mn_word *args) {
    const int32_t mult = MN_I(MULT), shift = MN_I(SHIFT);
    if (mult < 0 || shift > 31 || shift < -31) { mn_mean_s8_portable(args); return; } /* mnh_rq's vector bounds */
    int8_t *out = MN_P(int8_t, OUT);
    uint32_t *acc = MN_P(uint32_t, ACC);
    const int32_t outputs = MN_I(OUTPUTS), out_zp = MN_I(OUT_ZP);
    const uint32_t zp_total = (uint32_t)MN_I(IN_ZP) * (uint32_t)MN_I(COUNT);
    memset(acc, 0, (size_t)outputs * sizeof *acc);
    mn_walk(args, GEO, (uint8_t *)acc, MN_P(const uint8_t, IN), MN_P(const uint8_t, IN), fast_sum_rows);
    const mnh_rq8 r = mnh_rq8_uniform(mult, shift, out_zp, -128, 127);
    const __m256i off = _mm256_set1_epi32((int32_t)zp_total);
    int32_t i = 0;
    for (; i + 8 <= outputs; i += 8) {
        const __m256i a = _mm256_sub_epi32(_mm256_loadu_si256((const __m256i *)(acc + i)), off);
        _mm_storel_epi64((__m128i *)(out + i), mnh_bytes8(mnh_requant8r(a, &r)));
    }
    for (; i < outputs; i++)
        out[i] = (int8_t)mn_add_clamp(mn_mbqm((int32_t)(acc[i] - zp_total), mult, shift), out_zp, -128, 127);
}
#else
void mn_mean_s8(const mn_word *args) { mn_mean_s8_portable(args); }
#endif
