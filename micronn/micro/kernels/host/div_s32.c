/* DIV int32, the host port (x86-64 with AVX2) of kernels/div_s32.c, same symbol, same argument words.
 *
 * A contiguous row divided by one broadcast divisor d (the common case: a scalar divisor), d neither 0 nor -1,
 * goes eight lanes at a time through a multiplication by a magic number (mnh_magic_of in mn_host.h, also used by
 * the fused chains of host/chain_s32.c), computed per row from d's value (it may be a model input). With n = |a| and v = |d| as uint32 (n in [0, 2^31], v in [1, 2^31]), l = ceil(log2 v) and
 * m = ceil(2^(31+l) / v): m v = 2^(31+l) + e with 0 <= e < v <= 2^l, and 2^31 <= m < 2^32 (m = 2^31 when v is a
 * power of two; otherwise v >= 2^(l-1) + 1 keeps 2^(31+l) / v more than 1 below 2^32). Then
 * floor(n m / 2^(31+l)) = floor(n / v) for every n in [0, 2^31]: with n = q v + r, 0 <= r < v,
 * n m / 2^(31+l) = q + r / v + n e / (v 2^(31+l)), and the added terms are >= 0 and, as n <= 2^31, below
 * (r + e / 2^l) / v < (r + 1) / v <= 1. n m < 2^63 is exact in the 64-bit lanes of mul_epu32, the quotient (at
 * most 2^31) is the low half of the shifted product, and C's truncating quotient is it negated where a and d
 * differ in sign. Checked once over every int32 dividend for 480 divisors (against the double quotient below) and
 * on 10^8 pairs spread over every divisor magnitude (against C's division).
 *
 * Other contiguous rows (the divisor contiguous too, 0 or -1) go through double division, four lanes per half.
 * For |a|, |b| <= 2^31 the double quotient truncated toward zero is C's quotient: an exact quotient is exact in
 * double, and otherwise a/b lies at least 1/|b| from every integer while the division's rounding moves it by at
 * most |a/b| 2^-53 < 1/|b|. The portable kernel's special cases come out of the same instructions or a blend: a
 * zero divisor gives 0 (blended in), and INT32_MIN / -1 = 2^31, out of range, converts to 0x80000000, the wrapped
 * value the portable kernel writes; either case also reports MN_DIV_BAD_DIVISOR, as the portable kernel does.
 * Then the same clamp. Other rows and a row's last few elements are the portable code.
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
MNH_ROWS_S32(div_double, div_rows, div_vec)

static void div_fast(uint8_t *p0, const uint8_t *p1, const uint8_t *p2, int32_t n, int32_t s0, int32_t s1, int32_t s2,
                     const mn_word *args) {
    const int32_t d = *(const int32_t *)p2;
    if (s0 != 4 || s1 != 4 || s2 != 0 || d == 0 || d == -1 || n < 8) {
        div_double(p0, p1, p2, n, s0, s1, s2, args);
        return;
    }
    const mnh_div_magic g = mnh_magic_of(d);
    const __m256i lo = _mm256_set1_epi32(MN_I(ACT_MIN)), hi = _mm256_set1_epi32(MN_I(ACT_MAX));
    int32_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256i q = mnh_div_magic8(_mm256_loadu_si256((const __m256i *)(p1 + 4 * (size_t)i)), &g);
        _mm256_storeu_si256((__m256i *)(p0 + 4 * (size_t)i), _mm256_min_epi32(_mm256_max_epi32(q, lo), hi));
    }
    if (i < n) div_rows(p0 + 4 * (size_t)i, p1 + 4 * (size_t)i, p2, n - i, s0, s1, s2, args);
}

void mn_div_s32(const mn_word *args) {
    mnh_walk(args, GEO, MN_P(uint8_t, OUT), MN_P(const uint8_t, IN1), MN_P(const uint8_t, IN2), div_fast);
}
#else
void mn_div_s32(const mn_word *args) { mn_div_s32_portable(args); }
#endif
