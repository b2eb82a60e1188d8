/* UNIDIRECTIONAL_SEQUENCE_LSTM, int8: the host port (x86-64 with AVX2) of kernels/unidirectional_sequence_lstm.c,
 * same symbol, same argument words.
 *
 * The four gates' rows follow each other (row gate * units + unit), 8 per block, so a block may hold two gates: the
 * requantization reads per-row multipliers and shifts. Per call site the input and recurrent rows are repacked as
 * int16 pairs (mn_host.h's layout) holding w + w_off, the weight offset folded in (|w + w_off| < 2^15: one madd
 * stays exact); the int32 sums wrap as the portable kernel's. The activations are tables filled once per call
 * site by the portable kernel's own functions: the gate value of each pre-activation >= 0 (sigmoid16(3 pre); on
 * the cell gate's rows tanh16(3 pre) or pre), a negative one's from its magnitude's (2^15 - sigmoid, -tanh, -pre:
 * the identities are checked on every int16 value when the tables are filled, else the portable kernel runs), and
 * tanh16 of each rescaled int16 cell value; so they are its bytes by construction. Scalar loads read them (AVX2
 * gathers were slower on the machines measured; half tables leave more of L2 to the rest).
 *
 * The input products do not depend on the state: all steps' and batch rows' are summed first, two input rows per
 * weight load, and kept requantized to int16 (mnh_requant8, exact for multipliers >= 0, or the folded form; two
 * blocks per saturating pack). Then per step, two batch rows at a time (one weight load for both, up to 6 blocks
 * of sums in registers): the recurrent sums, their requantization, the saturating int16 add of the input side's
 * (sat16(sat16(x) + sat16(h)), as the reference), the table entries, copied gate-major (gate, row, unit) with the
 * sign fix-up; then the cell and hidden updates of every row at once (batch * units values back to back: no lanes
 * lost to a row's padding), the cell update 16 int16 lanes a vector where its products allow (half16). Rows are
 * independent, and each row's operations are the reference's in its order. The state lives in copies with the rows
 * back to back during the call (an odd unit count's last hidden pair reads the next row's first value against a
 * zero weight) and is written back at its end. Multipliers < 0 or shifts beyond +-31
 * (never from QuantizeMultiplier) run the portable kernel.
 */
#define mn_unidirectional_sequence_lstm_s8 mn_unidirectional_sequence_lstm_s8_portable
#include "unidirectional_sequence_lstm.portable.inc"
#undef mn_unidirectional_sequence_lstm_s8
#include "mn_host.h"

#if defined(MNH_AVX2)
typedef struct {
    int up, kx, kh, blocks; /* units padded to 8; input and hidden pairs; 8-row blocks of the 4 * units gate rows */
    int16_t *w_in, *w_rec;  /* per block: kx (kh) pairs of 16 int16 */
    int32_t *b_in, *b_rec;  /* per row (padded to whole blocks) */
    int fold[2];            /* the input (0) / recurrent (1) products all RQ_FOLDED, else all general */
    int32_t *mult[2], *left[2], *right[2]; /* per row: the general requantization; or multiplier, e - 1 (folded) */
    int64_t *fc[2];         /* folded: per block, the even rows' then the odd rows' 2^30 + 2^(30+e) */
    int32_t rq[8][3][8];    /* per product (4 input, 4 recurrent): mult, left, right as 8 lanes */
    int32_t el[3][3][8];    /* forget * cell, input * cell gate, tanh(cell) * output: mult, left, right */
    int kind[11];           /* per product (8 gates', then the 3 above): RQ_GENERAL, RQ_FOLDED or RQ_HALF */
    int half16;             /* the cell update in int16 lanes (half16): both its products RQ_HALF with shifts 14..29,
                             * every sigmoid value >= 0, a clip within int16 */
    int16_t *gates;         /* the 4 * units gate values of one step, 2 batch rows (row r = gate * units + unit) */
    int16_t *gm;            /* every batch row's gate values, gate-major: gm + g * gms + b * units + u */
    int gms;                /* the gate stride of gm (batch * units, padded) */
    int8_t *h8;             /* the new hidden values of every batch row (batch * units) */
    uint16_t *idx;          /* their table entries (pre + 32768), the same rows */
    int16_t *xw, *hw;       /* every input row widened (kx pairs each); the hidden rows widened (b * units + u) */
    int16_t *xq;            /* per input row: the input products requantized and saturated to int16 (rp each) */
    int16_t *cell;          /* batch * units (padded) */
    int16_t *tc;            /* tanh of the new cell values (as cell) */
    int16_t *lut_gate;      /* the gate value of each pre >= 0 (to 32768): sigmoid, then (from HALF) the cell gate's */
    int16_t *pre;           /* the pre-activations of 2 batch rows (as idx) */
    int16_t *lut_cell;      /* tanh of each int16 cell value, rescaled as the reference */
} lstm_pack;

/* How one product is requantized: mnh_requant8 (general); for a multiplier > 2^30 and a right shift of 1..31
 * both roundings folded into one 64-bit sum (mn_kernels.h's MN_RQ_FOLDED, without a zero point); for a multiplier
 * of exactly 2^30 without a left shift (the cell update's products of two int16), the doubling high multiply is
 * floor((x + 1) / 2). */
enum { RQ_GENERAL, RQ_FOLDED, RQ_HALF };
enum { ROWS = 2, BLOCKS = 6, HALF = 32776 }; /* batch rows and 8-row blocks per register block of sums */

static int rq_kind(int32_t mult, int32_t shift, int small) {
    if (mult == (1 << 30) && shift <= 0 && shift >= -31 && small) return RQ_HALF;
    if (mult > (1 << 30) && shift <= -1 && shift >= -31) return RQ_FOLDED;
    return RQ_GENERAL;
}

static int rq_lanes(int32_t dst[3][8], int32_t mult, int32_t shift) {
    for (int i = 0; i < 8; i++) dst[0][i] = mult, dst[1][i] = shift > 0 ? shift : 0, dst[2][i] = shift < 0 ? -shift : 0;
    return mult >= 0 && shift <= 31 && shift >= -31;
}

/* gate g's rows of (units x depth) int8 weights + off as int16 pairs: row r = g * units + u, 8 rows per block */
static void pack_gate(int16_t *dst, const int8_t *w, int g, int units, int depth, int32_t off) {
    const int kp = mnh_pairs(depth);
    for (int u = 0; u < units; u++) {
        const int r = g * units + u;
        int16_t *d = dst + (size_t)(r / 8) * kp * 16 + 2 * (r % 8);
        for (int i = 0; i < depth; i++) d[(size_t)(i / 2) * 16 + (i & 1)] = (int16_t)(w[(size_t)u * depth + i] + off);
    }
}

static lstm_pack *lstm_prepare(const mn_word *args) {
    mnh_slot *slot;
    lstm_pack *p = (lstm_pack *)mnh_lookup(args, &slot);
    if (p) return p;
    const int batch = MN_I(BATCH), n_input = MN_I(N_INPUT), units = MN_I(UNITS);
    const int up = (units + 7) / 8 * 8, kx = mnh_pairs(n_input), kh = mnh_pairs(units);
    const int blocks = (GATES * units + 7) / 8, rp = 8 * blocks;
    const int32_t *quant = MN_P(const int32_t, QUANT);
    int ok = 1;
    for (int k = 0; k < 2 * GATES; k++) {
        const int32_t off = quant[3 * k + 2];
        if (off < -32767 + 128 || off > 32767 - 128) ok = 0;
    }
    p = (lstm_pack *)mnh_alloc(sizeof(lstm_pack));
    if (!p) return NULL;
    for (int k = 0; k < 2 * GATES; k++) ok &= rq_lanes(p->rq[k], quant[3 * k], quant[3 * k + 1]);
    ok &= rq_lanes(p->el[0], MN_I(FORGET_MUL), MN_I(FORGET_SHIFT));
    ok &= rq_lanes(p->el[1], MN_I(INPUT_MUL), MN_I(INPUT_SHIFT));
    ok &= rq_lanes(p->el[2], MN_I(HIDDEN_MUL), MN_I(HIDDEN_SHIFT));
    for (int k = 0; k < 2 * GATES; k++) p->kind[k] = rq_kind(quant[3 * k], quant[3 * k + 1], 0);
    p->kind[8] = rq_kind(MN_I(FORGET_MUL), MN_I(FORGET_SHIFT), 1);
    p->kind[9] = rq_kind(MN_I(INPUT_MUL), MN_I(INPUT_SHIFT), 1);
    p->kind[10] = rq_kind(MN_I(HIDDEN_MUL), MN_I(HIDDEN_SHIFT), 0);
    if (!ok || MN_I(TANH_SHIFT) < 0 || MN_I(TANH_SHIFT) > 31) {
        free(p);
        return NULL;
    }
    p->up = up, p->kx = kx, p->kh = kh, p->blocks = blocks;
    p->w_in = (int16_t *)mnh_alloc((size_t)blocks * kx * 16 * sizeof(int16_t));
    p->w_rec = (int16_t *)mnh_alloc((size_t)blocks * kh * 16 * sizeof(int16_t));
    p->b_in = (int32_t *)mnh_alloc((size_t)rp * sizeof(int32_t));
    p->b_rec = (int32_t *)mnh_alloc((size_t)rp * sizeof(int32_t));
    const size_t rows = (size_t)batch * MN_I(STEPS);
    p->gates = (int16_t *)mnh_alloc((size_t)ROWS * (rp + 16) * sizeof(int16_t));
    p->idx = (uint16_t *)mnh_alloc((size_t)ROWS * (rp + 16) * sizeof(uint16_t));
    p->xw = (int16_t *)mnh_alloc((rows * 2 * kx + 16) * sizeof(int16_t));
    p->xq = (int16_t *)mnh_alloc((rows * rp + 16) * sizeof(int16_t));
    const size_t nb = (size_t)batch * units;
    p->gms = (int)((nb + 15) / 16 * 16 + 16);
    p->gm = (int16_t *)mnh_alloc((size_t)GATES * p->gms * sizeof(int16_t));
    p->h8 = (int8_t *)mnh_alloc(nb + 32);
    p->hw = (int16_t *)mnh_alloc((nb + 32) * sizeof(int16_t));
    p->cell = (int16_t *)mnh_alloc((nb + 32) * sizeof(int16_t));
    p->tc = (int16_t *)mnh_alloc((nb + 32) * sizeof(int16_t));
    p->lut_gate = (int16_t *)mnh_alloc((size_t)2 * HALF * sizeof(int16_t));
    p->pre = (int16_t *)mnh_alloc((size_t)ROWS * (rp + 16) * sizeof(int16_t));
    p->lut_cell = (int16_t *)mnh_alloc((65536 + 2) * sizeof(int16_t));
    if (!p->w_in || !p->w_rec || !p->b_in || !p->b_rec || !p->gates || !p->idx || !p->xw || !p->xq || !p->hw || !p->cell || !p->tc ||
        !p->lut_gate || !p->lut_cell || !p->pre || !p->gm || !p->h8)
        return NULL;
    { /* the portable kernel's own activations, once per int16 value */
        const uint16_t *table = MN_P(const uint16_t, TABLE);
        const int cell_tanh = MN_I(CELL_TANH), tanh_shift = MN_I(TANH_SHIFT);
        const uint32_t tanh_mul = (uint32_t)MN_I(TANH_MUL), tanh_rnd = (uint32_t)MN_I(TANH_RND);
        int16_t *sig = p->lut_gate, *cg = p->lut_gate + HALF;
        for (int32_t a = 0; a <= 32768; a++) sig[a] = sigmoid16(table, 3 * a), cg[a] = cell_tanh ? tanh16(table, 3 * a) : (int16_t)a;
        for (int32_t v = -32768; v <= 32767; v++) {
            /* sigmoid16(-x) = 2^15 - sigmoid16(x), tanh16(-x) = -tanh16(x) (int16 wrap-around): checked here */
            const int16_t s = v < 0 ? (int16_t)(uint16_t)(0x8000u - (uint16_t)sig[-v]) : sig[v];
            const int16_t c = v < 0 ? (int16_t)(uint16_t)(0u - (uint16_t)cg[-v]) : cg[v];
            if (s != sigmoid16(table, 3 * v) || c != (cell_tanh ? tanh16(table, 3 * v) : (int16_t)v)) ok = 0;
            p->lut_cell[v + 32768] = tanh16(table, (int32_t)((uint32_t)v * tanh_mul + tanh_rnd) >> tanh_shift);
        }
        if (!ok) return NULL;
        p->half16 = 1;
        for (int32_t a = 0; a <= 32768; a++) p->half16 &= sig[a] >= 1; /* so 2^15 - sig[a] >= 1 too */
    }
    for (int k = 8; k < 10; k++) p->half16 &= p->kind[k] == RQ_HALF && p->el[k - 8][2][0] >= 14 && p->el[k - 8][2][0] <= 29;
    if (MN_I(USE_CLIP) && (MN_I(CLIP) < 0 || MN_I(CLIP) > 32767)) p->half16 = 0;
    for (int side = 0; side < 2; side++) {
        p->fold[side] = 1;
        for (int g = 0; g < GATES; g++) p->fold[side] &= p->kind[side * GATES + g] == RQ_FOLDED;
        p->mult[side] = (int32_t *)mnh_alloc((size_t)rp * sizeof(int32_t));
        p->left[side] = (int32_t *)mnh_alloc((size_t)rp * sizeof(int32_t));
        p->right[side] = (int32_t *)mnh_alloc((size_t)rp * sizeof(int32_t));
        p->fc[side] = (int64_t *)mnh_alloc((size_t)rp * sizeof(int64_t));
        if (!p->mult[side] || !p->left[side] || !p->right[side] || !p->fc[side]) return NULL;
        for (int r = 0; r < rp; r++) {
            const int g = r < GATES * units ? r / units : 0, k = side * GATES + g;
            const int32_t m = quant[3 * k], sh = quant[3 * k + 1], e = -sh;
            p->mult[side][r] = m;
            p->left[side][r] = p->fold[side] ? e - 1 : sh > 0 ? sh : 0;
            p->right[side][r] = sh < 0 ? -sh : 0;
            if (p->fold[side])
                p->fc[side][(r / 8) * 8 + (r % 2) * 4 + (r % 8) / 2] = ((int64_t)1 << 30) + ((int64_t)1 << (30 + e));
        }
    }
    const int32_t *bias_in = MN_P(const int32_t, BIAS_IN), *bias_rec = MN_P(const int32_t, BIAS_REC);
    for (int g = 0; g < GATES; g++) {
        pack_gate(p->w_in, MN_P(const int8_t, W_IN + g), g, units, n_input, quant[3 * g + 2]);
        pack_gate(p->w_rec, MN_P(const int8_t, W_REC + g), g, units, units, quant[3 * (GATES + g) + 2]);
        for (int u = 0; u < units; u++) {
            const int r = g * units + u;
            p->b_in[r] = bias_in[r], p->b_rec[r] = bias_rec[r];
        }
    }
    mnh_keep(slot, args, p);
    return p;
}

static inline __m256i requantv(__m256i acc, const int32_t q[3][8], int kind, int32_t zp, int32_t lo, int32_t hi) {
    __m256i y;
    if (kind == RQ_FOLDED) {
        /* v = x * m + 2^30 + 2^(30+e) - [x < 0] 2^31 (exact in int64), y = floor(v / 2^(31+e)): TFLM's two
         * roundings, as the nested floor divisions of MN_RQ_FOLDED */
        const int e = q[2][0];
        const __m256i m = _mm256_set1_epi32(q[0][0]), s = _mm256_srai_epi32(acc, 31);
        const __m256i c = _mm256_set1_epi64x(((int64_t)1 << 30) + ((int64_t)1 << (30 + e)));
        const __m256i se = _mm256_slli_epi64(_mm256_shuffle_epi32(s, 0xA0), 31);
        const __m256i so = _mm256_slli_epi64(_mm256_shuffle_epi32(s, 0xF5), 31);
        const __m256i ve = _mm256_add_epi64(_mm256_add_epi64(_mm256_mul_epi32(acc, m), c), se);
        const __m256i vo = _mm256_add_epi64(_mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(acc, 32), m), c), so);
        const __m256i hi32 = _mm256_blend_epi32(_mm256_srli_epi64(ve, 32), vo, 0xAA);
        y = _mm256_sra_epi32(hi32, _mm_cvtsi32_si128(e - 1));
    } else if (kind == RQ_HALF) {
        const int e = q[2][0];
        const __m256i h = _mm256_srai_epi32(_mm256_add_epi32(acc, _mm256_set1_epi32(1)), 1);
        y = e == 0 ? h
                   : _mm256_sra_epi32(_mm256_add_epi32(_mm256_add_epi32(h, _mm256_srai_epi32(h, 31)),
                                                       _mm256_set1_epi32(1 << (e - 1))),
                                      _mm_cvtsi32_si128(e));
    } else {
        return mnh_requant8(acc, q[0], q[1], q[2], _mm256_set1_epi32(zp), _mm256_set1_epi32(lo - zp),
                            _mm256_set1_epi32(hi - zp));
    }
    y = _mm256_min_epi32(_mm256_max_epi32(y, _mm256_set1_epi32(lo - zp)), _mm256_set1_epi32(hi - zp));
    return _mm256_add_epi32(y, _mm256_set1_epi32(zp));
}

static inline __m256i sat16v(__m256i v) {
    return _mm256_min_epi32(_mm256_max_epi32(v, _mm256_set1_epi32(-32768)), _mm256_set1_epi32(32767));
}

/* R (1..ROWS) rows' sums for M (1..BLOCKS) blocks: acc[i * BLOCKS + k] = bias + sum over kp pairs of x[i] . w
 * (blocks kp * 16 int16 apart), each weight vector loaded once for the R rows */
__attribute__((always_inline)) static inline void dots_rm(__m256i *acc, const int16_t *const *x, const int16_t *w,
                                                         int kp, const int32_t *bias, const int R, const int M) {
    for (int k = 0; k < M; k++) {
        const __m256i b = _mm256_loadu_si256((const __m256i *)(bias + 8 * k));
        for (int i = 0; i < R; i++) acc[i * BLOCKS + k] = b;
    }
    const int32_t *x0 = (const int32_t *)x[0], *x1 = (const int32_t *)x[R > 1 ? 1 : 0];
    for (int j = 0; j < kp; j++) {
        const __m256i xv0 = _mm256_set1_epi32(x0[j]), xv1 = _mm256_set1_epi32(x1[j]);
        for (int k = 0; k < M; k++) {
            const __m256i wv = _mm256_loadu_si256((const __m256i *)(w + ((size_t)k * kp + j) * 16));
            acc[k] = _mm256_add_epi32(acc[k], _mm256_madd_epi16(xv0, wv));
            if (R > 1) acc[BLOCKS + k] = _mm256_add_epi32(acc[BLOCKS + k], _mm256_madd_epi16(xv1, wv));
        }
    }
}

/* block b's sums of one side requantized (the caller saturates to int16: _mm256_packs_epi32) */
static inline __m256i side_requant(const lstm_pack *p, int side, int b, __m256i acc) {
    const int r = 8 * b;
    if (p->fold[side]) { /* requantv's RQ_FOLDED with per-row multipliers and shifts */
        const __m256i m = _mm256_loadu_si256((const __m256i *)(p->mult[side] + r)), s = _mm256_srai_epi32(acc, 31);
        const __m256i se = _mm256_slli_epi64(_mm256_shuffle_epi32(s, 0xA0), 31);
        const __m256i so = _mm256_slli_epi64(_mm256_shuffle_epi32(s, 0xF5), 31);
        const __m256i ce = _mm256_loadu_si256((const __m256i *)(p->fc[side] + r));
        const __m256i co = _mm256_loadu_si256((const __m256i *)(p->fc[side] + r + 4));
        const __m256i ve = _mm256_add_epi64(_mm256_add_epi64(_mm256_mul_epi32(acc, m), ce), se);
        const __m256i vo = _mm256_add_epi64(
            _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(acc, 32), _mm256_srli_epi64(m, 32)), co), so);
        const __m256i hi32 = _mm256_blend_epi32(_mm256_srli_epi64(ve, 32), vo, 0xAA);
        return _mm256_srav_epi32(hi32, _mm256_loadu_si256((const __m256i *)(p->left[side] + r)));
    }
    return mnh_requant8(acc, p->mult[side] + r, p->left[side] + r, p->right[side] + r, _mm256_setzero_si256(),
                        _mm256_set1_epi32(-32768), _mm256_set1_epi32(32767));
}

static inline void store16(int16_t *dst, __m256i y) {
    _mm_storeu_si128((__m128i *)dst, _mm_packs_epi32(_mm256_castsi256_si128(y), _mm256_extracti128_si256(y, 1)));
}

static inline __m256i load16(const int16_t *p) { return _mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i *)p)); }

/* 8 products of int16 pairs as int32: one madd, the second operand zero-extended (its high halves 0) */
static inline __m256i mul16(const int16_t *a, const int16_t *b) {
    return _mm256_madd_epi16(load16(a), _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)b)));
}

/* two blocks' int32 lanes (a, then b) as 16 saturated int16 in order */
static inline __m256i packs2(__m256i a, __m256i b) {
    return _mm256_permute4x64_epi64(_mm256_packs_epi32(a, b), 0xD8);
}

/* 16 int16 (or the first 8 when !two) stored */
static inline void store2(int16_t *dst, __m256i v, int two) {
    if (two) _mm256_storeu_si256((__m256i *)dst, v);
    else _mm_storeu_si128((__m128i *)dst, _mm256_castsi256_si128(v));
}

/* The input products of R input rows (widened: x[i]) for blocks b0..b0+M, requantized: q[i] + 8 * b (rp each),
 * two blocks per saturating pack */
__attribute__((always_inline)) static inline void input_block(const lstm_pack *p, const int16_t *const *x,
                                                             int16_t *const *q, int b0, const int R, const int M) {
    __m256i acc[ROWS * BLOCKS];
    dots_rm(acc, x, p->w_in + (size_t)b0 * p->kx * 16, p->kx, p->b_in + 8 * b0, R, M);
    for (int i = 0; i < R; i++)
        for (int k = 0; k < M; k += 2) {
            const int two = k + 1 < M;
            const __m256i ya = side_requant(p, 0, b0 + k, acc[i * BLOCKS + k]);
            const __m256i yb = two ? side_requant(p, 0, b0 + k + 1, acc[i * BLOCKS + k + 1]) : ya;
            store2(q[i] + 8 * (b0 + k), packs2(ya, yb), two);
        }
}

/* The pre-activations of R batch rows (hidden h[i], requantized input products xq[i]) for blocks b0..b0+M, as table
 * entries: idx[i] (pre + 32768), sat16(x + h) being the saturating int16 add */
__attribute__((always_inline)) static inline void gate_block(const lstm_pack *p, const int16_t *const *h,
                                                            const int16_t *const *xq, uint16_t *const *idx,
                                                            int16_t *const *pres, int b0, const int R, const int M) {
    __m256i acc[ROWS * BLOCKS];
    dots_rm(acc, h, p->w_rec + (size_t)b0 * p->kh * 16, p->kh, p->b_rec + 8 * b0, R, M);
    for (int i = 0; i < R; i++)
        for (int k = 0; k < M; k += 2) {
            const int two = k + 1 < M, r = 8 * (b0 + k);
            const __m256i ya = side_requant(p, 1, b0 + k, acc[i * BLOCKS + k]);
            const __m256i yb = two ? side_requant(p, 1, b0 + k + 1, acc[i * BLOCKS + k + 1]) : ya;
            const __m256i pre = _mm256_adds_epi16(_mm256_loadu_si256((const __m256i *)(xq[i] + r)), packs2(ya, yb));
            store2((int16_t *)idx[i] + r, _mm256_abs_epi16(pre), two);
            store2(pres[i] + r, pre, two);
        }
}

#define MN_RM_M(CALL, r)                                                                                           \
    switch (M) {                                                                                                   \
    case 1: CALL(r, 1); break;                                                                                     \
    case 2: CALL(r, 2 < BLOCKS ? 2 : BLOCKS); break;                                                               \
    case 3: CALL(r, 3 < BLOCKS ? 3 : BLOCKS); break;                                                               \
    case 4: CALL(r, 4 < BLOCKS ? 4 : BLOCKS); break;                                                               \
    case 5: CALL(r, 5 < BLOCKS ? 5 : BLOCKS); break;                                                               \
    default: CALL(r, 6 < BLOCKS ? 6 : BLOCKS); break;                                                              \
    }
#define MN_RM_CASES(CALL)                                                                                          \
    if (R == 1) MN_RM_M(CALL, 1) else MN_RM_M(CALL, 2)

static void input_rows(const lstm_pack *p, const int16_t *const *x, int16_t *const *q, int R) {
    for (int b0 = 0; b0 < p->blocks; b0 += BLOCKS) {
        const int M = p->blocks - b0 < BLOCKS ? p->blocks - b0 : BLOCKS;
#define MN_IN_CALL(r, m) input_block(p, x, q, b0, r, m)
        MN_RM_CASES(MN_IN_CALL)
#undef MN_IN_CALL
    }
}

static void gate_rows(const lstm_pack *p, const int16_t *const *h, const int16_t *const *xq, uint16_t *const *g,
                      int16_t *const *pres, int R) {
    for (int b0 = 0; b0 < p->blocks; b0 += BLOCKS) {
        const int M = p->blocks - b0 < BLOCKS ? p->blocks - b0 : BLOCKS;
#define MN_GATE_CALL(r, m) gate_block(p, h, xq, g, pres, b0, r, m)
        MN_RM_CASES(MN_GATE_CALL)
#undef MN_GATE_CALL
    }
}


/* One batch row's gate values (gi, row order g * units + u) with a negative pre's fixed (2^15 - entry for the
 * sigmoid gates, -entry for the cell gate: int16 wrap-around), copied into the gate-major rows dst + g * gms */
static inline void fix_copy(const int16_t *gi, const int16_t *pre, int16_t *dst, int gms, int units) {
    for (int g = 0; g < GATES; g++) {
        const int16_t kf = g == CELL_GATE ? 0 : (int16_t)-32768;
        const int16_t *s = gi + g * units, *ps = pre + g * units;
        int16_t *d = dst + (size_t)g * gms;
        if (units >= 16) {
            const __m256i k = _mm256_set1_epi16(kf);
            for (int u = 0;; u += 16) { /* the last 16 overlap the previous ones: the same values again */
                if (u > units - 16) u = units - 16;
                const __m256i t = _mm256_loadu_si256((const __m256i *)(s + u));
                const __m256i neg = _mm256_srai_epi16(_mm256_loadu_si256((const __m256i *)(ps + u)), 15);
                _mm256_storeu_si256((__m256i *)(d + u), _mm256_blendv_epi8(t, _mm256_sub_epi16(k, t), neg));
                if (u == units - 16) break;
            }
        } else {
            for (int u = 0; u < units; u++)
                d[u] = ps[u] < 0 ? (int16_t)(uint16_t)((uint16_t)kf - (uint16_t)s[u]) : s[u];
        }
    }
}

/* An RQ_HALF product of int16 a >= 0 and b, with a right shift e of 14..29, in 16 int16 lanes: with x = a b,
 * requantv's floor((floor((x + 1) / 2) + 2^(e-1) - [x <= -2]) / 2^e) is floor((x + 2^e + d) / 2^(e+1)), d = 1 for
 * x >= 0, else -1; x is hi 2^16 + lo (mulhi, mullo), |x| < 2^30, so the result fits int16 and each case below is
 * that floor split at bit 16 (checked against requantv's steps for every a >= 0 and b at e = 14..18, 20, 23, 29) */
static inline __m256i half16(__m256i a, __m256i b, int e) {
    const __m256i hi = _mm256_mulhi_epi16(a, b), lo = _mm256_mullo_epi16(a, b);
    const __m256i neg = _mm256_srai_epi16(hi, 15); /* x < 0 */
    if (e == 14) { /* 2 hi + (lo >> 15) + ((lo & 0x7FFF) + 2^14 + d) >> 15 (logical shifts) */
        const __m256i t = _mm256_add_epi16(
            _mm256_add_epi16(_mm256_and_si256(lo, _mm256_set1_epi16(0x7FFF)), _mm256_set1_epi16(0x4001)),
            _mm256_add_epi16(neg, neg));
        return _mm256_add_epi16(_mm256_add_epi16(_mm256_add_epi16(hi, hi), _mm256_srli_epi16(lo, 15)),
                                _mm256_srli_epi16(t, 15));
    }
    if (e == 15) { /* hi + [lo >= 2^15 - d] (unsigned lo) */
        const __m256i thr = _mm256_andnot_si256(neg, _mm256_set1_epi16(-2));
        return _mm256_sub_epi16(hi, _mm256_cmpgt_epi16(_mm256_xor_si256(lo, _mm256_set1_epi16(-32768)), thr));
    }
    /* (hi + 2^(e-16) + c) >> (e - 15), c = [lo == 0xFFFF] for x >= 0, -[lo == 0] for x < 0 */
    const __m256i cpos = _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_cmpeq_epi16(lo, _mm256_set1_epi16(-1)));
    const __m256i c = _mm256_blendv_epi8(cpos, _mm256_cmpeq_epi16(lo, _mm256_setzero_si256()), neg);
    return _mm256_sra_epi16(_mm256_add_epi16(_mm256_add_epi16(hi, _mm256_set1_epi16((int16_t)(1 << (e - 16)))), c),
                            _mm_cvtsi32_si128(e - 15));
}

/* The cell and hidden updates of every batch row at once (n = batch * units values, gate-major gate values): the
 * cell c, the hidden rows hw and their int8 copy h8 (8 values a vector; the padding past n computes values nobody
 * reads, or multiplies them by zero weights) */
static void update_all(const lstm_pack *p, int n, __m256i clip_lo, __m256i clip_hi, int32_t hidden_zp) {
    const int16_t *gf = p->gm + FORGET * p->gms, *gi = p->gm + INPUT_GATE * p->gms;
    const int16_t *gc = p->gm + CELL_GATE * p->gms, *go = p->gm + OUTPUT_GATE * p->gms;
    int16_t *c = p->cell, *tc = p->tc, *hw = p->hw;
    int8_t *h8 = p->h8;
    const int16_t *lut = p->lut_cell + 32768;
    if (p->half16) { /* 16 a vector; the int16 sum saturated is sat16(kept + added) */
        const int ef = p->el[0][2][0], ei = p->el[1][2][0];
        const __m256i lo = _mm256_set1_epi16((int16_t)_mm256_extract_epi32(clip_lo, 0));
        const __m256i hi = _mm256_set1_epi16((int16_t)_mm256_extract_epi32(clip_hi, 0));
        for (int u = 0; u < n; u += 16) {
#define MN_LD(q) _mm256_loadu_si256((const __m256i *)(q))
            const __m256i kept = half16(MN_LD(gf + u), MN_LD(c + u), ef), added = half16(MN_LD(gi + u), MN_LD(gc + u), ei);
#undef MN_LD
            _mm256_storeu_si256((__m256i *)(c + u), _mm256_min_epi16(_mm256_max_epi16(_mm256_adds_epi16(kept, added), lo), hi));
        }
    } else
    for (int u = 0; u < n; u += 8) {
        const __m256i kept = requantv(mul16(gf + u, c + u), p->el[0], p->kind[8], 0, -32768, 32767);
        const __m256i added = requantv(mul16(gi + u, gc + u), p->el[1], p->kind[9], 0, -32768, 32767);
        const __m256i cell = _mm256_min_epi32(_mm256_max_epi32(sat16v(_mm256_add_epi32(kept, added)), clip_lo), clip_hi);
        store16(c + u, cell);
    }
    for (int u = 0; u < n; u++) tc[u] = lut[c[u]];
    for (int u = 0; u < n; u += 8) {
        const __m256i h = requantv(mul16(go + u, tc + u), p->el[2], p->kind[10], hidden_zp, -128, 127);
        const __m128i h16 = _mm_packs_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
        _mm_storeu_si128((__m128i *)(hw + u), h16);
        _mm_storel_epi64((__m128i *)(h8 + u), _mm_packs_epi16(h16, h16));
    }
}

void mn_unidirectional_sequence_lstm_s8(const mn_word *args) {
    lstm_pack *p = lstm_prepare(args);
    if (!p) {
        mn_unidirectional_sequence_lstm_s8_portable(args);
        return;
    }
    int8_t *out = MN_P(int8_t, OUT);
    const int8_t *in = MN_P(const int8_t, IN);
    int8_t *hidden_all = MN_P(int8_t, HIDDEN);
    int16_t *cell_all = MN_P(int16_t, CELL);
    const int batch = MN_I(BATCH), steps = MN_I(STEPS), n_input = MN_I(N_INPUT), units = MN_I(UNITS);
    const int time_major = MN_I(TIME_MAJOR), kx = p->kx, rp = 8 * p->blocks, nb = batch * units;
    const int rows = batch * steps, gs = rp + 16, cell0 = CELL_GATE * units, cell1 = cell0 + units;
    const int32_t clip = MN_I(USE_CLIP) ? MN_I(CLIP) : 32767, hidden_zp = MN_I(HIDDEN_ZP);
    /* without a clip only sat16 (the portable kernel keeps -32768) */
    const __m256i clip_lo = _mm256_set1_epi32(MN_I(USE_CLIP) ? -clip : -32768), clip_hi = _mm256_set1_epi32(clip);

    /* every input row's products first (they do not depend on the state): each weight load serves ROWS rows */
    for (int r = 0; r < rows; r++) mnh_widen(p->xw + (size_t)r * 2 * kx, in + (size_t)r * n_input, n_input);
    for (int r = 0; r < rows; r += ROWS) {
        const int R = rows - r < ROWS ? rows - r : ROWS;
        const int16_t *x[ROWS];
        int16_t *q[ROWS];
        for (int i = 0; i < ROWS; i++) {
            const int k = i < R ? r + i : r;
            x[i] = p->xw + (size_t)k * 2 * kx, q[i] = p->xq + (size_t)k * rp;
        }
        input_rows(p, x, q, R);
    }
    /* the state into the working copies: row b's hidden values at hw + b * units (an odd count's last pair reads
     * the next row's first value, or the padding, against a zero weight) */
    for (int i = 0; i < nb; i++) p->hw[i] = hidden_all[i], p->cell[i] = cell_all[i];
    for (int t = 0; t < steps; t++) {
        for (int b = 0; b < batch; b += ROWS) {
            const int R = batch - b < ROWS ? batch - b : ROWS;
            const int16_t *h[ROWS], *xq[ROWS];
            int16_t *g[ROWS];
            uint16_t *ix[ROWS];
            int16_t *pr[ROWS];
            for (int i = 0; i < ROWS; i++) {
                const int bi = i < R ? b + i : b, row = time_major ? t * batch + bi : bi * steps + t;
                h[i] = p->hw + (size_t)bi * units, xq[i] = p->xq + (size_t)row * rp, g[i] = p->gates + (size_t)i * gs;
                ix[i] = p->idx + (size_t)i * gs, pr[i] = p->pre + (size_t)i * gs;
            }
            gate_rows(p, h, xq, ix, pr, R);
            for (int i = 0; i < R; i++) { /* the activations: scalar loads of the tables beat AVX2 gathers here */
                int16_t *gi = g[i];
                const uint16_t *idx = ix[i];
                const int16_t *sig = p->lut_gate, *cg = p->lut_gate + HALF;
                for (int r = 0; r < cell0; r++) gi[r] = sig[idx[r]];
                for (int r = cell0; r < cell1; r++) gi[r] = cg[idx[r]];
                for (int r = cell1; r < GATES * units; r++) gi[r] = sig[idx[r]];
                fix_copy(gi, pr[i], p->gm + (size_t)(b + i) * units, p->gms, units);
            }
        }
        update_all(p, nb, clip_lo, clip_hi, hidden_zp);
        if (time_major) memcpy(out + (size_t)t * nb, p->h8, (size_t)nb);
        else
            for (int b = 0; b < batch; b++)
                memcpy(out + ((size_t)b * steps + t) * units, p->h8 + (size_t)b * units, (size_t)units);
    }
    for (int i = 0; i < nb; i++) hidden_all[i] = (int8_t)p->hw[i], cell_all[i] = p->cell[i]; /* the state back */
}
#else
void mn_unidirectional_sequence_lstm_s8(const mn_word *args) { mn_unidirectional_sequence_lstm_s8_portable(args); }
#endif
