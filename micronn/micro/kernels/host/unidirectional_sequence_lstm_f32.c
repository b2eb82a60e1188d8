/* UNIDIRECTIONAL_SEQUENCE_LSTM, float32: the host port (x86-64 with AVX2) of
 * kernels/unidirectional_sequence_lstm_f32.c, same symbol, same argument words.
 *
 * The portable kernel's time is its dot products, each one chain of dependent additions. Here the four gates'
 * weight rows (4 * units of them) are transposed once per call site into blocks of 8 rows, so one vector holds 8
 * rows' sums, each lane still adding its products one at a time from 0 in index order (products rounded first,
 * no FMA), and four blocks run side by side. A time step computes every batch row's gate rows first (each from
 * its own old hidden state, as in the portable kernel), gathered gate by gate, so the activations (mn_host_libm.h:
 * glibc's expf and tanhf bit for bit) and the cell update then run over the whole step's batch rows in a few long
 * calls instead of short ones per row.
 */
#define mn_unidirectional_sequence_lstm_f32 mn_unidirectional_sequence_lstm_f32_portable
#include "unidirectional_sequence_lstm_f32.portable.inc"
#undef mn_unidirectional_sequence_lstm_f32
#include "mn_host.h"
#include "mn_host_libm.h"

#if defined(MNH_AVX2)
typedef struct {
    int blocks;     /* 8-row blocks of the 4 * units gate rows */
    float *w_in;    /* per block: n_input vectors of 8 rows' weights */
    float *w_rec;   /* per block: units vectors */
    float *bias;    /* per gate row, padded to whole blocks */
    float *pre;     /* one batch row's gate rows' pre-activations at one step */
    float *gates;   /* one step's, gate by gate: [gate][batch row][unit], then their activations in place */
    float *cell, *squashed; /* one step's new cells and their tanhf: [batch row][unit] */
    float *from_x;  /* per input row: clamp(W_x x + bias) of every gate row */
    size_t from_x_rows;
} lstm_pack;

static lstm_pack *lstm_prepare(const mn_word *args) {
    mnh_slot *slot;
    lstm_pack *p = (lstm_pack *)mnh_lookup(args, &slot);
    if (p) return p;
    const int n_input = MN_I(N_INPUT), units = MN_I(UNITS), rows = GATES * units, blocks = (rows + 7) / 8;
    const size_t cells = (size_t)MN_I(BATCH) * units;
    p = (lstm_pack *)mnh_alloc(sizeof(lstm_pack));
    if (!p) return NULL;
    p->blocks = blocks;
    p->w_in = (float *)mnh_alloc((size_t)blocks * n_input * 8 * sizeof(float));
    p->w_rec = (float *)mnh_alloc((size_t)blocks * units * 8 * sizeof(float));
    p->bias = (float *)mnh_alloc((size_t)blocks * 8 * sizeof(float));
    p->pre = (float *)mnh_alloc((size_t)blocks * 8 * sizeof(float));
    p->gates = (float *)mnh_alloc(GATES * cells * sizeof(float));
    p->cell = (float *)mnh_alloc(cells * sizeof(float));
    p->squashed = (float *)mnh_alloc(cells * sizeof(float));
    if (!p->w_in || !p->w_rec || !p->bias || !p->pre || !p->gates || !p->cell || !p->squashed) return NULL;
    for (int r = 0; r < rows; r++) {
        const int g = r / units, u = r % units, b = r / 8, lane = r % 8;
        const float *wi = MN_P(const float, W_IN + g) + (size_t)u * n_input;
        const float *wr = MN_P(const float, W_REC + g) + (size_t)u * units;
        for (int j = 0; j < n_input; j++) p->w_in[((size_t)b * n_input + j) * 8 + lane] = wi[j];
        for (int j = 0; j < units; j++) p->w_rec[((size_t)b * units + j) * 8 + lane] = wr[j];
        p->bias[r] = MN_P(const float, BIAS + g)[u];
    }
    mnh_keep(slot, args, p);
    return p;
}

/* acc[r * m + k]: block k's sums from 0 over x[r][0..n) . w (blocks n * 8 floats apart), each lane in index order
 * (products rounded first, the sum's NaN first), for `rows` rows of x at once */
__attribute__((always_inline)) static inline void dots(__m256 *acc, const float *const *x, const float *w, int n,
                                                       const int rows, const int m, const int exact) {
    __m256 a[2 * 12]; /* in registers (acc, read back by the NaN check, would be kept in memory) */
    for (int i = 0; i < rows * m; i++) a[i] = _mm256_setzero_ps();
    for (int j = 0; j < n; j++) {
        __m256 xv[2];
        for (int r = 0; r < rows; r++) xv[r] = _mm256_broadcast_ss(x[r] + j);
        for (int k = 0; k < m; k++) {
            const __m256 wv = _mm256_loadu_ps(w + ((size_t)k * n + j) * 8);
            for (int r = 0; r < rows; r++)
                a[r * m + k] = exact ? mnh_add_ps(a[r * m + k], mnh_mul_ps(xv[r], wv))
                                     : _mm256_add_ps(a[r * m + k], _mm256_mul_ps(xv[r], wv));
        }
    }
    for (int i = 0; i < rows * m; i++) acc[i] = a[i];
}

/* dots with m <= 12 blocks of one row, or m <= 6 of two rows (at most 12 sums in flight); a compiler may swap the
 * operands of the vector adds and multiplies, which decides which NaN a sum of two NaNs keeps, so sums with a NaN
 * are computed again with the operand order fixed (mnh_add_ps, mnh_mul_ps: the total's NaN, then the input's) */
static void dots_any(__m256 *acc, const float *const *x, const float *w, int n, int rows, int m) {
    for (int exact = 0; exact < 2; exact++) {
#define ONE(k) case k: exact ? dots(acc, x, w, n, 1, k, 1) : dots(acc, x, w, n, 1, k, 0); break;
#define TWO(k) case 16 + k: exact ? dots(acc, x, w, n, 2, k, 1) : dots(acc, x, w, n, 2, k, 0); break;
        switch ((rows - 1) * 16 + m) {
            ONE(1) ONE(2) ONE(3) ONE(4) ONE(5) ONE(6) ONE(7) ONE(8) ONE(9) ONE(10) ONE(11) ONE(12)
            TWO(1) TWO(2) TWO(3) TWO(4) TWO(5) TWO(6)
        default: break;
        }
#undef ONE
#undef TWO
        if (!mnh_any_nan(acc, rows * m)) return;
    }
}

static inline __m256 clamp_max(__m256 v) { /* infinities to +-FLT_MAX, NaN passes (lstm_clamp) */
    const __m256 lo = _mm256_set1_ps(-LSTM_FLT_MAX), hi = _mm256_set1_ps(LSTM_FLT_MAX);
    v = _mm256_blendv_ps(v, lo, _mm256_cmp_ps(v, lo, _CMP_LT_OQ));
    return _mm256_blendv_ps(v, hi, _mm256_cmp_ps(hi, v, _CMP_LT_OQ));
}

/* p->from_x[r] = clamp(W_x x_r + bias) for the n_rows input rows, two rows at a time (no recurrence: all at once) */
static void inputs_part(lstm_pack *p, const float *in, int n_rows, int n_input) {
    const int blocks = p->blocks, stride = blocks * 8;
    const int groups = (blocks + 5) / 6, per = (blocks + groups - 1) / groups;
    for (int r = 0; r < n_rows; r += 2) {
        const int rows = r + 1 < n_rows ? 2 : 1;
        const float *x[2] = {in + (size_t)r * n_input, in + (size_t)(r + rows - 1) * n_input};
        for (int b0 = 0; b0 < blocks; b0 += per) {
            const int m = blocks - b0 < per ? blocks - b0 : per;
            __m256 acc[12];
            dots_any(acc, x, p->w_in + (size_t)b0 * n_input * 8, n_input, rows, m);
            for (int i = 0; i < rows; i++)
                for (int k = 0; k < m; k++)
                    _mm256_storeu_ps(p->from_x + (size_t)(r + i) * stride + 8 * (b0 + k),
                                     clamp_max(mnh_add_ps(acc[i * m + k], _mm256_loadu_ps(p->bias + 8 * (b0 + k)))));
        }
    }
}

/* p->pre = from_x + clamp(W_h h + 0) for every gate row */
static void pre_activations(const lstm_pack *p, const float *from_x, const float *h, int units) {
    const int blocks = p->blocks, groups = (blocks + 11) / 12, per = (blocks + groups - 1) / groups;
    for (int b0 = 0; b0 < blocks; b0 += per) {
        const int m = blocks - b0 < per ? blocks - b0 : per;
        __m256 acc[12];
        dots_any(acc, &h, p->w_rec + (size_t)b0 * units * 8, units, 1, m);
        for (int k = 0; k < m; k++) {
            const __m256 from_h = mnh_add_ps(acc[k], _mm256_setzero_ps());
            _mm256_storeu_ps(p->pre + 8 * (b0 + k), mnh_add_ps(_mm256_loadu_ps(from_x + 8 * (b0 + k)), clamp_max(from_h)));
        }
    }
}

void mn_unidirectional_sequence_lstm_f32(const mn_word *args) {
    lstm_pack *p = lstm_prepare(args);
    const size_t n_rows = (size_t)MN_I(BATCH) * MN_I(STEPS);
    if (p && p->from_x_rows < n_rows) {
        free(p->from_x);
        p->from_x = (float *)malloc(n_rows * p->blocks * 8 * sizeof(float));
        p->from_x_rows = p->from_x ? n_rows : 0;
    }
    if (!p || !p->from_x) {
        mn_unidirectional_sequence_lstm_f32_portable(args);
        return;
    }
    float *out = MN_P(float, OUT);
    const float *in = MN_P(const float, IN);
    float *hidden_all = MN_P(float, HIDDEN), *cell_all = MN_P(float, CELL);
    const int batch = MN_I(BATCH), steps = MN_I(STEPS), n_input = MN_I(N_INPUT), units = MN_I(UNITS);
    const int time_major = MN_I(TIME_MAJOR), cell_tanh = MN_I(CELL_TANH);
    const float clip = mn_f32_arg(args, CELL_CLIP);
    const size_t cells = (size_t)batch * units;
    const int tail = (int)(cells % 8);
    const __m256i tail_mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(tail), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const __m256 clip_hi = _mm256_set1_ps(clip), clip_lo = _mm256_set1_ps(-clip);
    float *gate[GATES];
    for (int g = 0; g < GATES; g++) gate[g] = p->gates + g * cells;
    inputs_part(p, in, (int)n_rows, n_input);

    for (int t = 0; t < steps; t++) {
        /* every batch row's gate rows, from its old hidden state, gathered gate by gate */
        for (int b = 0; b < batch; b++) {
            const int row = time_major ? t * batch + b : b * steps + t;
            pre_activations(p, p->from_x + (size_t)row * p->blocks * 8, hidden_all + (size_t)b * units, units);
            for (int g = 0; g < GATES; g++)
                memcpy(gate[g] + (size_t)b * units, p->pre + (size_t)g * units, (size_t)units * sizeof(float));
        }
        /* the activations of the whole step at once: sigmoid (forget and input, side by side), tanhf or none (cell),
         * sigmoid (output) */
        mnh_sigmoid_n(gate[FORGET], gate[FORGET], 2 * (int)cells);
        if (cell_tanh) mnh_tanhf_n(gate[CELL_GATE], gate[CELL_GATE], (int)cells);
        mnh_sigmoid_n(gate[OUTPUT_GATE], gate[OUTPUT_GATE], (int)cells);
        /* the cells, then their tanhf, then the hidden states ([batch row][unit], as the state tensors) */
        for (size_t i = 0; i < cells; i += 8) {
            const __m256 c_old =
                i + 8 <= cells ? _mm256_loadu_ps(cell_all + i) : _mm256_maskload_ps(cell_all + i, tail_mask);
            const __m256 kept = mnh_mul_ps(_mm256_loadu_ps(gate[FORGET] + i), c_old);
            const __m256 added =
                mnh_mul_ps(_mm256_loadu_ps(gate[INPUT_GATE] + i), _mm256_loadu_ps(gate[CELL_GATE] + i));
            __m256 cell = mnh_add_ps(clamp_max(kept), clamp_max(added));
            if (clip > 0.0f) { /* NaN passes */
                cell = _mm256_blendv_ps(cell, clip_hi, _mm256_cmp_ps(cell, clip_hi, _CMP_GT_OQ));
                cell = _mm256_blendv_ps(cell, clip_lo, _mm256_cmp_ps(cell, clip_lo, _CMP_LT_OQ));
            }
            if (i + 8 <= cells) _mm256_storeu_ps(p->cell + i, cell);
            else _mm256_maskstore_ps(p->cell + i, tail_mask, cell);
        }
        mnh_tanhf_n(p->squashed, p->cell, (int)cells);
        for (size_t i = 0; i < cells; i += 8) {
            if (i + 8 <= cells) {
                _mm256_storeu_ps(hidden_all + i, clamp_max(mnh_mul_ps(_mm256_loadu_ps(p->squashed + i),
                                                                      _mm256_loadu_ps(gate[OUTPUT_GATE] + i))));
                _mm256_storeu_ps(cell_all + i, _mm256_loadu_ps(p->cell + i));
            } else {
                const __m256 s = _mm256_maskload_ps(p->squashed + i, tail_mask);
                const __m256 o = _mm256_maskload_ps(gate[OUTPUT_GATE] + i, tail_mask);
                _mm256_maskstore_ps(hidden_all + i, tail_mask, clamp_max(mnh_mul_ps(s, o)));
                _mm256_maskstore_ps(cell_all + i, tail_mask, _mm256_maskload_ps(p->cell + i, tail_mask));
            }
        }
        for (int b = 0; b < batch; b++) {
            const int row = time_major ? t * batch + b : b * steps + t;
            memcpy(out + (size_t)row * units, hidden_all + (size_t)b * units, (size_t)units * sizeof(float));
        }
    }
}
#else
void mn_unidirectional_sequence_lstm_f32(const mn_word *args) { mn_unidirectional_sequence_lstm_f32_portable(args); }
#endif
