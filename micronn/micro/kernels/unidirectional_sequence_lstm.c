/* UNIDIRECTIONAL_SEQUENCE_LSTM, int8 (TFLM's int8x8_16 scheme): int8 input, output and hidden state, int8 weights,
 * int32 biases, an int16 cell state. The time loop runs here: one call computes the whole sequence.
 *
 * Per time step and batch row, for the gates forget, input, cell and output (in that order):
 *   pre  = sat16(sat16(mbqm(W_x x + bias)) + sat16(mbqm(W_h h)))  (each product rescaled to int16 at 2^-12)
 *   gate = sigmoid16(pre) for forget, input, output; tanh16(pre) (or pre itself) for the cell gate
 *   c    = sat16(mul(forget, c) + mul(input, cell_gate)), clipped to +-clip when the model sets a cell clip
 *   h    = mul(tanh16(c), output) + hidden zero point, saturated to int8; out[t] = h
 * The zero points are folded by the lowering: each sum is bias' + sum x * (w - w_zp), with
 * bias' = bias - x_zp * sum (w - w_zp) (int32 wrap-around, as the reference wraps the sum). The four gate vectors
 * of a row live in the scratch buffers the Python kernel requested; the recurrent products all read the row's old
 * hidden state, which is replaced only once its four gates are known.
 *
 * sigmoid16 / tanh16 are TFLM's int16 LOGISTIC / TANH (Q0.15 outputs) on their rescaled int32 input: the
 * 256-entry sigmoid table (unsigned Q0.16, from the lowering), interpolated with 9 (sigmoid) or 8 (tanh, as
 * 2 sigmoid(2x) - 1) fraction bits of |x|, mirrored for x < 0.
 */
#include "mn_kernels.h"

enum {
    OUT, IN, W_IN, W_REC = W_IN + 4, BIAS_IN = W_REC + 4, BIAS_REC, QUANT, HIDDEN, CELL, SCRATCH, TABLE = SCRATCH + 4,
    BATCH, STEPS, N_INPUT, UNITS, TIME_MAJOR, CELL_TANH, FORGET_MUL, FORGET_SHIFT, INPUT_MUL, INPUT_SHIFT, HIDDEN_MUL,
    HIDDEN_SHIFT, HIDDEN_ZP, TANH_MUL, TANH_RND, TANH_SHIFT, USE_CLIP, CLIP
};
enum { FORGET, INPUT_GATE, CELL_GATE, OUTPUT_GATE, GATES };

static inline int32_t sat16(int32_t x) { return mn_clamp(x, -32768, 32767); }

/* |v| as an unsigned word (INT32_MIN gives 2^31, as the reference's masked int64). */
static inline uint32_t magnitude(int32_t v) { return v < 0 ? 0u - (uint32_t)v : (uint32_t)v; }

/* The table interpolated at |v| with `bits` fraction bits, or `saturated` past the table's last interval. */
static inline int32_t interpolate(const uint16_t *table, uint32_t a, int bits, int32_t saturated) {
    const uint32_t whole = a >> bits;
    if (whole >= 255u) return saturated;
    const int32_t lo = table[whole], hi = table[whole + 1];
    return (int32_t)((uint32_t)lo << bits) + (int32_t)(a & ((1u << bits) - 1u)) * (hi - lo);
}

/* TFLM's int16 sigmoid of the rescaled input v, in Q0.15. */
static int16_t sigmoid16(const uint16_t *table, int32_t v) {
    const uint32_t r = (uint32_t)interpolate(table, magnitude(v), 9, 0x7FFF << 10);
    const uint32_t rounded = v >= 0 ? r + (1u << 9) : (1u << 25) - r + (1u << 9) - 1u;
    return (int16_t)(uint16_t)(rounded >> 10);
}

/* TFLM's int16 tanh of the rescaled input v, in Q0.15. */
static int16_t tanh16(const uint16_t *table, int32_t v) {
    const uint32_t r = (uint32_t)interpolate(table, magnitude(v), 8, 0xFFFF << 8);
    const uint32_t shifted = v >= 0 ? r - (1u << 23) + (1u << 7) : (1u << 23) - r + (1u << 7) - 1u;
    return (int16_t)(uint16_t)(uint32_t)((int32_t)shifted >> 8);
}

/* One fully connected product to int16: bias + sum x * (w + w_off) (int32 wrap), rescaled and saturated. */
static int32_t gate_fc(const int8_t *x, const int8_t *w, int n, int32_t bias, const int32_t *quant) {
    const int32_t w_off = quant[2];
    int32_t acc;
    if (w_off == 0) {
        acc = mn_dot_s8(x, w, n, bias);
    } else {
        uint32_t a = (uint32_t)bias;
        for (int j = 0; j < n; j++) a += (uint32_t)(x[j] * (w[j] + w_off));
        acc = (int32_t)a;
    }
    return sat16(mn_mbqm(acc, quant[0], quant[1]));
}

/* TFLM's element-wise product of two int16 values into the output scale: rescaled, offset, saturated. */
static inline int32_t scaled_mul(int32_t a, int32_t b, int32_t mult, int32_t shift, int32_t zp, int32_t lo,
                                 int32_t hi) {
    return mn_add_clamp(mn_mbqm(a * b, mult, shift), zp, lo, hi);
}

void mn_unidirectional_sequence_lstm_s8(const mn_word *args) {
    int8_t *out = MN_P(int8_t, OUT);
    const int8_t *in = MN_P(const int8_t, IN);
    const int32_t *bias_in = MN_P(const int32_t, BIAS_IN), *bias_rec = MN_P(const int32_t, BIAS_REC);
    const int32_t *quant = MN_P(const int32_t, QUANT); /* (multiplier, shift, weight offset): 4 input FCs, 4 recurrent */
    int8_t *hidden_all = MN_P(int8_t, HIDDEN);
    int16_t *cell_all = MN_P(int16_t, CELL);
    const uint16_t *table = MN_P(const uint16_t, TABLE);
    const int batch = MN_I(BATCH), steps = MN_I(STEPS), n_input = MN_I(N_INPUT), units = MN_I(UNITS);
    const int time_major = MN_I(TIME_MAJOR), cell_tanh = MN_I(CELL_TANH), use_clip = MN_I(USE_CLIP);
    const int32_t clip = MN_I(CLIP), hidden_zp = MN_I(HIDDEN_ZP);
    const uint32_t tanh_mul = (uint32_t)MN_I(TANH_MUL), tanh_rnd = (uint32_t)MN_I(TANH_RND);
    const int tanh_shift = MN_I(TANH_SHIFT);
    int16_t *gate[GATES];
    for (int g = 0; g < GATES; g++) gate[g] = MN_P(int16_t, SCRATCH + g);

    for (int t = 0; t < steps; t++) {
        for (int b = 0; b < batch; b++) {
            const int row = time_major ? t * batch + b : b * steps + t;
            const int8_t *x = in + (size_t)row * n_input;
            int8_t *h = hidden_all + (size_t)b * units;
            int16_t *c = cell_all + (size_t)b * units;
            for (int g = 0; g < GATES; g++) {
                const int8_t *w_in = MN_P(const int8_t, W_IN + g), *w_rec = MN_P(const int8_t, W_REC + g);
                for (int u = 0; u < units; u++) {
                    const int32_t from_x = gate_fc(x, w_in + (size_t)u * n_input, n_input, bias_in[g * units + u],
                                                   quant + 3 * g);
                    const int32_t from_h = gate_fc(h, w_rec + (size_t)u * units, units, bias_rec[g * units + u],
                                                   quant + 3 * (GATES + g));
                    const int32_t pre = sat16(from_x + from_h);
                    int32_t y;
                    if (g != CELL_GATE) y = sigmoid16(table, 3 * pre); /* the (0, 0) input parameters: 3 x */
                    else y = cell_tanh ? tanh16(table, 3 * pre) : pre;
                    gate[g][u] = (int16_t)y;
                }
            }
            for (int u = 0; u < units; u++) {
                const int32_t kept = scaled_mul(gate[FORGET][u], c[u], MN_I(FORGET_MUL), MN_I(FORGET_SHIFT), 0,
                                                -32768, 32767);
                const int32_t added = scaled_mul(gate[INPUT_GATE][u], gate[CELL_GATE][u], MN_I(INPUT_MUL),
                                                 MN_I(INPUT_SHIFT), 0, -32768, 32767);
                int32_t cell = sat16(kept + added);
                if (use_clip) cell = mn_clamp(cell, -clip, clip);
                c[u] = (int16_t)cell;
                const int32_t v = (int32_t)((uint32_t)cell * tanh_mul + tanh_rnd) >> tanh_shift;
                const int8_t hv = (int8_t)scaled_mul(tanh16(table, v), gate[OUTPUT_GATE][u], MN_I(HIDDEN_MUL),
                                                     MN_I(HIDDEN_SHIFT), hidden_zp, -128, 127);
                h[u] = hv;
            }
            memcpy(out + (size_t)row * units, h, (size_t)units);
        }
    }
}
