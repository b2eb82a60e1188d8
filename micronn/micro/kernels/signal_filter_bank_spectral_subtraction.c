/* SignalFilterBankSpectralSubtraction, uint32 (TFLM signal library): noise reduction against a running noise
 * estimate per channel, which persists between invokes in the arena's persistent tail (`STATE`, zeroed at reset).
 *
 * Per channel, with the (smoothing, one_minus_smoothing) pair prepare chose for it (the alternate one on odd
 * channels): signal = input << smoothing_bits (uint32); estimate = (signal * smoothing + state * keep) >>
 * spectral_subtraction_bits, in uint64 (the sum wraps), truncated to uint32; the estimate used is
 * min(estimate, signal), and the state keeps it (clamping) or the estimate; floor = (input * min_signal_remaining)
 * >> spectral_subtraction_bits; output max((signal - used) >> smoothing_bits, floor); the noise output is the state.
 */
#include "mn_kernels.h"

enum { OUT, NOISE, IN, STATE, SMOOTHING, KEEP, COUNT, MIN_REMAINING, BITS, SUB_BITS, CLAMPING };

void mn_signal_filter_bank_spectral_subtraction_u32(const mn_word *args) {
    uint32_t *out = MN_P(uint32_t, OUT), *noise = MN_P(uint32_t, NOISE), *state = MN_P(uint32_t, STATE);
    const uint32_t *x = MN_P(const uint32_t, IN);
    const uint32_t *smoothing = MN_P(const uint32_t, SMOOTHING), *keep = MN_P(const uint32_t, KEEP);
    const int32_t count = MN_I(COUNT), bits = MN_I(BITS), sub_bits = MN_I(SUB_BITS), clamping = MN_I(CLAMPING);
    const uint32_t min_remaining = (uint32_t)args[MIN_REMAINING];
    for (int32_t i = 0; i < count; i++) {
        const uint32_t in = x[i], signal = in << bits;
        const uint64_t mixed = (uint64_t)signal * smoothing[i] + (uint64_t)state[i] * keep[i];
        const uint32_t estimate = (uint32_t)(mixed >> sub_bits);
        const uint32_t used = estimate < signal ? estimate : signal;
        const uint32_t floor = (uint32_t)(((uint64_t)in * min_remaining) >> sub_bits);
        const uint32_t cleaned = (signal - used) >> bits;
        state[i] = clamping ? used : estimate;
        out[i] = cleaned > floor ? cleaned : floor;
        noise[i] = state[i];
    }
}
