/* CONCATENATION (and PACK), the host port (x86-64 with AVX2) of kernels/concatenation.c, same symbol, same argument
 * words.
 *
 * The same row-by-row copies, but a row of at most 64 bytes (the channels of one pixel in a U-Net's skip
 * concatenation: thousands of rows per call) is copied by a pair of overlapping loads and stores of the widest
 * size that fits instead of a call to memcpy; longer rows go to memcpy. Every load of a row comes before its
 * stores, like memcpy's contract (the rows of the output and of the inputs do not overlap).
 */
#define mn_concatenation mn_concatenation_portable
#include "concatenation.portable.inc"
#undef mn_concatenation
#include "mn_host.h"

#if defined(MNH_AVX2)
static inline void cc_copy(uint8_t *d, const uint8_t *s, size_t n) {
    if (n > 64) {
        memcpy(d, s, n);
    } else if (n >= 32) {
        const __m256i a = _mm256_loadu_si256((const __m256i *)s), b = _mm256_loadu_si256((const __m256i *)(s + n - 32));
        _mm256_storeu_si256((__m256i *)d, a), _mm256_storeu_si256((__m256i *)(d + n - 32), b);
    } else if (n >= 16) {
        const __m128i a = _mm_loadu_si128((const __m128i *)s), b = _mm_loadu_si128((const __m128i *)(s + n - 16));
        _mm_storeu_si128((__m128i *)d, a), _mm_storeu_si128((__m128i *)(d + n - 16), b);
    } else if (n >= 8) {
        uint64_t a, b;
        memcpy(&a, s, 8), memcpy(&b, s + n - 8, 8);
        memcpy(d, &a, 8), memcpy(d + n - 8, &b, 8);
    } else if (n >= 4) {
        uint32_t a, b;
        memcpy(&a, s, 4), memcpy(&b, s + n - 4, 4);
        memcpy(d, &a, 4), memcpy(d + n - 4, &b, 4);
    } else if (n > 0) {
        const uint8_t a = s[0], b = s[n / 2], c = s[n - 1];
        d[0] = a, d[n / 2] = b, d[n - 1] = c;
    }
}

void mn_concatenation(const mn_word *args) {
    const int outer = MN_I(OUTER), count = MN_I(COUNT);
    if (outer <= 1) {
        mn_concatenation_portable(args);
        return;
    }
    uint8_t *o = MN_P(uint8_t, OUT);
    for (int r = 0; r < outer; r++)
        for (int i = 0; i < count; i++) {
            const size_t bytes = (size_t)args[INPUTS + 2 * i + 1];
            cc_copy(o, (const uint8_t *)args[INPUTS + 2 * i] + r * bytes, bytes);
            o += bytes;
        }
}
#else
void mn_concatenation(const mn_word *args) { mn_concatenation_portable(args); }
#endif
