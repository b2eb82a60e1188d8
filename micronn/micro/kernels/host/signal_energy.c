/* SignalEnergy, the host port (x86-64 with AVX2) of kernels/signal_energy.c, same symbol, same argument words.
 *
 * Eight bins at a time: madd_epi16 of the interleaved (re, im) int16 pairs with themselves is re*re + im*im in
 * each int32 lane, exact except for the pair (-32768, -32768), whose 2^31 wraps to 0x80000000: the same bits as
 * the portable kernel's uint32 2^31. The lanes come out in bin order. The elements outside [start, end) are
 * zeroed, as the portable kernel zeroes them; an empty or out of bounds range runs the portable kernel.
 */
#define mn_signal_energy_s16 mn_signal_energy_s16_portable
#include "signal_energy.portable.inc"
#undef mn_signal_energy_s16
#include "mn_host.h"

#if defined(MNH_AVX2)
void mn_signal_energy_s16(const mn_word *args) {
    uint32_t *out = MN_P(uint32_t, OUT);
    const int16_t *x = MN_P(const int16_t, IN);
    const int32_t count = MN_I(COUNT), start = MN_I(START), end = MN_I(END);
    if (start < 0 || end > count || start >= end) {
        mn_signal_energy_s16_portable(args);
        return;
    }
    for (int32_t i = 0; i < start; i++) out[i] = 0;
    int32_t i = start;
    for (; i + 8 <= end; i += 8) {
        const __m256i v = _mm256_loadu_si256((const __m256i *)(x + 2 * i));
        _mm256_storeu_si256((__m256i *)(out + i), _mm256_madd_epi16(v, v));
    }
    for (; i < end; i++) {
        const int32_t re = x[2 * i], im = x[2 * i + 1];
        out[i] = (uint32_t)(re * re) + (uint32_t)(im * im);
    }
    for (i = end; i < count; i++) out[i] = 0;
}
#else
void mn_signal_energy_s16(const mn_word *args) { mn_signal_energy_s16_portable(args); }
#endif
