/* SignalEnergy, int16 (TFLM signal library): real^2 + imag^2 of the interleaved complex bins [start, end), as
 * uint32 (the largest, two -32768s, is 2^31: exact). The other output elements, which TFLM leaves as the arena
 * held them, are zeroed as micronn's reference does, so the output is always defined.
 */
#include "mn_kernels.h"

enum { OUT, IN, COUNT, START, END };

void mn_signal_energy_s16(const mn_word *args) {
    uint32_t *out = MN_P(uint32_t, OUT);
    const int16_t *x = MN_P(const int16_t, IN);
    const int32_t count = MN_I(COUNT), start = MN_I(START), end = MN_I(END);
    for (int32_t i = 0; i < count; i++) out[i] = 0;
    for (int32_t i = start; i < end; i++) {
        const int32_t re = x[2 * i], im = x[2 * i + 1];
        out[i] = (uint32_t)(re * re) + (uint32_t)(im * im);
    }
}
