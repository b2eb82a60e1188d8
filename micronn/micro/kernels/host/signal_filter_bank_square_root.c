/* SignalFilterBankSquareRoot, the host port (x86-64) of kernels/signal_filter_bank_square_root.c, same symbol,
 * same argument words.
 *
 * floor(sqrt(x)) from the double square root of x (x rounded to 53 bits, so the estimate is off by a little),
 * capped at 2^32 - 1 and corrected step by step against exact 128-bit squares until s^2 <= x < (s + 1)^2: the
 * portable kernel's bit-by-bit root, without its 32 steps per value. The rounding, cap and shift are its own.
 *
 * With AVX2, eight values at a time where all eight are below 2^52 (the audio front end's filter bank energies
 * are below 2^48): such an x is exact as a double (its bits under 2^52's exponent, less 2^52), and the correctly
 * rounded double sqrt truncates to floor(sqrt(x)) with no correction: for s = floor(sqrt(x)) < 2^26, sqrt(x) <=
 * sqrt((s + 1)^2 - 1) < s + 1 - 1/(2(s + 1)), at least one double spacing (<= 2^-27 below 2^26) under s + 1, so it
 * never rounds up to s + 1; and sqrt(x) >= s, a double. Then s < 2^26 and the remainder x - s^2 <= 2s fit 32-bit
 * lanes (computed modulo 2^32 from x's low half); the cap 0xFFFFFFFF is out of reach and 0xFFFF only occurs for
 * x < 2^32, so the round-up is remainder > s and s != 0xFFFF. A group with a larger value, and a count's last
 * partial group, take the scalar path above.
 */
#define mn_signal_filter_bank_square_root_u64 mn_signal_filter_bank_square_root_u64_portable
#include "signal_filter_bank_square_root.portable.inc"
#undef mn_signal_filter_bank_square_root_u64

#if defined(__x86_64__) && defined(__SIZEOF_INT128__)
#include <emmintrin.h>
#if defined(__AVX2__) && !defined(MN_NO_HOST_PORTS) /* mn_host.h's MNH_AVX2, without its cache (not needed) */
#define SQRT_AVX2 1
#include <immintrin.h>
#endif

static inline uint32_t fast_floor_sqrt64(uint64_t x) {
    const double r = _mm_cvtsd_f64(_mm_sqrt_sd(_mm_setzero_pd(), _mm_set_sd((double)x)));
    uint64_t s = r >= 4294967295.0 ? 0xFFFFFFFFu : (uint64_t)r;
    while ((unsigned __int128)s * s > x) s--;
    while (s < 0xFFFFFFFFu && (unsigned __int128)(s + 1) * (s + 1) <= x) s++;
    return (uint32_t)s;
}

static inline void sqrt_scalar(uint32_t *out, const uint64_t *x, int32_t n, int32_t shift) {
    for (int32_t i = 0; i < n; i++) {
        const uint64_t v = x[i];
        const uint32_t s = fast_floor_sqrt64(v);
        const uint32_t cap = (v >> 32) ? 0xFFFFFFFFu : 0xFFFFu;
        const uint64_t remainder = v - (uint64_t)s * s;
        out[i] = (s + (uint32_t)(remainder > s && s != cap)) >> shift;
    }
}

#if defined(SQRT_AVX2)
/* x < 2^52 as a double, exactly: x's bits under the exponent of 2^52, less 2^52 */
static inline __m256d sqrt_exact_pd(__m256i x) {
    const __m256i magic = _mm256_set1_epi64x(0x4330000000000000);
    return _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(x, magic)), _mm256_castsi256_pd(magic));
}

/* out[0..8) for x[0..8) when every x < 2^52; 0 (nothing written) otherwise */
static inline int sqrt8(uint32_t *out, const uint64_t *x, __m128i shift) {
    const __m256i a = _mm256_loadu_si256((const __m256i *)x), b = _mm256_loadu_si256((const __m256i *)(x + 4));
    if (!_mm256_testz_si256(_mm256_or_si256(a, b), _mm256_set1_epi64x((int64_t)0xFFF0000000000000))) return 0;
    const __m128i sa = _mm256_cvttpd_epi32(_mm256_sqrt_pd(sqrt_exact_pd(a)));
    const __m128i sb = _mm256_cvttpd_epi32(_mm256_sqrt_pd(sqrt_exact_pd(b)));
    const __m256i s = _mm256_set_m128i(sb, sa);
    /* the low halves of the eight x, in order */
    const __m256i lo = _mm256_permute4x64_epi64(
        _mm256_castps_si256(_mm256_shuffle_ps(_mm256_castsi256_ps(a), _mm256_castsi256_ps(b), 0x88)), 0xD8);
    const __m256i remainder = _mm256_sub_epi32(lo, _mm256_mullo_epi32(s, s));
    const __m256i up = _mm256_andnot_si256(_mm256_cmpeq_epi32(s, _mm256_set1_epi32(0xFFFF)),
                                           _mm256_cmpgt_epi32(remainder, s));
    _mm256_storeu_si256((__m256i *)out, _mm256_srl_epi32(_mm256_sub_epi32(s, up), shift));
    return 1;
}
#endif

void mn_signal_filter_bank_square_root_u64(const mn_word *args) {
    uint32_t *out = MN_P(uint32_t, OUT);
    const uint64_t *x = MN_P(const uint64_t, IN);
    const int32_t shift = *MN_P(const int32_t, SCALE), count = MN_I(COUNT);
    if (shift < 0 || shift > 31) {
        mn_signal_filter_bank_square_root_u64_portable(args);
        return;
    }
    int32_t i = 0;
#if defined(SQRT_AVX2)
    const __m128i sh = _mm_cvtsi32_si128(shift);
    for (; i + 8 <= count; i += 8)
        if (!sqrt8(out + i, x + i, sh)) sqrt_scalar(out + i, x + i, 8, shift);
#endif
    sqrt_scalar(out + i, x + i, count - i, shift);
}
#else
void mn_signal_filter_bank_square_root_u64(const mn_word *args) {
    mn_signal_filter_bank_square_root_u64_portable(args);
}
#endif
