/* UNIDIRECTIONAL_SEQUENCE_LSTM, float32: the host port (x86-64 with AVX2) of
 * kernels/unidirectional_sequence_lstm_f32.c, same symbol, same argument words.
 *
 * The portable kernel's time is its dot products, each one chain of dependent additions. Here the four gates'
 * weight rows (4 * units of them) are transposed once per call site into blocks of 8 rows, so one vector holds 8
 * rows' sums, each lane still adding its products one at a time from 0 in index order (products rounded first,
 * no FMA), and four blocks run side by side. The gate activations (glibc's expf and tanhf, mn_libm.h) and the
 * cell update are the portable kernel's, one unit at a time.
 */
#define mn_unidirectional_sequence_lstm_f32 mn_unidirectional_sequence_lstm_f32_portable
#include "unidirectional_sequence_lstm_f32.portable.inc"
#undef mn_unidirectional_sequence_lstm_f32
#include "mn_host.h"
#include "mn_host_libm.h"

#if defined(MNH_AVX2)
typedef struct {
    int blocks;   /* 8-row blocks of the 4 * units gate rows */
    float *w_in;  /* per block: n_input vectors of 8 rows' weights */
    float *w_rec; /* per block: units vectors */
    float *bias;  /* per gate row, padded to whole blocks */
    float *pre;   /* the gate rows' pre-activations of one step (8 floats of room past the last) */
    float *act;   /* the gates' activations: [gate][units rounded up to 8] */
} lstm_pack;

static const lstm_pack *lstm_prepare(const mn_word *args) {
    mnh_slot *slot;
    lstm_pack *p = (lstm_pack *)mnh_lookup(args, &slot);
    if (p) return p;
    const int n_input = MN_I(N_INPUT), units = MN_I(UNITS), rows = GATES * units, blocks = (rows + 7) / 8;
    p = (lstm_pack *)mnh_alloc(sizeof(lstm_pack));
    if (!p) return NULL;
    p->blocks = blocks;
    p->w_in = (float *)mnh_alloc((size_t)blocks * n_input * 8 * sizeof(float));
    p->w_rec = (float *)mnh_alloc((size_t)blocks * units * 8 * sizeof(float));
    p->bias = (float *)mnh_alloc((size_t)blocks * 8 * sizeof(float));
    p->pre = (float *)mnh_alloc(((size_t)blocks * 8 + 8) * sizeof(float));
    p->act = (float *)mnh_alloc((size_t)GATES * ((units + 7) / 8 * 8) * sizeof(float));
    if (!p->w_in || !p->w_rec || !p->bias || !p->pre || !p->act) return NULL;
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

/* m (1..4) blocks' sums from 0 over x[0..n) . w (blocks n * 8 floats apart), each lane in index order */
__attribute__((always_inline)) static inline void dots(__m256 *acc, const float *x, const float *w, int n, const int m) {
    for (int k = 0; k < m; k++) acc[k] = _mm256_setzero_ps();
    for (int j = 0; j < n; j++) {
        const __m256 xv = _mm256_set1_ps(x[j]);
        for (int k = 0; k < m; k++)
            acc[k] = _mm256_add_ps(acc[k], _mm256_mul_ps(xv, _mm256_loadu_ps(w + ((size_t)k * n + j) * 8)));
    }
}

static inline __m256 clamp_max(__m256 v) { /* infinities to +-FLT_MAX, NaN passes (lstm_clamp) */
    const __m256 lo = _mm256_set1_ps(-LSTM_FLT_MAX), hi = _mm256_set1_ps(LSTM_FLT_MAX);
    v = _mm256_blendv_ps(v, lo, _mm256_cmp_ps(v, lo, _CMP_LT_OQ));
    return _mm256_blendv_ps(v, hi, _mm256_cmp_ps(hi, v, _CMP_LT_OQ));
}

/* p->pre = clamp(W_x x + bias) + clamp(W_h h + 0) for every gate row */
static void pre_activations(const lstm_pack *p, const float *x, const float *h, int n_input, int units) {
    for (int b0 = 0; b0 < p->blocks; b0 += 4) {
        const int m = p->blocks - b0 < 4 ? p->blocks - b0 : 4;
        __m256 ax[4], ah[4];
        const float *wi = p->w_in + (size_t)b0 * n_input * 8, *wr = p->w_rec + (size_t)b0 * units * 8;
        switch (m) {
        case 1: dots(ax, x, wi, n_input, 1), dots(ah, h, wr, units, 1); break;
        case 2: dots(ax, x, wi, n_input, 2), dots(ah, h, wr, units, 2); break;
        case 3: dots(ax, x, wi, n_input, 3), dots(ah, h, wr, units, 3); break;
        default: dots(ax, x, wi, n_input, 4), dots(ah, h, wr, units, 4); break;
        }
        for (int k = 0; k < m; k++) {
            const __m256 from_x = _mm256_add_ps(ax[k], _mm256_loadu_ps(p->bias + 8 * (b0 + k)));
            const __m256 from_h = _mm256_add_ps(ah[k], _mm256_setzero_ps());
            _mm256_storeu_ps(p->pre + 8 * (b0 + k), _mm256_add_ps(clamp_max(from_x), clamp_max(from_h)));
        }
    }
}

void mn_unidirectional_sequence_lstm_f32(const mn_word *args) {
    const lstm_pack *p = lstm_prepare(args);
    if (!p) {
        mn_unidirectional_sequence_lstm_f32_portable(args);
        return;
    }
    float *out = MN_P(float, OUT);
    const float *in = MN_P(const float, IN);
    float *hidden_all = MN_P(float, HIDDEN), *cell_all = MN_P(float, CELL);
    const int batch = MN_I(BATCH), steps = MN_I(STEPS), n_input = MN_I(N_INPUT), units = MN_I(UNITS);
    const int time_major = MN_I(TIME_MAJOR), cell_tanh = MN_I(CELL_TANH);
    const float clip = mn_f32_arg(args, CELL_CLIP);
    const int padded = (units + 7) / 8 * 8, tail = units % 8;
    const __m256i tail_mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(tail), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const __m256 clip_hi = _mm256_set1_ps(clip), clip_lo = _mm256_set1_ps(-clip);
    float *act = p->act;

    for (int t = 0; t < steps; t++) {
        for (int b = 0; b < batch; b++) {
            const int row = time_major ? t * batch + b : b * steps + t;
            const float *x = in + (size_t)row * n_input;
            float *h = hidden_all + (size_t)b * units, *c = cell_all + (size_t)b * units;
            pre_activations(p, x, h, n_input, units);
            /* activations 8 gate rows at a time (lanes past a gate's last row: unused) */
            for (int g = 0; g < GATES; g++)
                for (int u = 0; u < units; u += 8) {
                    const __m256 pre = _mm256_loadu_ps(p->pre + g * units + u);
                    const __m256 y = g != CELL_GATE ? mnh_sigmoid8(pre) : cell_tanh ? mnh_tanhf8(pre) : pre;
                    _mm256_storeu_ps(act + g * padded + u, y);
                }
            for (int u = 0; u < units; u += 8) {
                const int whole = u + 8 <= units;
                const __m256 c_old = whole ? _mm256_loadu_ps(c + u) : _mm256_maskload_ps(c + u, tail_mask);
                const __m256 kept = mnh_mul_ps(_mm256_loadu_ps(act + FORGET * padded + u), c_old);
                const __m256 added = mnh_mul_ps(_mm256_loadu_ps(act + INPUT_GATE * padded + u),
                                                _mm256_loadu_ps(act + CELL_GATE * padded + u));
                __m256 cell = mnh_add_ps(clamp_max(kept), clamp_max(added));
                if (clip > 0.0f) { /* NaN passes */
                    cell = _mm256_blendv_ps(cell, clip_hi, _mm256_cmp_ps(cell, clip_hi, _CMP_GT_OQ));
                    cell = _mm256_blendv_ps(cell, clip_lo, _mm256_cmp_ps(cell, clip_lo, _CMP_LT_OQ));
                }
                const __m256 h_new = clamp_max(mnh_mul_ps(mnh_tanhf8(cell), _mm256_loadu_ps(act + OUTPUT_GATE * padded + u)));
                if (whole) {
                    _mm256_storeu_ps(c + u, cell);
                    _mm256_storeu_ps(h + u, h_new);
                } else {
                    _mm256_maskstore_ps(c + u, tail_mask, cell);
                    _mm256_maskstore_ps(h + u, tail_mask, h_new);
                }
            }
            memcpy(out + (size_t)row * units, h, (size_t)units * sizeof(float));
        }
    }
}
#else
void mn_unidirectional_sequence_lstm_f32(const mn_word *args) { mn_unidirectional_sequence_lstm_f32_portable(args); }
#endif
