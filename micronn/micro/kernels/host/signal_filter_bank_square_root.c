/* SignalFilterBankSquareRoot, the host port (x86-64) of kernels/signal_filter_bank_square_root.c, same symbol,
 * same argument words.
 *
 * floor(sqrt(x)) from the double square root of x (x rounded to 53 bits, so the estimate is off by a little),
 * capped at 2^32 - 1 and corrected step by step against exact 128-bit squares until s^2 <= x < (s + 1)^2: the
 * portable kernel's bit-by-bit root, without its 32 steps per value. The rounding, cap and shift are its own.
 */
#define mn_signal_filter_bank_square_root_u64 mn_signal_filter_bank_square_root_u64_portable
#include "signal_filter_bank_square_root.portable.inc"
#undef mn_signal_filter_bank_square_root_u64

#if defined(__x86_64__) && defined(__SIZEOF_INT128__)
#include <emmintrin.h>

static inline uint32_t fast_floor_sqrt64(uint64_t x) {
    const double r = _mm_cvtsd_f64(_mm_sqrt_sd(_mm_setzero_pd(), _mm_set_sd((double)x)));
    uint64_t s = r >= 4294967295.0 ? 0xFFFFFFFFu : (uint64_t)r;
    while ((unsigned __int128)s * s > x) s--;
    while (s < 0xFFFFFFFFu && (unsigned __int128)(s + 1) * (s + 1) <= x) s++;
    return (uint32_t)s;
}

void mn_signal_filter_bank_square_root_u64(const mn_word *args) {
    uint32_t *out = MN_P(uint32_t, OUT);
    const uint64_t *x = MN_P(const uint64_t, IN);
    const int32_t shift = *MN_P(const int32_t, SCALE), count = MN_I(COUNT);
    if (shift < 0 || shift > 31) {
        mn_signal_filter_bank_square_root_u64_portable(args);
        return;
    }
    for (int32_t i = 0; i < count; i++) {
        const uint64_t v = x[i];
        const uint32_t s = fast_floor_sqrt64(v);
        const uint32_t cap = (v >> 32) ? 0xFFFFFFFFu : 0xFFFFu;
        const uint64_t remainder = v - (uint64_t)s * s;
        out[i] = (s + (uint32_t)(remainder > s && s != cap)) >> shift;
    }
}
#else
void mn_signal_filter_bank_square_root_u64(const mn_word *args) { mn_signal_filter_bank_square_root_u64_portable(args); }
#endif
