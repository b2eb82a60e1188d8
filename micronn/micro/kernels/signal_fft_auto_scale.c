/* SignalFftAutoScale, int16 (TFLM signal library): shift a frame left as far as its largest magnitude allows.
 *
 * The magnitudes are taken in int16, so -32768 wraps onto itself and never raises the peak. The shift is
 * 15 - bit_length(peak) for a peak above 0 and 0 otherwise; every sample is shifted by it and truncated to int16
 * (bits pushed past bit 15 are lost), and the shift is written to the int32 scalar output. The whole frame is
 * read before the first write, so an output placed over the input is fine.
 */
#include "mn_kernels.h"

enum { OUT, SCALE, IN, COUNT };

void mn_signal_fft_auto_scale_s16(const mn_word *args) {
    int16_t *out = MN_P(int16_t, OUT);
    const int16_t *x = MN_P(const int16_t, IN);
    const int32_t count = MN_I(COUNT);
    int32_t peak = 0;
    for (int32_t i = 0; i < count; i++) {
        const int32_t v = x[i];
        const int32_t magnitude = v < 0 ? -v : v;
        if (magnitude <= 32767 && magnitude > peak) peak = magnitude;
    }
    const int shift = peak > 0 ? mn_clz32((uint32_t)peak) - 17 : 0; /* 15 - bit_length(peak) */
    for (int32_t i = 0; i < count; i++) out[i] = (int16_t)((uint32_t)(int32_t)x[i] << shift);
    *MN_P(int32_t, SCALE) = shift;
}
