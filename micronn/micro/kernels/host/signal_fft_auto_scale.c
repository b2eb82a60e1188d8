/* SignalFftAutoScale, the host port (x86-64 with AVX2) of kernels/signal_fft_auto_scale.c, same symbol, same
 * argument words.
 *
 * Without a -32768 in the frame the portable kernel's running peak only grows, to the largest magnitude: a max
 * over int16 lanes of abs_epi16, starting from 0. The same pass ORs the lanes' compares with -32768; a frame holding
 * one (its negation wraps the running peak to -32768, and the samples after it start the peak again) runs the
 * portable kernel. The shift (15 - bit length) is the portable kernel's; the samples are shifted by sll_epi16,
 * which keeps the low 16 bits of the shifted value, the same truncation as the portable kernel's cast of the uint32
 * shift. The peak is known before anything is written, and each vector is read before its own lanes are written,
 * so an output exactly over the input stays fine.
 */
#define mn_signal_fft_auto_scale_s16 mn_signal_fft_auto_scale_s16_portable
#include "signal_fft_auto_scale.portable.inc"
#undef mn_signal_fft_auto_scale_s16
#include "mn_host.h"

#if defined(MNH_AVX2)
void mn_signal_fft_auto_scale_s16(const mn_word *args) {
    int16_t *out = MN_P(int16_t, OUT);
    const int16_t *x = MN_P(const int16_t, IN);
    const int32_t count = MN_I(COUNT);
    const __m256i wrap = _mm256_set1_epi16(INT16_MIN);
    __m256i p0 = _mm256_setzero_si256(), p1 = _mm256_setzero_si256(), seen = _mm256_setzero_si256();
    int32_t i = 0;
    for (; i + 32 <= count; i += 32) {
        const __m256i a = _mm256_loadu_si256((const __m256i *)(x + i));
        const __m256i b = _mm256_loadu_si256((const __m256i *)(x + i + 16));
        seen = _mm256_or_si256(seen, _mm256_or_si256(_mm256_cmpeq_epi16(a, wrap), _mm256_cmpeq_epi16(b, wrap)));
        p0 = _mm256_max_epi16(p0, _mm256_abs_epi16(a));
        p1 = _mm256_max_epi16(p1, _mm256_abs_epi16(b));
    }
    if (i + 16 <= count) {
        const __m256i a = _mm256_loadu_si256((const __m256i *)(x + i));
        seen = _mm256_or_si256(seen, _mm256_cmpeq_epi16(a, wrap));
        p0 = _mm256_max_epi16(p0, _mm256_abs_epi16(a));
        i += 16;
    }
    for (int32_t k = i; k < count; k++)
        if (x[k] == INT16_MIN) seen = wrap;
    if (!_mm256_testz_si256(seen, seen)) {
        mn_signal_fft_auto_scale_s16_portable(args);
        return;
    }
    __m128i p = _mm_max_epi16(_mm256_castsi256_si128(p0), _mm256_extracti128_si256(p0, 1));
    p = _mm_max_epi16(p, _mm_max_epi16(_mm256_castsi256_si128(p1), _mm256_extracti128_si256(p1, 1)));
    p = _mm_max_epi16(p, _mm_shuffle_epi32(p, 0x4E));
    p = _mm_max_epi16(p, _mm_shuffle_epi32(p, 0xB1));
    p = _mm_max_epi16(p, _mm_srli_epi32(p, 16));
    int32_t peak = (int16_t)_mm_cvtsi128_si32(p); /* 0 .. 32767 */
    for (; i < count; i++) {
        const int32_t v = x[i], magnitude = v < 0 ? -v : v;
        if (magnitude > peak) peak = magnitude;
    }
    const int shift = peak > 0 ? mn_clz32((uint32_t)peak) - 17 : 0; /* 15 - bit_length(peak) */
    const __m128i s = _mm_cvtsi32_si128(shift);
    for (i = 0; i + 32 <= count; i += 32) {
        const __m256i a = _mm256_loadu_si256((const __m256i *)(x + i));
        const __m256i b = _mm256_loadu_si256((const __m256i *)(x + i + 16));
        _mm256_storeu_si256((__m256i *)(out + i), _mm256_sll_epi16(a, s));
        _mm256_storeu_si256((__m256i *)(out + i + 16), _mm256_sll_epi16(b, s));
    }
    if (i + 16 <= count) {
        _mm256_storeu_si256((__m256i *)(out + i), _mm256_sll_epi16(_mm256_loadu_si256((const __m256i *)(x + i)), s));
        i += 16;
    }
    for (; i < count; i++) out[i] = (int16_t)((uint32_t)(int32_t)x[i] << shift);
    *MN_P(int32_t, SCALE) = shift; /* last, as the portable kernel writes it */
}
#else
void mn_signal_fft_auto_scale_s16(const mn_word *args) { mn_signal_fft_auto_scale_s16_portable(args); }
#endif
