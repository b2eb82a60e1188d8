/* FULLY_CONNECTED, float32: the host port (x86-64 with AVX2) of kernels/fully_connected_f32.c, same symbol, same
 * argument words.
 *
 * Vectorized across units, never across a sum: each lane is one unit's total over the depth in order, each
 * product rounded before its addition (no FMA), then bias + total and the clamp, as the portable kernel does.
 * The weights are repacked once per call site as [unit block][depth][8 units] (mn_host.h's cache). Several batch
 * rows (a lanes twin's) run in tiles of rows x unit blocks, the weights loaded once per depth step for the tile's
 * rows; a single row takes 5 to 12 blocks side by side (its sums are chains of dependent adds); one unit on 8 or more
 * rows puts 8 rows in the lanes of one sum (ffc_one_unit). With AVX-512, 4 or more rows of 16 or more units take
 * tiles of 4 rows x up to 5 blocks of 16 units (ffc_wide_*, from a second pack: [units / 16][depth][16]).
 */
#define mn_fully_connected_f32 mn_fully_connected_f32_portable
#include "fully_connected_f32.portable.inc"
#undef mn_fully_connected_f32
#include "mn_host.h"

#if defined(MNH_AVX2)
typedef struct {
    float *w;    /* [units / 8 blocks][depth][8] */
    float *bias; /* padded (0 without a bias) */
    float *w16;  /* with AVX-512: [units / 16 blocks][depth][16], for tiles of several rows (ffc_wide) */
} ffc_pack;

static const ffc_pack *ffc_prepare(const mn_word *args) {
    mnh_slot *slot;
    ffc_pack *p = (ffc_pack *)mnh_lookup(args, &slot);
    if (p) return p;
    const int depth = MN_I(DEPTH), units = MN_I(UNITS), blocks = mnh_blocks8(units);
    const float *weights = MN_P(const float, WEIGHTS), *bias = MN_P(const float, BIAS);
    p = (ffc_pack *)mnh_alloc(sizeof(ffc_pack));
    if (!p) return NULL;
    p->w = (float *)mnh_alloc((size_t)blocks * depth * 8 * sizeof(float) + 1);
    p->bias = (float *)mnh_alloc((size_t)blocks * 8 * sizeof(float));
    if (!p->w || !p->bias) return NULL;
    for (int u = 0; u < units; u++) {
        for (int d = 0; d < depth; d++) p->w[((size_t)(u / 8) * depth + d) * 8 + u % 8] = weights[(size_t)u * depth + d];
        if (bias) p->bias[u] = bias[u];
    }
#if defined(__AVX512F__)
    p->w16 = (float *)mnh_alloc((size_t)(blocks + 1) / 2 * depth * 16 * sizeof(float));
    if (!p->w16) return NULL;
    for (int u = 0; u < units; u++)
        for (int d = 0; d < depth; d++)
            p->w16[((size_t)(u / 16) * depth + d) * 16 + u % 16] = weights[(size_t)u * depth + d];
#endif
    mnh_keep(slot, args, p);
    return p;
}

static inline __m256 ffc_clamp(__m256 x, __m256 lo, __m256 hi) {
    x = _mm256_blendv_ps(x, lo, _mm256_cmp_ps(x, lo, _CMP_LT_OQ));
    return _mm256_blendv_ps(x, hi, _mm256_cmp_ps(hi, x, _CMP_LT_OQ));
}

/* R rows x B blocks of 8 units (from block bl): each lane's sum over the depth in order, then bias + sum and the
 * clamp, stored at o + r * units + 8 * (bl + j). The rows' inputs are broadcast, each block's weights loaded once
 * per depth step for the R rows. */
__attribute__((always_inline)) static inline void ffc_tile(const ffc_pack *p, const float *x, float *o, int depth,
                                                           int units, int bl, int has_bias, __m256 lo, __m256 hi,
                                                           const int R, const int B) {
    __m256 acc[R * B];
    const size_t step = (size_t)depth * 8;
    const float *w = p->w + (size_t)bl * step;
#define SUMS(ADD, MUL)                                                                                             \
    do {                                                                                                           \
        for (int i = 0; i < R * B; i++) acc[i] = _mm256_setzero_ps();                                              \
        for (int d = 0; d < depth; d++) {                                                                          \
            __m256 wv[B];                                                                                          \
            for (int j = 0; j < B; j++) wv[j] = _mm256_loadu_ps(w + j * step + (size_t)d * 8);                     \
            for (int r = 0; r < R; r++) {                                                                          \
                const __m256 v = _mm256_broadcast_ss(x + (size_t)r * depth + d);                                   \
                for (int j = 0; j < B; j++) acc[r * B + j] = ADD(acc[r * B + j], MUL(v, wv[j]));                   \
            }                                                                                                      \
        }                                                                                                          \
    } while (0)
    SUMS(_mm256_add_ps, _mm256_mul_ps);
    /* a compiler may swap the operands of the vector adds and multiplies, which decides which NaN a sum of two NaNs
     * keeps: sums with a NaN are computed again with the order fixed (the total's, then the input's) */
    if (mnh_any_nan(acc, R * B)) SUMS(mnh_add_ps, mnh_mul_ps);
#undef SUMS
    for (int j = 0; j < B; j++) {
        const int c = (bl + j) * 8;
        const __m256 bias = _mm256_loadu_ps(p->bias + c);
        for (int r = 0; r < R; r++) {
            __m256 y = acc[r * B + j];
            if (has_bias) y = mnh_add_ps(bias, y); /* a NaN bias wins */
            y = ffc_clamp(y, lo, hi);
            float *dst = o + (size_t)r * units + c;
            if (c + 8 <= units) {
                _mm256_storeu_ps(dst, y);
            } else {
                float tail[8];
                _mm256_storeu_ps(tail, y);
                for (int i = 0; c + i < units; i++) dst[i] = tail[i];
            }
        }
    }
}

/* `rows` rows (1 to 8) x B blocks from block bl */
__attribute__((always_inline)) static inline void ffc_rows(const ffc_pack *p, const float *x, float *o, int depth,
                                                           int units, int bl, int has_bias, __m256 lo, __m256 hi,
                                                           int rows, const int B) {
    switch (rows) {
    case 8: ffc_tile(p, x, o, depth, units, bl, has_bias, lo, hi, 8, B); break;
    case 7: ffc_tile(p, x, o, depth, units, bl, has_bias, lo, hi, 7, B); break;
    case 6: ffc_tile(p, x, o, depth, units, bl, has_bias, lo, hi, 6, B); break;
    case 5: ffc_tile(p, x, o, depth, units, bl, has_bias, lo, hi, 5, B); break;
    case 4: ffc_tile(p, x, o, depth, units, bl, has_bias, lo, hi, 4, B); break;
    case 3: ffc_tile(p, x, o, depth, units, bl, has_bias, lo, hi, 3, B); break;
    case 2: ffc_tile(p, x, o, depth, units, bl, has_bias, lo, hi, 2, B); break;
    default: ffc_tile(p, x, o, depth, units, bl, has_bias, lo, hi, 1, B); break;
    }
}

/* one function per block count (each with its row tiles inlined) */
#define FFC_ROWS_B(B)                                                                                              \
    __attribute__((noinline)) static void ffc_rows##B(const ffc_pack *p, const float *x, float *o, int depth,     \
                                                      int units, int bl, int has_bias, __m256 lo, __m256 hi,       \
                                                      int rows) {                                                  \
        ffc_rows(p, x, o, depth, units, bl, has_bias, lo, hi, rows, B);                                            \
    }
FFC_ROWS_B(1)
FFC_ROWS_B(2)
FFC_ROWS_B(3)
FFC_ROWS_B(4)
#undef FFC_ROWS_B

/* one row x B blocks (5 to FFC_ROW_MAX): a single row's sums are chains of dependent adds, which keep the adders
 * busy only many side by side: 12 with AVX-512's 32 vector registers, else 8 (with the weights and the broadcast
 * input in the 16) */
#if defined(__AVX512VL__)
#define FFC_ROW_MAX 12
#else
#define FFC_ROW_MAX 8
#endif
#define FFC_ROW_B(B)                                                                                               \
    __attribute__((noinline)) static void ffc_row##B(const ffc_pack *p, const float *x, float *o, int depth,      \
                                                     int units, int bl, int has_bias, __m256 lo, __m256 hi) {      \
        ffc_tile(p, x, o, depth, units, bl, has_bias, lo, hi, 1, B);                                               \
    }
FFC_ROW_B(5)
FFC_ROW_B(6)
FFC_ROW_B(7)
FFC_ROW_B(8)
FFC_ROW_B(9)
FFC_ROW_B(10)
FFC_ROW_B(11)
FFC_ROW_B(12)
#undef FFC_ROW_B

#if defined(__AVX512F__)
/* R rows x B blocks of 16 units (from 16-block bl) as ffc_tile computes them, 16 lanes a vector: half the
 * instructions per product, which leaves the adders, not the core's dispatch, the limit. Returns 0 (nothing
 * stored) where a sum is a NaN: ffc_tile then decides which NaN each keeps. One function per shape (its sums
 * stay in registers). */
#define FFC_WIDE(R, B)                                                                                             \
    __attribute__((noinline)) static int ffc_wide_##R##x##B(const ffc_pack *p, const float *x, float *o, int depth, \
                                                            int units, int bl, int has_bias, __m256 lo8,           \
                                                            __m256 hi8) {                                          \
        __m512 acc[R * B];                                                                                         \
        const size_t step = (size_t)depth * 16;                                                                    \
        const float *w = p->w16 + (size_t)bl * step;                                                               \
        for (int i = 0; i < R * B; i++) acc[i] = _mm512_setzero_ps();                                              \
        for (int d = 0; d < depth; d++) {                                                                          \
            __m512 wv[B];                                                                                          \
            for (int j = 0; j < B; j++) wv[j] = _mm512_loadu_ps(w + j * step + (size_t)d * 16);                    \
            for (int r = 0; r < R; r++) {                                                                          \
                const __m512 v = _mm512_set1_ps(x[(size_t)r * depth + d]);                                         \
                for (int j = 0; j < B; j++) acc[r * B + j] = _mm512_add_ps(acc[r * B + j], _mm512_mul_ps(v, wv[j])); \
            }                                                                                                      \
        }                                                                                                          \
        __mmask16 nan = 0;                                                                                         \
        for (int i = 0; i < R * B; i++) nan |= _mm512_cmp_ps_mask(acc[i], acc[i], _CMP_UNORD_Q);                  \
        if (nan) return 0;                                                                                         \
        const __m512 lo = _mm512_broadcast_f32x8(lo8), hi = _mm512_broadcast_f32x8(hi8);                           \
        for (int j = 0; j < B; j++) {                                                                              \
            const int c = (bl + j) * 16;                                                                           \
            const __mmask16 keep = c + 16 <= units ? (__mmask16)0xFFFF : (__mmask16)((1u << (units - c)) - 1);     \
            const __m512 bias = _mm512_maskz_loadu_ps(keep, p->bias + c);                                          \
            for (int r = 0; r < R; r++) {                                                                          \
                __m512 y = acc[r * B + j];                                                                         \
                if (has_bias) y = _mm512_add_ps(bias, y); /* no NaN sum: either order gives the bias's NaN */      \
                y = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(y, lo, _CMP_LT_OQ), y, lo);                            \
                y = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(hi, y, _CMP_LT_OQ), y, hi);                            \
                _mm512_mask_storeu_ps(o + (size_t)r * units + c, keep, y);                                         \
            }                                                                                                      \
        }                                                                                                          \
        return 1;                                                                                                  \
    }
FFC_WIDE(4, 5)
FFC_WIDE(4, 4)
FFC_WIDE(4, 3)
FFC_WIDE(4, 2)
FFC_WIDE(4, 1)
#undef FFC_WIDE
#endif

/* the rows of a tile of B blocks: 8 x 1, 6 x 2, 3 x 3, 2 x 4 (8 to 12 sums in flight, with the weights and a
 * broadcast input within the 16 vector registers) */
static inline int ffc_tile_rows(int b) { return b == 1 ? 8 : b == 2 ? 6 : b == 3 ? 3 : 2; }

/* 8 vectors as the rows of an 8 x 8 matrix, transposed in place: r[j] holds lane j of every input vector. */
static inline void ffc_transpose8(__m256 *r) {
    const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    r[0] = _mm256_permute2f128_ps(s0, s4, 0x20), r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
    r[2] = _mm256_permute2f128_ps(s2, s6, 0x20), r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
    r[4] = _mm256_permute2f128_ps(s0, s4, 0x31), r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
    r[6] = _mm256_permute2f128_ps(s2, s6, 0x31), r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

/* One unit: 8 rows at a time in the lanes of one sum (their inputs transposed 8 depth steps at a time, the weight
 * broadcast), each lane's sum over the depth in order, then bias + sum and the clamp, stored as 8 consecutive
 * outputs. Returns the rows done (a multiple of 8; the rest take the tiles). */
static int ffc_one_unit(const ffc_pack *p, const float *in, float *out, int batches, int depth, int has_bias,
                        __m256 lo, __m256 hi) {
    int r = 0;
    const __m256 bias = _mm256_broadcast_ss(p->bias);
    for (; r + 8 <= batches; r += 8) {
        const float *x = in + (size_t)r * depth;
        __m256 acc = _mm256_setzero_ps();
#define SUM(ADD, MUL)                                                                                              \
    do {                                                                                                           \
        acc = _mm256_setzero_ps();                                                                                 \
        int d = 0;                                                                                                 \
        for (; d + 8 <= depth; d += 8) {                                                                           \
            __m256 t[8];                                                                                           \
            for (int i = 0; i < 8; i++) t[i] = _mm256_loadu_ps(x + (size_t)i * depth + d);                        \
            ffc_transpose8(t);                                                                                     \
            for (int j = 0; j < 8; j++) acc = ADD(acc, MUL(t[j], _mm256_broadcast_ss(p->w + (size_t)(d + j) * 8))); \
        }                                                                                                          \
        for (; d < depth; d++) {                                                                                   \
            const __m256 v = _mm256_set_ps(x[7 * (size_t)depth + d], x[6 * (size_t)depth + d],                    \
                                           x[5 * (size_t)depth + d], x[4 * (size_t)depth + d],                    \
                                           x[3 * (size_t)depth + d], x[2 * (size_t)depth + d], x[depth + d], x[d]); \
            acc = ADD(acc, MUL(v, _mm256_broadcast_ss(p->w + (size_t)d * 8)));                                     \
        }                                                                                                          \
    } while (0)
        SUM(_mm256_add_ps, _mm256_mul_ps);
        /* a compiler may swap the operands of the vector adds and multiplies: a NaN sum is computed again with the
         * order fixed (the total's NaN, then the input's) */
        if (_mm256_movemask_ps(_mm256_cmp_ps(acc, acc, _CMP_UNORD_Q))) SUM(mnh_add_ps, mnh_mul_ps);
#undef SUM
        __m256 y = has_bias ? mnh_add_ps(bias, acc) : acc; /* a NaN bias wins */
        _mm256_storeu_ps(out + r, ffc_clamp(y, lo, hi));
    }
    return r;
}

void mn_fully_connected_f32(const mn_word *args) {
    const ffc_pack *p = ffc_prepare(args);
    if (!p) { mn_fully_connected_f32_portable(args); return; }
    float *out = MN_P(float, OUT);
    const float *in = MN_P(const float, IN);
    const int has_bias = MN_P(const float, BIAS) != NULL;
    int batches = MN_I(BATCHES);
    const int depth = MN_I(DEPTH), units = MN_I(UNITS), blocks = mnh_blocks8(units);
    const __m256 lo = _mm256_set1_ps(mn_f32_arg(args, ACT_MIN)), hi = _mm256_set1_ps(mn_f32_arg(args, ACT_MAX));

    if (units == 1 && batches >= 8) { /* rows in lanes; the last batches % 8 as below */
        const int done = ffc_one_unit(p, in, out, batches, depth, has_bias, lo, hi);
        in += (size_t)done * depth, out += done, batches -= done;
    }
#if defined(__AVX512F__)
    if (batches >= 4 && units >= 16) { /* tiles of 4 rows x up to 5 blocks of 16 (the last rows as below) */
        const int b16 = (units + 15) / 16;
        int r0 = 0;
        for (; r0 + 4 <= batches; r0 += 4) {
            const float *x = in + (size_t)r0 * depth;
            float *o = out + (size_t)r0 * units;
            for (int bl = 0; bl < b16;) {
                const int b = b16 - bl >= 5 ? 5 : b16 - bl;
                int ok;
                switch (b) {
                case 5: ok = ffc_wide_4x5(p, x, o, depth, units, bl, has_bias, lo, hi); break;
                case 4: ok = ffc_wide_4x4(p, x, o, depth, units, bl, has_bias, lo, hi); break;
                case 3: ok = ffc_wide_4x3(p, x, o, depth, units, bl, has_bias, lo, hi); break;
                case 2: ok = ffc_wide_4x2(p, x, o, depth, units, bl, has_bias, lo, hi); break;
                default: ok = ffc_wide_4x1(p, x, o, depth, units, bl, has_bias, lo, hi); break;
                }
                if (!ok) /* a NaN: these blocks' sums again in the 8-unit tiles, the order fixed */
                    for (int k = 2 * bl; k < 2 * (bl + b) && k < blocks; k++)
                        ffc_rows1(p, x, o, depth, units, k, has_bias, lo, hi, 4);
                bl += b;
            }
        }
        in += (size_t)r0 * depth, out += (size_t)r0 * units, batches -= r0;
    }
#endif
    /* row tiles x block tiles: the blocks in groups of 4 (the last group 1 to 4), each group over rows in tiles */
    for (int bl = 0; bl < blocks;) {
        if (batches == 1 && blocks - bl >= 5) { /* the blocks left in even groups of FFC_ROW_MAX at most */
            const int left = blocks - bl, groups = (left + FFC_ROW_MAX - 1) / FFC_ROW_MAX;
            const int b = (left + groups - 1) / groups;
            switch (b) {
            case 5: ffc_row5(p, in, out, depth, units, bl, has_bias, lo, hi); break;
            case 6: ffc_row6(p, in, out, depth, units, bl, has_bias, lo, hi); break;
            case 7: ffc_row7(p, in, out, depth, units, bl, has_bias, lo, hi); break;
            case 8: ffc_row8(p, in, out, depth, units, bl, has_bias, lo, hi); break;
            case 9: ffc_row9(p, in, out, depth, units, bl, has_bias, lo, hi); break;
            case 10: ffc_row10(p, in, out, depth, units, bl, has_bias, lo, hi); break;
            case 11: ffc_row11(p, in, out, depth, units, bl, has_bias, lo, hi); break;
            default: ffc_row12(p, in, out, depth, units, bl, has_bias, lo, hi); break;
            }
            bl += b;
            continue;
        }
        const int b = blocks - bl >= 4 ? 4 : blocks - bl, tr = ffc_tile_rows(b);
        for (int r0 = 0; r0 < batches; r0 += tr) {
            const int rows = batches - r0 < tr ? batches - r0 : tr;
            const float *x = in + (size_t)r0 * depth;
            float *o = out + (size_t)r0 * units;
            switch (b) {
            case 4: ffc_rows4(p, x, o, depth, units, bl, has_bias, lo, hi, rows); break;
            case 3: ffc_rows3(p, x, o, depth, units, bl, has_bias, lo, hi, rows); break;
            case 2: ffc_rows2(p, x, o, depth, units, bl, has_bias, lo, hi, rows); break;
            default: ffc_rows1(p, x, o, depth, units, bl, has_bias, lo, hi, rows); break;
            }
        }
        bl += b;
    }
}
#else
void mn_fully_connected_f32(const mn_word *args) { mn_fully_connected_f32_portable(args); }
#endif
