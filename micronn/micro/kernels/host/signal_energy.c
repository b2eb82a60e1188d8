/* SignalEnergy, the host port (x86-64 with AVX2) of kernels/signal_energy.c, same symbol, same argument words.
 *
 * Eight bins at a time: madd_epi16 of the interleaved (re, im) int16 pairs with themselves is re*re + im*im in
 * each int32 lane, exact except for the pair (-32768, -32768), whose 2^31 wraps to 0x80000000: the same bits as
 * the portable kernel's uint32 2^31. The lanes come out in bin order. The elements outside [start, end) are
 * zeroed, as the portable kernel zeroes them; an empty or out of bounds range runs the portable kernel. The last
 * partial vector of bins and of zeros is a masked load and store (nothing outside the buffers is touched).
 */
#define mn_signal_energy_s16 mn_signal_energy_s16_portable
#include "signal_energy.portable.inc"
#undef mn_signal_energy_s16
#include "mn_host.h"

#if defined(MNH_AVX2)
/* lanes [0, n) of eight set, n <= 8 */
static inline __m256i en_mask(int32_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

static inline void en_zero(uint32_t *out, int32_t n) {
    int32_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_si256((__m256i *)(out + i), _mm256_setzero_si256());
    if (i < n) _mm256_maskstore_epi32((int *)(out + i), en_mask(n - i), _mm256_setzero_si256());
}

void mn_signal_energy_s16(const mn_word *args) {
    uint32_t *out = MN_P(uint32_t, OUT);
    const int16_t *x = MN_P(const int16_t, IN);
    const int32_t count = MN_I(COUNT), start = MN_I(START), end = MN_I(END);
    if (start < 0 || end > count || start >= end) {
        mn_signal_energy_s16_portable(args);
        return;
    }
    en_zero(out, start);
    int32_t i = start;
    for (; i + 16 <= end; i += 16) {
        const __m256i a = _mm256_loadu_si256((const __m256i *)(x + 2 * i));
        const __m256i b = _mm256_loadu_si256((const __m256i *)(x + 2 * i + 16));
        _mm256_storeu_si256((__m256i *)(out + i), _mm256_madd_epi16(a, a));
        _mm256_storeu_si256((__m256i *)(out + i + 8), _mm256_madd_epi16(b, b));
    }
    if (i + 8 <= end) {
        const __m256i a = _mm256_loadu_si256((const __m256i *)(x + 2 * i));
        _mm256_storeu_si256((__m256i *)(out + i), _mm256_madd_epi16(a, a));
        i += 8;
    }
    if (i < end) { /* the last bins: each (re, im) pair one int32 lane, the lanes past `end` neither read nor written */
        const __m256i m = en_mask(end - i);
        const __m256i a = _mm256_maskload_epi32((const int *)(x + 2 * i), m);
        _mm256_maskstore_epi32((int *)(out + i), m, _mm256_madd_epi16(a, a));
    }
    en_zero(out + end, count - end);
}
#else
void mn_signal_energy_s16(const mn_word *args) { mn_signal_energy_s16_portable(args); }
#endif
