/* SignalFilterBankSpectralSubtraction, the host port (x86-64 with AVX2) of
 * kernels/signal_filter_bank_spectral_subtraction.c, same symbol, same argument words.
 *
 * Eight channels a vector: the uint32 values in 32-bit lanes, the uint64 mixes of even and odd channels in the
 * 64-bit lanes of two vectors. _mm256_mul_epu32 gives the exact 32 x 32 -> 64 products, the 64-bit add wraps as
 * the portable sum does, and a 64-bit logical shift by spectral_subtraction_bits (0..63) keeps the same low 32
 * bits; the floor's product the same way. min / max are unsigned (_epu32), the shifts by smoothing_bits (0..31)
 * logical. Each channel's state is read once before it is written, as in the portable loop (the state, the
 * outputs and the input are separate arena ranges), so a stream of invokes sees the same states. A count's last
 * partial vector runs through zero-padded copies, its state copied back for the live lanes only. Without AVX2,
 * or for shifts outside those ranges, the portable kernel runs.
 */
#define mn_signal_filter_bank_spectral_subtraction_u32 mn_signal_filter_bank_spectral_subtraction_u32_portable
#include "signal_filter_bank_spectral_subtraction.portable.inc"
#undef mn_signal_filter_bank_spectral_subtraction_u32
#include "mn_host.h"

#if defined(MNH_AVX2)
/* eight channels: out, noise and state[0..8) from x, state, smoothing and keep[0..8) */
static inline void sub8(uint32_t *out, uint32_t *noise, uint32_t *state, const uint32_t *x, const uint32_t *smoothing,
                        const uint32_t *keep, __m256i min_remaining, __m128i bits, __m128i sub_bits, int clamping) {
    const __m256i in = _mm256_loadu_si256((const __m256i *)x), s = _mm256_loadu_si256((const __m256i *)state);
    const __m256i sm = _mm256_loadu_si256((const __m256i *)smoothing), kp = _mm256_loadu_si256((const __m256i *)keep);
    const __m256i signal = _mm256_sll_epi32(in, bits);
    const __m256i even = _mm256_add_epi64(_mm256_mul_epu32(signal, sm), _mm256_mul_epu32(s, kp));
    const __m256i odd = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(signal, 32), _mm256_srli_epi64(sm, 32)),
                                         _mm256_mul_epu32(_mm256_srli_epi64(s, 32), _mm256_srli_epi64(kp, 32)));
    const __m256i estimate = _mm256_blend_epi32(_mm256_srl_epi64(even, sub_bits),
                                                _mm256_slli_epi64(_mm256_srl_epi64(odd, sub_bits), 32), 0xAA);
    const __m256i used = _mm256_min_epu32(estimate, signal);
    const __m256i floor = mnh_mul_shift_epu32(in, min_remaining, sub_bits);
    const __m256i cleaned = _mm256_srl_epi32(_mm256_sub_epi32(signal, used), bits);
    const __m256i kept = clamping ? used : estimate;
    _mm256_storeu_si256((__m256i *)state, kept);
    _mm256_storeu_si256((__m256i *)out, _mm256_max_epu32(cleaned, floor));
    _mm256_storeu_si256((__m256i *)noise, kept);
}

void mn_signal_filter_bank_spectral_subtraction_u32(const mn_word *args) {
    uint32_t *out = MN_P(uint32_t, OUT), *noise = MN_P(uint32_t, NOISE), *state = MN_P(uint32_t, STATE);
    const uint32_t *x = MN_P(const uint32_t, IN);
    const uint32_t *smoothing = MN_P(const uint32_t, SMOOTHING), *keep = MN_P(const uint32_t, KEEP);
    const int32_t count = MN_I(COUNT), bits = MN_I(BITS), sub_bits = MN_I(SUB_BITS), clamping = MN_I(CLAMPING);
    if (bits < 0 || bits > 31 || sub_bits < 0 || sub_bits > 63) {
        mn_signal_filter_bank_spectral_subtraction_u32_portable(args);
        return;
    }
    const __m256i min_remaining = _mm256_set1_epi32((int32_t)(uint32_t)args[MIN_REMAINING]);
    const __m128i sh = _mm_cvtsi32_si128(bits), sub_sh = _mm_cvtsi32_si128(sub_bits);
    int32_t i = 0;
    for (; i + 8 <= count; i += 8)
        sub8(out + i, noise + i, state + i, x + i, smoothing + i, keep + i, min_remaining, sh, sub_sh, clamping != 0);
    if (i < count) {
        uint32_t xs[8] = {0}, ss[8] = {0}, sms[8] = {0}, ks[8] = {0}, os[8], ns[8];
        const size_t n = (size_t)(count - i) * 4;
        memcpy(xs, x + i, n), memcpy(ss, state + i, n), memcpy(sms, smoothing + i, n), memcpy(ks, keep + i, n);
        sub8(os, ns, ss, xs, sms, ks, min_remaining, sh, sub_sh, clamping != 0);
        memcpy(state + i, ss, n), memcpy(out + i, os, n), memcpy(noise + i, ns, n);
    }
}
#else
void mn_signal_filter_bank_spectral_subtraction_u32(const mn_word *args) {
    mn_signal_filter_bank_spectral_subtraction_u32_portable(args);
}
#endif
