/* DIV int32, the host port (x86-64 with AVX2) of kernels/div_s32.c, same symbol, same argument words.
 *
 * Contiguous rows (the divisor contiguous or broadcast) go eight lanes at a time through double division, four
 * lanes per half. For |a|, |b| < 2^31 the double quotient truncated toward zero is C's quotient: an exact
 * quotient is exact in double, and otherwise a/b lies at least 1/|b| from every integer while the division's
 * rounding moves it by at most |a/b| 2^-53 < 1/|b|. The portable kernel's special cases come out of the same
 * instructions or a blend: a zero divisor gives 0 (blended in), and INT32_MIN / -1 = 2^31, out of range, converts
 * to 0x80000000, the wrapped value the portable kernel writes; either case also reports MN_DIV_BAD_DIVISOR, as the
 * portable kernel does. Then the same clamp. Other rows and a row's last few elements are the portable code.
 */
#define mn_div_s32 mn_div_s32_portable
#include "div_s32.portable.inc"
#undef mn_div_s32
#include "mn_host.h"

#if defined(MNH_AVX2)
static inline __m128i div4(__m128i a, __m128i b) {
    return _mm256_cvttpd_epi32(_mm256_div_pd(_mm256_cvtepi32_pd(a), _mm256_cvtepi32_pd(b)));
}

static inline __m256i div_vec(__m256i a, __m256i b, const mn_word *args) {
    const __m256i q = _mm256_set_m128i(div4(_mm256_extracti128_si256(a, 1), _mm256_extracti128_si256(b, 1)),
                                       div4(_mm256_castsi256_si128(a), _mm256_castsi256_si128(b)));
    const __m256i zero = _mm256_cmpeq_epi32(b, _mm256_setzero_si256());
    const __m256i wraps = _mm256_and_si256(_mm256_cmpeq_epi32(a, _mm256_set1_epi32(INT32_MIN)),
                                           _mm256_cmpeq_epi32(b, _mm256_set1_epi32(-1)));
    if (!_mm256_testz_si256(_mm256_or_si256(zero, wraps), _mm256_or_si256(zero, wraps))) mn_status = MN_DIV_BAD_DIVISOR;
    return mnh_clamp32(_mm256_andnot_si256(zero, q), MN_I(ACT_MIN), MN_I(ACT_MAX));
}
MNH_ROWS_S32(div_fast, div_rows, div_vec)

void mn_div_s32(const mn_word *args) {
    mnh_walk(args, GEO, MN_P(uint8_t, OUT), MN_P(const uint8_t, IN1), MN_P(const uint8_t, IN2), div_fast);
}
#else
void mn_div_s32(const mn_word *args) { mn_div_s32_portable(args); }
#endif
