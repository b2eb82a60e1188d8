/* SignalPCAN, uint32 (TFLM signal library): per-channel gain control driven by the noise estimate.
 *
 * The int16 gain of a noise estimate e is gain_lut[e] for e <= 2; otherwise, with b = bit_length(e),
 * k = 4b - 6 and f the 10 bits below e's leading one, the quadratic
 * ((((lut[k+2] * f) >> 5) + lut[k+1] * 32) * f + 2^14) >> 15, plus lut[k], truncated to int16 (int32 arithmetic
 * with floor shifts: it cannot overflow for int16 entries and f < 1024). The gain, sign-extended to uint32,
 * multiplies the input in uint64; shifted right by snr_shift and truncated it is the SNR s, and the output is
 * (s * s) >> 20 below 8192 and (s >> 6) - 64 from there. No state.
 */
#include "mn_kernels.h"

enum { OUT, IN, NOISE, LUT, COUNT, SNR_SHIFT };

static int16_t gain(uint32_t e, const int16_t *lut) {
    if (e <= 2) return lut[e];
    const int b = 32 - mn_clz32(e);
    const int k = 4 * b - 6;
    const int32_t f = (int32_t)((b < 11 ? e << (11 - b) : e >> (b - 11)) & 0x3FF);
    const int32_t r = ((((lut[k + 2] * f) >> 5) + lut[k + 1] * 32) * f + (1 << 14)) >> 15;
    return (int16_t)(r + lut[k]);
}

void mn_signal_pcan_u32(const mn_word *args) {
    uint32_t *out = MN_P(uint32_t, OUT);
    const uint32_t *x = MN_P(const uint32_t, IN), *noise = MN_P(const uint32_t, NOISE);
    const int16_t *lut = MN_P(const int16_t, LUT);
    const int32_t count = MN_I(COUNT), shift = MN_I(SNR_SHIFT);
    for (int32_t i = 0; i < count; i++) {
        const uint32_t g = (uint32_t)(int32_t)gain(noise[i], lut);
        const uint32_t snr = (uint32_t)(((uint64_t)x[i] * g) >> shift);
        out[i] = snr < 8192 ? (snr * snr) >> 20 : (snr >> 6) - 64;
    }
}
