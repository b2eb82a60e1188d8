/* SignalFilterBank, uint32 (TFLM signal library): triangular filters over an energy spectrum, uint64 sums.
 *
 * The lowering passes the bands that prepare kept (those of positive width), four words each: the band's index c,
 * its first input bin, its first weight and its width. A band's rising edge (weights times bins) goes to channel
 * c - 1 and its falling edge (unweights times bins) to channel c, when those channels exist. Everything is uint64
 * and wraps: an int16 weight is sign-extended to 64 bits, so a negative weight acts as 2^64 + w.
 */
#include "mn_kernels.h"

enum { OUT, IN, WEIGHTS, UNWEIGHTS, BANDS, N_BANDS, CHANNELS };

void mn_signal_filter_bank_u32(const mn_word *args) {
    uint64_t *out = MN_P(uint64_t, OUT);
    const uint32_t *x = MN_P(const uint32_t, IN);
    const int16_t *w = MN_P(const int16_t, WEIGHTS), *u = MN_P(const int16_t, UNWEIGHTS);
    const int32_t *band = MN_P(const int32_t, BANDS);
    const int32_t n_bands = MN_I(N_BANDS), channels = MN_I(CHANNELS);
    for (int32_t c = 0; c < channels; c++) out[c] = 0;
    for (int32_t b = 0; b < n_bands; b++, band += 4) {
        const int32_t c = band[0], width = band[3];
        const uint32_t *bins = x + band[1];
        const int16_t *wb = w + band[2], *ub = u + band[2];
        uint64_t rising = 0, falling = 0;
        for (int32_t i = 0; i < width; i++) {
            rising += (uint64_t)(int64_t)wb[i] * bins[i];
            falling += (uint64_t)(int64_t)ub[i] * bins[i];
        }
        if (c >= 1) out[c - 1] += rising;
        if (c < channels) out[c] += falling;
    }
}
