/* SignalFilterBankLog, uint32 (TFLM signal library): a scaled natural log of each channel, as int16.
 *
 * v = input << input_correction_bits (uint32); 0 and 1 give 0. Otherwise log2(v) in 16.16 fixed point: the
 * position p of the leading one, plus the 16-bit fraction t below it (shifted up, or down with truncation)
 * corrected by the lowering's 129-entry table c of log2(1 + i/128) - i/128: with j = t >> 9,
 * t + c[j] + (((c[j+1] - c[j]) * (t - 512 j)) >> 16) (a floor shift). Then ln = (45426 * log2 + 2^15) >> 16 in
 * 64 bits, out = ((ln * output_scale + 2^15) mod 2^32) >> 16 (the product and the rounding term wrap in uint32),
 * saturated to 32767.
 */
#include "mn_kernels.h"

enum { OUT, IN, CORRECTION, COUNT, BITS, SCALE };

void mn_signal_filter_bank_log_u32(const mn_word *args) {
    int16_t *out = MN_P(int16_t, OUT);
    const uint32_t *x = MN_P(const uint32_t, IN);
    const int32_t *c = MN_P(const int32_t, CORRECTION);
    const int32_t count = MN_I(COUNT), bits = MN_I(BITS);
    const uint32_t scale = (uint32_t)args[SCALE];
    for (int32_t i = 0; i < count; i++) {
        const uint32_t v = x[i] << bits;
        if (v <= 1) {
            out[i] = 0;
            continue;
        }
        const int p = 31 - mn_clz32(v);
        const uint32_t rest = v - ((uint32_t)1 << p);
        const int32_t t = (int32_t)(p < 16 ? rest << (16 - p) : rest >> (p - 16));
        const int32_t j = t >> 9;
        const int32_t log2 = (p << 16) + t + c[j] + (((c[j + 1] - c[j]) * (t - (j << 9))) >> 16);
        const uint32_t ln = (uint32_t)(((int64_t)45426 * log2 + (1 << 15)) >> 16);
        const uint32_t scaled = (ln * scale + (1u << 15)) >> 16;
        out[i] = (int16_t)(scaled < 32767 ? scaled : 32767);
    }
}
