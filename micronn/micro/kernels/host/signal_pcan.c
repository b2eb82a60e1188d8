/* SignalPCAN, the host port (x86-64 with AVX2) of kernels/signal_pcan.c, same symbol, same argument words.
 *
 * Eight channels a vector, in 32-bit lanes. The noise estimate's leading one: e >> 8 when that is not 0, else e,
 * is below 2^24 and so converts to float exactly; its exponent field less 127 (plus 8 for the shifted case) is
 * the position p = b - 1. The 10 bits below the leading one are (e << (31 - p)) >> 21, the portable kernel's f
 * for every b (its left shift fills zeros, its right shift drops bits). One gather at k = 4b - 6 reads the int16
 * pair (lut[k], lut[k+1]), one at k + 1 reads (lut[k+1], lut[k+2]): the last entry read is lut[4*32 - 4] =
 * lut[124], which prepare checked is in the table (no read past it); e <= 2 gathers at e and takes lut[e]. The
 * quadratic is the portable int32 arithmetic (mullo, arithmetic shifts: no product overflows, as there), the
 * gain truncated to int16 by a shift pair. The uint64 product x * gain (gain sign-extended to 32 bits) is
 * _mm256_mul_epu32 on even and odd lanes, shifted right by snr_shift (0..63, as the portable kernel), its low
 * 32 bits the SNR; the output's two branches are computed for every lane and chosen by snr >> 13 == 0 (snr <
 * 8192, where snr * snr < 2^26 fits a 32-bit product). A count's last partial vector runs through zero-padded
 * copies. Without AVX2 the portable kernel runs.
 */
#define mn_signal_pcan_u32 mn_signal_pcan_u32_portable
#include "signal_pcan.portable.inc"
#undef mn_signal_pcan_u32
#include "mn_host.h"

#if defined(MNH_AVX2)
/* the position of the leading one of each lane of e (unsigned), for e >= 1 (e = 0 gives a negative value) */
static inline __m256i pcan_leading_one(__m256i e) {
    const __m256i hi = _mm256_srli_epi32(e, 8);
    const __m256i big = _mm256_xor_si256(_mm256_cmpeq_epi32(hi, _mm256_setzero_si256()), _mm256_set1_epi32(-1));
    const __m256i w = _mm256_blendv_epi8(e, hi, big);
    const __m256i exponent = _mm256_srli_epi32(_mm256_castps_si256(_mm256_cvtepi32_ps(w)), 23);
    return _mm256_add_epi32(_mm256_sub_epi32(exponent, _mm256_set1_epi32(127)), _mm256_and_si256(big,
                                                                                   _mm256_set1_epi32(8)));
}

/* out[0..8) for x[0..8), noise[0..8) */
static inline void pcan8(uint32_t *out, const uint32_t *x, const uint32_t *noise, const int16_t *lut, __m128i shift) {
    const __m256i e = _mm256_loadu_si256((const __m256i *)noise), v = _mm256_loadu_si256((const __m256i *)x);
    const __m256i two = _mm256_set1_epi32(2), one = _mm256_set1_epi32(1);
    const __m256i p = pcan_leading_one(e);
    /* e <= 2 (unsigned): min(e, 3) < 3 */
    const __m256i small = _mm256_cmpgt_epi32(_mm256_set1_epi32(3), _mm256_min_epu32(e, _mm256_set1_epi32(3)));
    const __m256i k = _mm256_blendv_epi8(_mm256_sub_epi32(_mm256_slli_epi32(p, 2), two), e, small);
    const __m256i f = _mm256_and_si256(
        _mm256_srli_epi32(_mm256_sllv_epi32(e, _mm256_sub_epi32(_mm256_set1_epi32(31), p)), 21),
        _mm256_set1_epi32(0x3FF));
    const __m256i a = _mm256_i32gather_epi32((const int *)lut, k, 2);
    const __m256i b = _mm256_i32gather_epi32((const int *)lut, _mm256_add_epi32(k, one), 2);
    const __m256i c0 = _mm256_srai_epi32(_mm256_slli_epi32(a, 16), 16), c1 = _mm256_srai_epi32(a, 16);
    const __m256i c2 = _mm256_srai_epi32(b, 16);
    const __m256i inner = _mm256_add_epi32(_mm256_srai_epi32(_mm256_mullo_epi32(c2, f), 5), _mm256_slli_epi32(c1, 5));
    const __m256i r = _mm256_srai_epi32(_mm256_add_epi32(_mm256_mullo_epi32(inner, f), _mm256_set1_epi32(1 << 14)),
                                        15);
    __m256i g = _mm256_add_epi32(r, c0);
    g = _mm256_blendv_epi8(g, c0, small);
    g = _mm256_srai_epi32(_mm256_slli_epi32(g, 16), 16);
    const __m256i even = _mm256_srl_epi64(_mm256_mul_epu32(v, g), shift);
    const __m256i odd = _mm256_srl_epi64(_mm256_mul_epu32(_mm256_srli_epi64(v, 32), _mm256_srli_epi64(g, 32)), shift);
    const __m256i snr = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
    const __m256i low = _mm256_srli_epi32(_mm256_mullo_epi32(snr, snr), 20);
    const __m256i high = _mm256_sub_epi32(_mm256_srli_epi32(snr, 6), _mm256_set1_epi32(64));
    const __m256i is_low = _mm256_cmpeq_epi32(_mm256_srli_epi32(snr, 13), _mm256_setzero_si256());
    _mm256_storeu_si256((__m256i *)out, _mm256_blendv_epi8(high, low, is_low));
}

void mn_signal_pcan_u32(const mn_word *args) {
    uint32_t *out = MN_P(uint32_t, OUT);
    const uint32_t *x = MN_P(const uint32_t, IN), *noise = MN_P(const uint32_t, NOISE);
    const int16_t *lut = MN_P(const int16_t, LUT);
    const int32_t count = MN_I(COUNT), shift = MN_I(SNR_SHIFT);
    if (shift < 0 || shift > 63) {
        mn_signal_pcan_u32_portable(args);
        return;
    }
    const __m128i sh = _mm_cvtsi32_si128(shift);
    int32_t i = 0;
    for (; i + 8 <= count; i += 8) pcan8(out + i, x + i, noise + i, lut, sh);
    if (i < count) {
        uint32_t xs[8] = {0}, ns[8] = {0}, os[8];
        const int32_t n = count - i;
        memcpy(xs, x + i, (size_t)n * 4), memcpy(ns, noise + i, (size_t)n * 4);
        pcan8(os, xs, ns, lut, sh);
        memcpy(out + i, os, (size_t)n * 4);
    }
}
#else
void mn_signal_pcan_u32(const mn_word *args) { mn_signal_pcan_u32_portable(args); }
#endif
