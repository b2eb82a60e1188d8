/* UNIDIRECTIONAL_SEQUENCE_LSTM, int8: the host port (x86-64 with AVX2) of kernels/unidirectional_sequence_lstm.c,
 * same symbol, same argument words.
 *
 * The four gates' rows follow each other (row gate * units + unit), 8 per block, so a block may hold two gates: the
 * requantization reads per-row multipliers and shifts, and blocks holding cell gate rows blend their activation
 * in by a row mask. Per call site the input and recurrent rows are repacked as int16 pairs (mn_host.h's layout) holding
 * w + w_off, the weight offset folded in (|w + w_off| < 2^15: one madd stays exact); the int32 sums wrap as the
 * portable kernel's. Per step and batch row: the input and the old hidden state widened to int16 once, all
 * blocks' sums, their requantizations to int16 (mnh_requant8, exact for multipliers >= 0), the int16 sigmoid /
 * tanh 8 lanes at a time (one gather reads a table entry and its successor), then the cell and hidden updates 8
 * units at a time. The state lives in padded per-row copies during the call and is written back at its end.
 * Multipliers < 0 or shifts beyond +-31 (never from QuantizeMultiplier) run the portable kernel.
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
    int32_t *cellmask;      /* per row: -1 on the cell gate's rows */
    int32_t rq[8][3][8];    /* per product (4 input, 4 recurrent): mult, left, right as 8 lanes */
    int32_t el[3][3][8];    /* forget * cell, input * cell gate, tanh(cell) * output: mult, left, right */
    int kind[11];           /* per product (8 gates', then the 3 above): RQ_GENERAL, RQ_FOLDED or RQ_HALF */
    int16_t *gates;         /* the 4 * units gate values of one step (row r = gate * units + unit) */
    int16_t *xw, *hw;       /* the widened input row (kx pairs); hidden rows widened (batch * 2 * kh) */
    int16_t *cell;          /* batch * up */
} lstm_pack;

/* How one product is requantized: mnh_requant8 (general); for a multiplier > 2^30 and a right shift of 1..31
 * both roundings folded into one 64-bit sum (mn_kernels.h's MN_RQ_FOLDED, without a zero point); for a multiplier
 * of exactly 2^30 without a left shift (the cell update's products of two int16), the doubling high multiply is
 * floor((x + 1) / 2). */
enum { RQ_GENERAL, RQ_FOLDED, RQ_HALF };

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
    p->gates = (int16_t *)mnh_alloc(((size_t)rp + 16) * sizeof(int16_t));
    p->xw = (int16_t *)mnh_alloc(((size_t)2 * kx + 16) * sizeof(int16_t));
    p->hw = (int16_t *)mnh_alloc(((size_t)batch * 2 * kh + 16) * sizeof(int16_t));
    p->cell = (int16_t *)mnh_alloc((size_t)batch * up * sizeof(int16_t));
    p->cellmask = (int32_t *)mnh_alloc((size_t)rp * sizeof(int32_t));
    if (!p->w_in || !p->w_rec || !p->b_in || !p->b_rec || !p->gates || !p->xw || !p->hw || !p->cell || !p->cellmask)
        return NULL;
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
            p->b_in[r] = bias_in[r], p->b_rec[r] = bias_rec[r], p->cellmask[r] = g == CELL_GATE ? -1 : 0;
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

/* The table interpolated at a = |v| with `bits` fraction bits; `saturated` where a >> bits >= 255. */
static inline __m256i interp8(const uint16_t *table, __m256i a, int bits, int32_t saturated) {
    const __m256i whole = _mm256_srli_epi32(a, bits);
    const __m256i past = _mm256_cmpgt_epi32(whole, _mm256_set1_epi32(254));
    const __m256i idx = _mm256_andnot_si256(past, whole);
    const __m256i pair = _mm256_i32gather_epi32((const int *)table, idx, 2); /* table[i] | table[i + 1] << 16 */
    const __m256i lo = _mm256_and_si256(pair, _mm256_set1_epi32(0xFFFF)), hi = _mm256_srli_epi32(pair, 16);
    const __m256i frac = _mm256_and_si256(a, _mm256_set1_epi32((1 << bits) - 1));
    const __m256i r = _mm256_add_epi32(_mm256_slli_epi32(lo, bits), _mm256_mullo_epi32(frac, _mm256_sub_epi32(hi, lo)));
    return _mm256_blendv_epi8(r, _mm256_set1_epi32(saturated), past);
}

/* TFLM's int16 sigmoid of v (8 lanes), Q0.15 in int32 lanes */
static inline __m256i sigmoid8(const uint16_t *table, __m256i v) {
    const __m256i r = interp8(table, _mm256_abs_epi32(v), 9, 0x7FFF << 10);
    const __m256i neg = _mm256_cmpgt_epi32(_mm256_setzero_si256(), v);
    const __m256i pos_r = _mm256_add_epi32(r, _mm256_set1_epi32(1 << 9));
    const __m256i neg_r = _mm256_sub_epi32(_mm256_set1_epi32((1 << 25) + (1 << 9) - 1), r);
    const __m256i y = _mm256_srli_epi32(_mm256_blendv_epi8(pos_r, neg_r, neg), 10);
    return _mm256_srai_epi32(_mm256_slli_epi32(y, 16), 16); /* as int16 */
}

/* TFLM's int16 tanh of v (8 lanes) */
static inline __m256i tanh8(const uint16_t *table, __m256i v) {
    const __m256i r = interp8(table, _mm256_abs_epi32(v), 8, 0xFFFF << 8);
    const __m256i neg = _mm256_cmpgt_epi32(_mm256_setzero_si256(), v);
    const __m256i pos_r = _mm256_add_epi32(r, _mm256_set1_epi32(-(1 << 23) + (1 << 7)));
    const __m256i neg_r = _mm256_sub_epi32(_mm256_set1_epi32((1 << 23) + (1 << 7) - 1), r);
    const __m256i y = _mm256_srai_epi32(_mm256_blendv_epi8(pos_r, neg_r, neg), 8);
    return _mm256_srai_epi32(_mm256_slli_epi32(y, 16), 16);
}

/* m (1..4) blocks' sums: acc[k] = bias + sum over kp pairs of x . w (blocks kp * 16 int16 apart) */
__attribute__((always_inline)) static inline void dotsv(__m256i *acc, const int16_t *x, const int16_t *w, int kp,
                                                       const int32_t *bias, const int m) {
    for (int k = 0; k < m; k++) acc[k] = _mm256_loadu_si256((const __m256i *)(bias + 8 * k));
    const int32_t *xp = (const int32_t *)x;
    for (int j = 0; j < kp; j++) {
        const __m256i xv = _mm256_set1_epi32(xp[j]);
        for (int k = 0; k < m; k++)
            acc[k] = _mm256_add_epi32(acc[k], _mm256_madd_epi16(xv, _mm256_loadu_si256(
                                                  (const __m256i *)(w + ((size_t)k * kp + j) * 16))));
    }
}

static inline void sumsv(__m256i *acc, const int16_t *x, const int16_t *w, int kp, const int32_t *bias, int m) {
    switch (m) {
    case 1: dotsv(acc, x, w, kp, bias, 1); break;
    case 2: dotsv(acc, x, w, kp, bias, 2); break;
    case 3: dotsv(acc, x, w, kp, bias, 3); break;
    default: dotsv(acc, x, w, kp, bias, 4); break;
    }
}

/* block b's sums of one side requantized to int16 (then saturated) */
static inline __m256i side_requant(const lstm_pack *p, int side, int b, __m256i acc) {
    const int r = 8 * b;
    __m256i y;
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
        y = _mm256_srav_epi32(hi32, _mm256_loadu_si256((const __m256i *)(p->left[side] + r)));
        return sat16v(y);
    }
    return mnh_requant8(acc, p->mult[side] + r, p->left[side] + r, p->right[side] + r, _mm256_setzero_si256(),
                        _mm256_set1_epi32(-32768), _mm256_set1_epi32(32767));
}

/* the gate values of every row for input xw and hidden hw */
static void gate_values(lstm_pack *p, const int16_t *xw, const int16_t *hw, const uint16_t *table, int cell_tanh,
                        int units) {
    const int cell0 = CELL_GATE * units, cell1 = cell0 + units; /* the cell gate's rows */
    for (int b0 = 0; b0 < p->blocks; b0 += 4) {
        const int m = p->blocks - b0 < 4 ? p->blocks - b0 : 4;
        __m256i ax[4], ah[4];
        sumsv(ax, xw, p->w_in + (size_t)b0 * p->kx * 16, p->kx, p->b_in + 8 * b0, m);
        sumsv(ah, hw, p->w_rec + (size_t)b0 * p->kh * 16, p->kh, p->b_rec + 8 * b0, m);
        for (int k = 0; k < m; k++) {
            const int b = b0 + k, r0 = 8 * b, r1 = r0 + 8;
            const __m256i pre = sat16v(_mm256_add_epi32(side_requant(p, 0, b, ax[k]), side_requant(p, 1, b, ah[k])));
            const __m256i v = _mm256_add_epi32(pre, _mm256_add_epi32(pre, pre));
            const int any_cell = r1 > cell0 && r0 < cell1, all_cell = r0 >= cell0 && r1 <= cell1;
            __m256i y = all_cell ? pre : sigmoid8(table, v);
            if (any_cell) {
                const __m256i c = cell_tanh ? tanh8(table, v) : pre;
                y = all_cell ? c : _mm256_blendv_epi8(y, c, _mm256_loadu_si256((const __m256i *)(p->cellmask + r0)));
            }
            const __m128i y16 = _mm_packs_epi32(_mm256_castsi256_si128(y), _mm256_extracti128_si256(y, 1));
            _mm_storeu_si128((__m128i *)(p->gates + r0), y16);
        }
    }
}

static inline __m256i load16(const int16_t *p) { return _mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i *)p)); }

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
    const uint16_t *table = MN_P(const uint16_t, TABLE);
    const int batch = MN_I(BATCH), steps = MN_I(STEPS), n_input = MN_I(N_INPUT), units = MN_I(UNITS);
    const int time_major = MN_I(TIME_MAJOR), cell_tanh = MN_I(CELL_TANH), up = p->up, kh = p->kh;
    const int32_t clip = MN_I(USE_CLIP) ? MN_I(CLIP) : 32767, hidden_zp = MN_I(HIDDEN_ZP);
    const __m256i tanh_mul = _mm256_set1_epi32(MN_I(TANH_MUL)), tanh_rnd = _mm256_set1_epi32(MN_I(TANH_RND));
    const __m128i tanh_shift = _mm_cvtsi32_si128(MN_I(TANH_SHIFT));
    const __m256i clip_lo = _mm256_set1_epi32(-clip), clip_hi = _mm256_set1_epi32(clip);
    const int16_t *gf = p->gates + FORGET * units, *gi = p->gates + INPUT_GATE * units;
    const int16_t *gc = p->gates + CELL_GATE * units, *go = p->gates + OUTPUT_GATE * units;

    for (int b = 0; b < batch; b++) { /* the state into the padded copies */
        int16_t *hw = p->hw + (size_t)b * 2 * kh, *c = p->cell + (size_t)b * up;
        for (int u = 0; u < 2 * kh; u++) hw[u] = u < units ? hidden_all[(size_t)b * units + u] : 0;
        for (int u = 0; u < up; u++) c[u] = u < units ? cell_all[(size_t)b * units + u] : 0;
    }
    for (int t = 0; t < steps; t++) {
        for (int b = 0; b < batch; b++) {
            const int row = time_major ? t * batch + b : b * steps + t;
            int16_t *hw = p->hw + (size_t)b * 2 * kh, *c = p->cell + (size_t)b * up;
            int8_t *o = out + (size_t)row * units;
            mnh_widen(p->xw, in + (size_t)row * n_input, n_input);
            gate_values(p, p->xw, hw, table, cell_tanh, units);
            for (int u = 0; u < up; u += 8) {
                const __m256i kept = requantv(_mm256_mullo_epi32(load16(gf + u), load16(c + u)), p->el[0], p->kind[8], 0, -32768,
                                             32767);
                const __m256i added = requantv(_mm256_mullo_epi32(load16(gi + u), load16(gc + u)), p->el[1], p->kind[9], 0,
                                              -32768, 32767);
                const __m256i cell = _mm256_min_epi32(_mm256_max_epi32(sat16v(_mm256_add_epi32(kept, added)), clip_lo),
                                                      clip_hi);
                const __m128i c16 = _mm_packs_epi32(_mm256_castsi256_si128(cell), _mm256_extracti128_si256(cell, 1));
                _mm_storeu_si128((__m128i *)(c + u), c16);
                const __m256i v = _mm256_sra_epi32(_mm256_add_epi32(_mm256_mullo_epi32(cell, tanh_mul), tanh_rnd),
                                                   tanh_shift);
                const __m256i h = requantv(_mm256_mullo_epi32(tanh8(table, v), load16(go + u)), p->el[2], p->kind[10], hidden_zp,
                                          -128, 127);
                const __m128i h16 = _mm_packs_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
                const int n = units - u < 8 ? units - u : 8;
                if (n == 8) {
                    _mm_storeu_si128((__m128i *)(hw + u), h16);
                    _mm_storel_epi64((__m128i *)(o + u), _mm_packs_epi16(h16, h16));
                } else {
                    int16_t tmp[8];
                    _mm_storeu_si128((__m128i *)tmp, h16);
                    for (int j = 0; j < n; j++) hw[u + j] = tmp[j], o[u + j] = (int8_t)tmp[j];
                }
            }
        }
    }
    for (int b = 0; b < batch; b++) { /* the state back */
        const int16_t *hw = p->hw + (size_t)b * 2 * kh, *c = p->cell + (size_t)b * up;
        for (int u = 0; u < units; u++)
            hidden_all[(size_t)b * units + u] = (int8_t)hw[u], cell_all[(size_t)b * units + u] = c[u];
    }
}
#else
void mn_unidirectional_sequence_lstm_s8(const mn_word *args) { mn_unidirectional_sequence_lstm_s8_portable(args); }
#endif
