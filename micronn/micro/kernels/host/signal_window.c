/* SignalWindow, the host port (x86-64 with AVX2) of kernels/signal_window.c, same symbol, same argument words.
 *
 * Sixteen samples at a time: mullo_epi16 and mulhi_epi16 are the low and high halves of the exact int32 product
 * (|product| <= 2^30), interleaved back into int32 lanes by unpacklo/hi_epi16; sra_epi32 is the portable kernel's
 * arithmetic (floor) shift, for every shift 0 .. 31; packs_epi32 saturates to int16 as its clamp does. Unpack and
 * pack both work within 128-bit halves, so the pack puts the lanes back in order. Frames shorter than a vector and
 * each frame's last few samples run the portable kernel's loop. Each vector is read before its own lanes are
 * written: an output exactly over the input stays fine.
 */
#define mn_signal_window_s16 mn_signal_window_s16_portable
#include "signal_window.portable.inc"
#undef mn_signal_window_s16
#include "mn_host.h"

#if defined(MNH_AVX2)
/* sixteen samples times their weights, shifted and saturated */
static inline __m256i win16(__m256i a, __m256i b, __m128i s) {
    const __m256i lo = _mm256_mullo_epi16(a, b), hi = _mm256_mulhi_epi16(a, b);
    const __m256i p0 = _mm256_sra_epi32(_mm256_unpacklo_epi16(lo, hi), s);
    const __m256i p1 = _mm256_sra_epi32(_mm256_unpackhi_epi16(lo, hi), s);
    return _mm256_packs_epi32(p0, p1);
}

void mn_signal_window_s16(const mn_word *args) {
    int16_t *out = MN_P(int16_t, OUT);
    const int16_t *x = MN_P(const int16_t, IN), *w = MN_P(const int16_t, WEIGHTS);
    const int32_t count = MN_I(COUNT), frame = MN_I(FRAME);
    const int shift = (int)MN_I(SHIFT);
    if (frame < 16 || shift < 0 || shift > 31) {
        mn_signal_window_s16_portable(args);
        return;
    }
    const __m128i s = _mm_cvtsi32_si128(shift);
    for (int32_t start = 0; start < count; start += frame) {
        const int16_t *xf = x + start;
        int16_t *of = out + start;
        int32_t i = 0;
        for (; i + 32 <= frame; i += 32) {
            const __m256i a = _mm256_loadu_si256((const __m256i *)(xf + i));
            const __m256i b = _mm256_loadu_si256((const __m256i *)(xf + i + 16));
            const __m256i wa = _mm256_loadu_si256((const __m256i *)(w + i));
            const __m256i wb = _mm256_loadu_si256((const __m256i *)(w + i + 16));
            _mm256_storeu_si256((__m256i *)(of + i), win16(a, wa, s)); /* both read before either is written */
            _mm256_storeu_si256((__m256i *)(of + i + 16), win16(b, wb, s));
        }
        if (i + 16 <= frame) {
            const __m256i a = _mm256_loadu_si256((const __m256i *)(xf + i));
            _mm256_storeu_si256((__m256i *)(of + i), win16(a, _mm256_loadu_si256((const __m256i *)(w + i)), s));
            i += 16;
        }
        for (; i < frame; i++) {
            const int32_t product = (int32_t)xf[i] * w[i];
            of[i] = (int16_t)mn_clamp(product >> shift, -32768, 32767);
        }
    }
}
#else
void mn_signal_window_s16(const mn_word *args) { mn_signal_window_s16_portable(args); }
#endif
