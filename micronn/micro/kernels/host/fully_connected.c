/* FULLY_CONNECTED, int8: the host port (x86-64 with AVX2) of kernels/fully_connected.c, same symbol, same argument
 * words.
 *
 * The paired weight rows of the arguments (lower.paired_rows, with their corrections) are decoded once per call
 * site back to int8 rows and repacked as pairs, 8 units per vector (mn_host.h's order, kept int8 and widened to
 * int16 as loaded); per batch row the input is widened once and each pair of inputs, broadcast, feeds 32 units'
 * sums with four madds. The sums start from
 * `bias_full` (the input zero point folded in), as the portable kernel's do. With AVX-512 VNNI, a call site whose
 * rows have 16 inputs or more packs its weights in groups of 4 instead (`quad`) and every row goes as uint8
 * u = x + 128 against them (vpdpbusd: 4 products a lane, 32 units' sums per four instructions), the sums starting
 * from bias_full - 128 * sum(w) of their unit (wrapping: the int32 sums are the portable kernel's bit for bit, as in
 * conv_2d.c's direct path).
 */
#define mn_fully_connected_s8 mn_fully_connected_s8_portable
#include "fully_connected.portable.inc"
#undef mn_fully_connected_s8
#include "mn_host.h"

#if defined(MNH_AVX2)
#if defined(__AVX512VNNI__) && defined(__AVX512VL__) && !defined(MNH_NO_VNNI)
#define FC_VNNI 1
#endif
typedef struct {
    int quad;       /* the VNNI groups of 4 (FC_VNNI, rows of 16 inputs or more); else int16 pairs */
    int kp, blocks, vec; /* kp: steps of 4 bytes a row, pairs of int16 or (quad) groups of 4 uint8 */
    int8_t *w;      /* pairs: the units' rows in mnh_pack_rows8's order but kept int8 (widened as loaded: half the
                     * bytes to stream, so a model's weights stay in L2 longer); quad: per block of 8 units and
                     * step, the 8 units' 4 weights (32 bytes) */
    int32_t *bias;  /* the sums' start: bias_full (quad: less 128 * sum(w) of the unit), padded to whole blocks */
    mnh_rq rq;
    mnh_rq8 *rq8;   /* per block of 8 units: its requantization parameters as vectors (out_zp and bounds are
                     * constants of the call site too), loaded from here instead of set up per call */
    int16_t *x;     /* pairs: one widened input row */
    uint8_t *xs;    /* every batch row prepared, 4 kp bytes a row: widened, where there are several, or (quad, always)
                     * as u = x + 128 */
} fc_pack;

/* The int8 rows (units x depth) of the paired layout: mn_pair_block's portable reading, then the corrections. */
static void unpair(int8_t *rows, const mn_word *args) {
    const uint32_t *w = MN_P(const uint32_t, WEIGHTS);
    const int depth = MN_I(DEPTH), units = MN_I(UNITS), groups = (depth + 3) / 4, padded = units + (units & 1);
    for (int r0 = 0; r0 < padded; r0 += 2) {
        const int tile = r0 & ~3, width = padded - tile >= 4 ? 4 : 2;
        const int16_t *h = (const int16_t *)(w + (size_t)tile * groups) + 4 * ((r0 - tile) / 2);
        for (int g = 0; g < groups; g++, h += 2 * width)
            for (int j = 0; j < 4; j++) {
                const int i = 4 * g + j;
                const int32_t hw = h[(j & 1) * 2 + (j >> 1)], low = (int8_t)(hw & 0xFF);
                if (i >= depth) continue;
                rows[(size_t)r0 * depth + i] = (int8_t)low;
                if (r0 + 1 < units) rows[(size_t)(r0 + 1) * depth + i] = (int8_t)((hw - low) >> 8);
            }
    }
    for (const int32_t *fix = MN_P(const int32_t, FIX); fix[0] < units; fix += 2)
        rows[(size_t)fix[0] * depth + fix[1]] -= 1; /* a -128 stored as -127 */
}

/* mnh_pack_rows8's layout as int8: per block of 8 rows and pair of inputs j, (w[r][2j], w[r][2j + 1]) for its 8
 * rows r (rows and inputs past the end 0). */
static void pack_rows8_s8(int8_t *dst, const int8_t *w, int rows, int k) {
    const int kp = mnh_pairs(k);
    for (int row = 0; row < rows; row++)
        for (int i = 0; i < k; i++)
            dst[((size_t)(row / 8) * kp + i / 2) * 16 + 2 * (row % 8) + (i & 1)] = w[(size_t)row * k + i];
}

/* 16 packed int8 weights widened to the 16 int16 of one madd */
static inline __m256i fc_w16(const int8_t *w) { return _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)w)); }

static const fc_pack *fc_prepare(const mn_word *args) {
    mnh_slot *slot;
    fc_pack *p = (fc_pack *)mnh_lookup(args, &slot);
    if (p) return p;
    const int depth = MN_I(DEPTH), units = MN_I(UNITS), blocks = mnh_blocks8(units), batches = MN_I(BATCHES);
#if defined(FC_VNNI)
    const int quad = depth >= 16; /* (shorter rows: the pairs, which pad less) */
#else
    const int quad = 0;
#endif
    const int kp = quad ? (depth + 3) / 4 : mnh_pairs(depth), rows_kept = batches > 1 || quad;
    p = (fc_pack *)mnh_alloc(sizeof(fc_pack));
    int8_t *rows = (int8_t *)mnh_alloc((size_t)units * depth);
    if (!p || !rows) return NULL;
    p->quad = quad, p->kp = kp, p->blocks = blocks;
    p->w = (int8_t *)mnh_alloc((size_t)blocks * kp * (quad ? 32 : 16));
    p->bias = (int32_t *)mnh_alloc((size_t)blocks * 8 * sizeof(int32_t));
    p->x = quad ? NULL : (int16_t *)mnh_alloc((size_t)2 * kp * sizeof(int16_t));
    p->rq8 = (mnh_rq8 *)aligned_alloc(32, (size_t)blocks * sizeof(mnh_rq8));
    p->xs = rows_kept ? (uint8_t *)mnh_alloc((size_t)4 * kp * batches + 32) : NULL;
    if (!p->w || !p->bias || (!quad && !p->x) || !p->rq8 || (rows_kept && !p->xs) ||
        !mnh_rq_init(&p->rq, MN_P(const int32_t, MULT), MN_P(const int32_t, SHIFT), units, 8))
        return NULL;
    p->vec = p->rq.vec;
    for (int b = 0; b < blocks; b++)
        p->rq8[b] = mnh_rq8_load(&p->rq, 8 * b, MN_I(OUT_ZP), MN_I(ACT_MIN), MN_I(ACT_MAX));
    unpair(rows, args);
    memcpy(p->bias, MN_P(const int32_t, BIAS_FULL), (size_t)units * sizeof(int32_t));
    if (!quad) pack_rows8_s8(p->w, rows, units, depth);
    for (int r = 0; r < units && quad; r++) {
        uint32_t sum = 0; /* of the unit's weights, wrapping */
        for (int i = 0; i < depth; i++) {
            const int8_t v = rows[(size_t)r * depth + i];
            p->w[((size_t)(r / 8) * kp + i / 4) * 32 + 4 * (r % 8) + i % 4] = v;
            sum += (uint32_t)(int32_t)v;
        }
        p->bias[r] = (int32_t)((uint32_t)p->bias[r] - 128u * sum);
    }
    free(rows);
    mnh_keep(slot, args, p);
    return p;
}

/* out[0..n) (n <= 8) = block bl's sums acc requantized. */
__attribute__((always_inline)) static inline void fc_store(int8_t *out, int n, __m256i acc, const fc_pack *p, int bl,
                                                           const mn_word *args) {
    if (!p->vec) {
        mnh_store8(out, n, acc, &p->rq, 8 * bl, MN_I(OUT_ZP), MN_I(ACT_MIN), MN_I(ACT_MAX));
        return;
    }
    const __m128i b = mnh_bytes8(mnh_requant8r(acc, &p->rq8[bl]));
    if (n >= 8) {
        _mm_storel_epi64((__m128i *)out, b);
        return;
    }
    uint64_t v = (uint64_t)_mm_cvtsi128_si64(b); /* the n low bytes, 4, 2, 1 at a time */
    if (n & 4) { const uint32_t u = (uint32_t)v; memcpy(out, &u, 4); out += 4, v >>= 32; }
    if (n & 2) { const uint16_t u = (uint16_t)v; memcpy(out, &u, 2); out += 2, v >>= 16; }
    if (n & 1) *out = (int8_t)v;
}

/* Block bl's sums over the widened row x (kp pairs), requantized into o. */
__attribute__((always_inline)) static inline void fc_block(int8_t *o, const int32_t *x, const fc_pack *p, int bl,
                                                           int units, const mn_word *args) {
    const int kp = p->kp;
    const int8_t *w0 = p->w + (size_t)bl * kp * 16;
    __m256i a0 = _mm256_loadu_si256((const __m256i *)(p->bias + bl * 8)), a1 = _mm256_setzero_si256();
    int j = 0; /* two chains of sums (wrapping int32: any order gives the same sums), half the latency */
    for (; j + 2 <= kp; j += 2) {
        a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(_mm256_set1_epi32(x[j]), fc_w16(w0 + 16 * j)));
        a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(_mm256_set1_epi32(x[j + 1]), fc_w16(w0 + 16 * j + 16)));
    }
    if (j < kp) a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(_mm256_set1_epi32(x[j]), fc_w16(w0 + 16 * j)));
    fc_store(o + bl * 8, units - bl * 8, _mm256_add_epi32(a0, a1), p, bl, args);
}

/* One row's units, four blocks (32 units) at a time while there are four. */
__attribute__((noinline)) static void fc_row_wide(int8_t *o, const int32_t *x, const fc_pack *p, int units,
                                                  const mn_word *args) {
    const int kp = p->kp, blocks = p->blocks;
    const size_t bstep = (size_t)kp * 16;
    int bl = 0;
    for (; bl + 4 <= blocks; bl += 4) {
        const int8_t *w0 = p->w + bl * bstep, *w1 = w0 + bstep, *w2 = w1 + bstep, *w3 = w2 + bstep;
        const int32_t *bias = p->bias + bl * 8;
        __m256i a0 = _mm256_loadu_si256((const __m256i *)bias), a1 = _mm256_loadu_si256((const __m256i *)(bias + 8));
        __m256i a2 = _mm256_loadu_si256((const __m256i *)(bias + 16));
        __m256i a3 = _mm256_loadu_si256((const __m256i *)(bias + 24));
        for (int j = 0; j < kp; j++) {
            const __m256i v = _mm256_set1_epi32(x[j]);
            a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(v, fc_w16(w0 + 16 * j)));
            a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(v, fc_w16(w1 + 16 * j)));
            a2 = _mm256_add_epi32(a2, _mm256_madd_epi16(v, fc_w16(w2 + 16 * j)));
            a3 = _mm256_add_epi32(a3, _mm256_madd_epi16(v, fc_w16(w3 + 16 * j)));
        }
        const int c = bl * 8;
        fc_store(o + c, units - c, a0, p, bl, args);
        fc_store(o + c + 8, units - c - 8, a1, p, bl + 1, args);
        fc_store(o + c + 16, units - c - 16, a2, p, bl + 2, args);
        fc_store(o + c + 24, units - c - 24, a3, p, bl + 3, args);
    }
    for (; bl < blocks; bl++) fc_block(o, x, p, bl, units, args);
}

/* R batch rows times B blocks of 8 units from block bl, requantized into o (rows `units` apart): each weight vector
 * loaded once for the R rows, each row's next 4 bytes broadcast once for the B blocks. QUAD (a constant at each
 * call, the pack's): the rows as u = x + 128 and the VNNI groups of 4 (vpdpbusd); else widened and the pairs
 * (madd); 4 kp bytes a row either way. */
__attribute__((always_inline)) static inline void fc_tile(int8_t *o, const uint8_t *x, const fc_pack *p, int bl,
                                                          const int R, const int B, int units, const mn_word *args,
                                                          const int quad) {
    const int steps = p->kp;
    const size_t bstep = (size_t)steps * (quad ? 32 : 16), row = (size_t)4 * steps; /* bytes */
    const int8_t *w = p->w + bl * bstep;
    const int32_t *bias = p->bias;
    __m256i acc[8][4];
    for (int k = 0; k < B; k++) {
        const __m256i b = _mm256_loadu_si256((const __m256i *)(bias + (bl + k) * 8));
        for (int r = 0; r < R; r++) acc[r][k] = b;
    }
    for (int j = 0; j < steps; j++) {
        __m256i wv[4];
        for (int k = 0; k < B; k++)
            wv[k] = quad ? _mm256_loadu_si256((const __m256i *)(w + k * bstep + 32 * j)) : fc_w16(w + k * bstep + 16 * j);
        for (int r = 0; r < R; r++) {
            int32_t four;
            memcpy(&four, x + r * row + 4 * (size_t)j, 4);
            const __m256i v = _mm256_set1_epi32(four);
            for (int k = 0; k < B; k++)
#if defined(FC_VNNI)
                acc[r][k] = quad ? _mm256_dpbusd_epi32(acc[r][k], v, wv[k])
                                 : _mm256_add_epi32(acc[r][k], _mm256_madd_epi16(v, wv[k]));
#else
                acc[r][k] = _mm256_add_epi32(acc[r][k], _mm256_madd_epi16(v, wv[k]));
#endif
        }
    }
    for (int r = 0; r < R; r++)
        for (int k = 0; k < B; k++) {
            const int c = (bl + k) * 8;
            fc_store(o + (size_t)r * units + c, units - c, acc[r][k], p, bl + k, args);
        }
}

/* R rows (1, 2, 4 or 8) of B (1..4) blocks */
#define FC_TILE_R(R, Q)                                                                                                \
    switch (B) {                                                                                                       \
    case 1: fc_tile(o, x, p, bl, R, 1, units, args, Q); break;                                                         \
    case 2: fc_tile(o, x, p, bl, R, 2, units, args, Q); break;                                                         \
    case 3: fc_tile(o, x, p, bl, R, 3, units, args, Q); break;                                                         \
    default: fc_tile(o, x, p, bl, R, 4, units, args, Q); break;                                                        \
    }
#define FC_TILES(NAME, Q)                                                                                              \
    static void NAME(int8_t *o, const uint8_t *x, const fc_pack *p, int bl, int R, int B, int units,                   \
                     const mn_word *args) {                                                                            \
        switch (R) {                                                                                                   \
        case 1: FC_TILE_R(1, Q) break;                                                                                 \
        case 2: FC_TILE_R(2, Q) break;                                                                                 \
        case 4: FC_TILE_R(4, Q) break;                                                                                 \
        default: FC_TILE_R(8, Q) break;                                                                                \
        }                                                                                                              \
    }
FC_TILES(fc_tiles, 0)
#if defined(FC_VNNI)
FC_TILES(fc_tiles_q, 1)
#endif
#undef FC_TILES
#undef FC_TILE_R

typedef void fc_tiles_fn(int8_t *, const uint8_t *, const fc_pack *, int, int, int, int, const mn_word *);

/* tiles of rows x blocks (8 accumulators: 8 x 1, 4 x 2, 2 x 3 or 4) over `rows` prepared rows x, `row` bytes apart */
static void fc_tiling(int8_t *out, const uint8_t *x, size_t row, const fc_pack *p, int rows, int units,
                      fc_tiles_fn *tiles, const mn_word *args) {
    for (int bl = 0; bl < p->blocks; bl += 4) {
        const int B = mn_min(p->blocks - bl, 4), R = B == 1 ? 8 : B == 2 ? 4 : 2;
        int r = 0;
        for (; r + R <= rows; r += R) tiles(out + (size_t)r * units, x + r * row, p, bl, R, B, units, args);
        for (int q = R / 2; q >= 1; q /= 2)
            if (rows - r >= q) {
                tiles(out + (size_t)r * units, x + r * row, p, bl, q, B, units, args);
                r += q;
            }
    }
}

/* several batch rows: all widened first, then fc_tiling's tiles */
static void fc_rows(int8_t *out, const int8_t *in, const fc_pack *p, int rows, int depth, int units,
                    const mn_word *args) {
    const int kp = p->kp;
    if (!(depth & 1)) { /* the rows back to back on both sides: one run */
        mnh_widen((int16_t *)p->xs, in, rows * depth);
    } else { /* odd rows as whole int16 pairs (no narrower stores under the pairs' loads), the last one padded */
        for (int r = 0; r < rows; r++) {
            const int8_t *row = in + (size_t)r * depth;
            int32_t *x = (int32_t *)(p->xs + (size_t)r * 4 * kp);
            for (int j = 0; j < depth / 2; j++)
                x[j] = (int32_t)(uint16_t)(int16_t)row[2 * j] | (int32_t)((uint32_t)(int32_t)row[2 * j + 1] << 16);
            x[depth / 2] = (int32_t)(uint16_t)(int16_t)row[depth - 1];
        }
    }
    fc_tiling(out, p->xs, (size_t)4 * kp, p, rows, units, fc_tiles, args);
}

#if defined(FC_VNNI)
/* every batch row as u = x + 128 (its last group's spare bytes 128: their weights are 0), then fc_tiling's tiles */
static void fc_rows_q(int8_t *out, const int8_t *in, const fc_pack *p, int rows, int depth, int units,
                      const mn_word *args) {
    const int kp = p->kp;
    if (depth == 4 * kp) { /* the rows back to back on both sides: one run */
        mnh_flip(p->xs, in, (size_t)rows * depth);
    } else {
        for (int r = 0; r < rows; r++) {
            uint8_t *d = p->xs + (size_t)r * 4 * kp;
            mnh_flip(d, in + (size_t)r * depth, (size_t)depth);
            for (int i = depth; i < 4 * kp; i++) d[i] = 128;
        }
    }
    fc_tiling(out, p->xs, (size_t)4 * kp, p, rows, units, fc_tiles_q, args);
}
#endif

void mn_fully_connected_s8(const mn_word *args) {
    const fc_pack *p = fc_prepare(args);
    if (!p) { mn_fully_connected_s8_portable(args); return; }
#if defined(FC_VNNI)
    if (p->quad) {
        fc_rows_q(MN_P(int8_t, OUT), MN_P(const int8_t, IN), p, MN_I(BATCHES), MN_I(DEPTH), MN_I(UNITS), args);
        return;
    }
#endif
    int8_t *out = MN_P(int8_t, OUT);
    const int8_t *in = MN_P(const int8_t, IN);
    const int batches = MN_I(BATCHES), depth = MN_I(DEPTH), units = MN_I(UNITS);
    int32_t *x = (int32_t *)p->x;
    if (batches > 1) {
        fc_rows(out, in, p, batches, depth, units, args);
        return;
    }

    for (int b = 0; b < batches; b++) {
        const int8_t *row = in + (size_t)b * depth;
        if (depth >= 16) {
            mnh_widen(p->x, row, depth);
        } else { /* a short row as whole int16 pairs (no narrower stores under the pairs' loads) */
            for (int j = 0; j < depth / 2; j++)
                x[j] = (int32_t)(uint16_t)(int16_t)row[2 * j] | (int32_t)((uint32_t)(int32_t)row[2 * j + 1] << 16);
            if (depth & 1) x[depth / 2] = (int32_t)(uint16_t)(int16_t)row[depth - 1];
        }
        int8_t *o = out + (size_t)b * units;
        if (p->blocks >= 4) {
            fc_row_wide(o, x, p, units, args);
        } else {
            for (int bl = 0; bl < p->blocks; bl++) fc_block(o, x, p, bl, units, args);
        }
    }
}
#else
void mn_fully_connected_s8(const mn_word *args) { mn_fully_connected_s8_portable(args); }
#endif
