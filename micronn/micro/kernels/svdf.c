/* SVDF, int8 input and output with an int16 activation state (TFLM's integer reference kernel).
 *
 * The state (batch, num_filters * memory_size) shifts left by one element; each filter's newest slot gets
 * the requantized feature projection weights_feature . (x - input_zp); then each filter's state window is
 * dotted with weights_time, groups of `rank` filters are summed with the bias and requantized.
 */
#include "mn_kernels.h"

enum { OUT, IN, W_FEATURE, W_TIME, BIAS, STATE, BATCHES, INPUT_SIZE, FILTERS, MEMORY, RANK, IN_ZP, STATE_ZP, OUT_ZP,
       MULT_1, SHIFT_1, MULT_2, SHIFT_2 };

void mn_svdf_s8(const mn_word *args) {
    int8_t *out = MN_P(int8_t, OUT);
    const int8_t *in = MN_P(const int8_t, IN), *wf = MN_P(const int8_t, W_FEATURE);
    const int16_t *wt = MN_P(const int16_t, W_TIME);
    const int32_t *bias = MN_P(const int32_t, BIAS);
    int16_t *state = MN_P(int16_t, STATE);
    const int batches = MN_I(BATCHES), input_size = MN_I(INPUT_SIZE), filters = MN_I(FILTERS);
    const int memory = MN_I(MEMORY), rank = MN_I(RANK), units = filters / rank;
    const int32_t in_zp = MN_I(IN_ZP), state_zp = MN_I(STATE_ZP), out_zp = MN_I(OUT_ZP);
    const int32_t mult_1 = MN_I(MULT_1), shift_1 = MN_I(SHIFT_1), mult_2 = MN_I(MULT_2), shift_2 = MN_I(SHIFT_2);
    const size_t total = (size_t)batches * filters * memory;

    for (size_t i = 0; i + 1 < total; i++) state[i] = state[i + 1]; /* TFLM shifts the whole buffer one element */
    for (int b = 0; b < batches; b++) {
        const int8_t *x = in + (size_t)b * input_size;
        int16_t *s = state + (size_t)b * filters * memory;
        for (int f = 0; f < filters; f++) {
            const int8_t *w = wf + (size_t)f * input_size;
            uint32_t acc = 0;
            for (int i = 0; i < input_size; i++) acc += (uint32_t)((x[i] - in_zp) * w[i]);
            int32_t v = mn_clamp(mn_mbqm((int32_t)acc, mult_1, shift_1), -32768, 32767); /* then + zp, wrapping */
            s[(size_t)f * memory + memory - 1] = (int16_t)(v + state_zp);
        }
        for (int u = 0; u < units; u++) {
            uint32_t acc = (uint32_t)bias[u];
            for (int f = u * rank; f < (u + 1) * rank; f++) {
                const int16_t *sf = s + (size_t)f * memory, *w = wt + (size_t)f * memory;
                for (int m = 0; m < memory; m++) acc += (uint32_t)(sf[m] - state_zp) * (uint32_t)w[m]; /* may wrap */
            }
            out[(size_t)b * units + u] = (int8_t)mn_add_clamp(mn_mbqm((int32_t)acc, mult_2, shift_2), out_zp, -128, 127);
        }
    }
}
