/* SignalFftAutoScale, int16 (TFLM signal library): shift a frame left as far as its peak allows.
 *
 * The peak is TFLM's running int16 value, from 0: a sample above it replaces it, else a sample whose negation is
 * above it replaces it by that negation, cast to int16 (so -32768 makes it -32768 and later samples start it
 * again). The shift is 15 - bit_length(peak) for a peak above 0 and 0 otherwise; every sample is shifted by it and
 * truncated to int16 (bits pushed past bit 15 are lost), and the shift is written to the int32 scalar output. The
 * whole frame is read before the first write, so an output placed over the input is fine.
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
        if (v > peak) peak = v;
        else if (-v > peak) peak = (int16_t)-v;
    }
    const int shift = peak > 0 ? mn_clz32((uint32_t)peak) - 17 : 0; /* 15 - bit_length(peak) */
    for (int32_t i = 0; i < count; i++) out[i] = (int16_t)((uint32_t)(int32_t)x[i] << shift);
    *MN_P(int32_t, SCALE) = shift;
}
