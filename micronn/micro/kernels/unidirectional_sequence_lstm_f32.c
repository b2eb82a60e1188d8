/* UNIDIRECTIONAL_SEQUENCE_LSTM, float32, as micronn's Python kernel (TFLM's reference) computes it. The time loop
 * runs here: one call computes the whole sequence.
 *
 * Per time step and batch row, for the gates forget, input, cell and output:
 *   pre  = clamp(W_x x + bias) + clamp(W_h h + 0)  (each sum from 0 in index order, products rounded first;
 *                                                   clamp: infinities to +-FLT_MAX)
 *   gate = sigmoid(pre) for forget, input, output; tanhf(pre) (or pre itself) for the cell gate
 *   c    = clamp(forget * c) + clamp(input * cell_gate), clipped to +-clip when the model sets a cell clip
 *   h    = clamp(tanhf(c) * output); out[t] = h
 * The gate vectors of a row live in the scratch buffers the Python kernel requested; every recurrent product
 * reads the row's old hidden state, replaced once its four gates are known.
 *
 * The reference calls the C library for expf (in TFLM's sigmoid) and tanhf: mn_libm.h has glibc's algorithms.
 */
#include "mn_libm.h"

enum {
    OUT, IN, W_IN, W_REC = W_IN + 4, BIAS = W_REC + 4, HIDDEN = BIAS + 4, CELL, SCRATCH, BATCH = SCRATCH + 4, STEPS,
    N_INPUT, UNITS, TIME_MAJOR, CELL_TANH, CELL_CLIP
};
enum { FORGET, INPUT_GATE, CELL_GATE, OUTPUT_GATE, GATES };

#define LSTM_FLT_MAX 0x1.fffffep+127f

static inline float lstm_clamp(float x) { return mn_f32_clamp(x, -LSTM_FLT_MAX, LSTM_FLT_MAX); }

/* sum x[j] w[j] from 0 in index order, each product rounded before it is added. */
static float lstm_dot(const float *x, const float *w, int n) {
    float total = 0.0f;
    for (int j = 0; j < n; j++) total = mn_f32_mac(total, x[j], w[j]);
    return total;
}

void mn_unidirectional_sequence_lstm_f32(const mn_word *args) {
    float *out = MN_P(float, OUT);
    const float *in = MN_P(const float, IN);
    float *hidden_all = MN_P(float, HIDDEN), *cell_all = MN_P(float, CELL);
    const int batch = MN_I(BATCH), steps = MN_I(STEPS), n_input = MN_I(N_INPUT), units = MN_I(UNITS);
    const int time_major = MN_I(TIME_MAJOR), cell_tanh = MN_I(CELL_TANH);
    const float clip = mn_f32_arg(args, CELL_CLIP);
    float *gate[GATES];
    for (int g = 0; g < GATES; g++) gate[g] = MN_P(float, SCRATCH + g);

    for (int t = 0; t < steps; t++) {
        for (int b = 0; b < batch; b++) {
            const int row = time_major ? t * batch + b : b * steps + t;
            const float *x = in + (size_t)row * n_input;
            float *h = hidden_all + (size_t)b * units, *c = cell_all + (size_t)b * units;
            for (int g = 0; g < GATES; g++) {
                const float *w_in = MN_P(const float, W_IN + g), *w_rec = MN_P(const float, W_REC + g);
                const float *bias = MN_P(const float, BIAS + g);
                for (int u = 0; u < units; u++) {
                    const float from_x = lstm_dot(x, w_in + (size_t)u * n_input, n_input) + bias[u];
                    const float from_h = lstm_dot(h, w_rec + (size_t)u * units, units) + 0.0f;
                    const float pre = lstm_clamp(from_x) + lstm_clamp(from_h);
                    float y;
                    if (g != CELL_GATE) y = mn_libm_sigmoid(pre);
                    else y = cell_tanh ? mn_libm_tanhf(pre) : pre;
                    gate[g][u] = y;
                }
            }
            for (int u = 0; u < units; u++) {
                const float kept = gate[FORGET][u] * c[u];
                const float added = gate[INPUT_GATE][u] * gate[CELL_GATE][u];
                float cell = lstm_clamp(kept) + lstm_clamp(added);
                if (clip > 0.0f && cell == cell) {      /* np.minimum / np.maximum: NaN passes */
                    if (cell > clip) cell = clip;
                    if (cell < -clip) cell = -clip;
                }
                c[u] = cell;
                const float squashed = mn_libm_tanhf(cell);
                const float product = squashed * gate[OUTPUT_GATE][u];
                h[u] = lstm_clamp(product);
            }
            memcpy(out + (size_t)row * units, h, (size_t)units * sizeof(float));
        }
    }
}
