/* SignalFilterBankLog, the host port (x86-64 with AVX2) of kernels/signal_filter_bank_log.c, same symbol, same
 * argument words.
 *
 * Eight channels a vector, in 32-bit lanes. The leading one's position p of v = x << bits: v >> 8 when that is not
 * 0, else v, is below 2^24 and converts to float exactly; its exponent field less 127 (plus 8 for the shifted
 * case) is p. The 16 bits below the leading one are (v << (31 - p)) >> 15, the portable kernel's t for every p
 * (its left shift fills zeros, its right shift drops bits); j = t >> 9 <= 127, so the gathers of c[j] and c[j+1]
 * stay in the 129-entry table. log2 is the portable int32 arithmetic (mullo, an arithmetic shift). The 64-bit
 * (45426 * log2 + 2^15) >> 16 splits at log2's bit 16: 45426 * (log2 >> 16) + ((45426 * (log2 & 0xFFFF) + 2^15)
 * >> 16), the second product below 2^32 (unsigned shift), both sums modulo 2^32 as the uint32 truncation keeps.
 * The scaling wraps in uint32 lanes as there; min(scaled, 32767) unsigned, v <= 1 gives 0, packed to int16
 * (values 0..32767 pack exactly). A count's last partial vector runs through zero-padded copies. Without AVX2 the
 * portable kernel runs.
 */
#define mn_signal_filter_bank_log_u32 mn_signal_filter_bank_log_u32_portable
#include "signal_filter_bank_log.portable.inc"
#undef mn_signal_filter_bank_log_u32
#include "mn_host.h"

#if defined(MNH_AVX2)
/* out[0..8) for x[0..8) */
static inline void log8(int16_t *out, const uint32_t *x, const int32_t *c, __m128i bits, __m256i scale) {
    const __m256i v = _mm256_sll_epi32(_mm256_loadu_si256((const __m256i *)x), bits);
    const __m256i hi = _mm256_srli_epi32(v, 8);
    const __m256i big = _mm256_xor_si256(_mm256_cmpeq_epi32(hi, _mm256_setzero_si256()), _mm256_set1_epi32(-1));
    const __m256i w = _mm256_blendv_epi8(v, hi, big);
    const __m256i exponent = _mm256_srli_epi32(_mm256_castps_si256(_mm256_cvtepi32_ps(w)), 23);
    const __m256i p = _mm256_add_epi32(_mm256_sub_epi32(exponent, _mm256_set1_epi32(127)),
                                       _mm256_and_si256(big, _mm256_set1_epi32(8)));
    const __m256i t = _mm256_and_si256(
        _mm256_srli_epi32(_mm256_sllv_epi32(v, _mm256_sub_epi32(_mm256_set1_epi32(31), p)), 15),
        _mm256_set1_epi32(0xFFFF));
    const __m256i j = _mm256_srli_epi32(t, 9);
    const __m256i c0 = _mm256_i32gather_epi32(c, j, 4);
    const __m256i c1 = _mm256_i32gather_epi32(c + 1, j, 4);
    const __m256i step = _mm256_srai_epi32(
        _mm256_mullo_epi32(_mm256_sub_epi32(c1, c0), _mm256_and_si256(t, _mm256_set1_epi32(511))), 16);
    const __m256i log2 = _mm256_add_epi32(_mm256_add_epi32(_mm256_slli_epi32(p, 16), t), _mm256_add_epi32(c0, step));
    const __m256i ln2 = _mm256_set1_epi32(45426);
    const __m256i lo = _mm256_srli_epi32(
        _mm256_add_epi32(_mm256_mullo_epi32(_mm256_and_si256(log2, _mm256_set1_epi32(0xFFFF)), ln2),
                         _mm256_set1_epi32(1 << 15)), 16);
    const __m256i ln = _mm256_add_epi32(_mm256_mullo_epi32(_mm256_srai_epi32(log2, 16), ln2), lo);
    const __m256i scaled = _mm256_srli_epi32(
        _mm256_add_epi32(_mm256_mullo_epi32(ln, scale), _mm256_set1_epi32(1 << 15)), 16);
    const __m256i small = _mm256_cmpgt_epi32(_mm256_set1_epi32(2), _mm256_min_epu32(v, _mm256_set1_epi32(2)));
    const __m256i y = _mm256_andnot_si256(small, _mm256_min_epu32(scaled, _mm256_set1_epi32(32767)));
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(y, y), 0x08);
    _mm_storeu_si128((__m128i *)out, _mm256_castsi256_si128(packed));
}

void mn_signal_filter_bank_log_u32(const mn_word *args) {
    int16_t *out = MN_P(int16_t, OUT);
    const uint32_t *x = MN_P(const uint32_t, IN);
    const int32_t *c = MN_P(const int32_t, CORRECTION);
    const int32_t count = MN_I(COUNT), bits = MN_I(BITS);
    if (bits < 0 || bits > 31) {
        mn_signal_filter_bank_log_u32_portable(args);
        return;
    }
    const __m128i sh = _mm_cvtsi32_si128(bits);
    const __m256i scale = _mm256_set1_epi32((int32_t)(uint32_t)args[SCALE]);
    int32_t i = 0;
    for (; i + 8 <= count; i += 8) log8(out + i, x + i, c, sh, scale);
    if (i < count) {
        uint32_t xs[8] = {0};
        int16_t os[8];
        const int32_t n = count - i;
        memcpy(xs, x + i, (size_t)n * 4);
        log8(os, xs, c, sh, scale);
        memcpy(out + i, os, (size_t)n * 2);
    }
}
#else
void mn_signal_filter_bank_log_u32(const mn_word *args) { mn_signal_filter_bank_log_u32_portable(args); }
#endif
