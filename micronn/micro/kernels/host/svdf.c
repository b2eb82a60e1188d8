/* SVDF, int8 with an int16 state: the host port (x86-64 with AVX2) of kernels/svdf.c, same symbol, same argument
 * words.
 *
 * The paired feature weights (lower.paired_rows and its corrections) are decoded once per call site back to int8
 * rows and repacked as int16 pairs, 8 filters per vector (mn_host.h); per batch row the input, less its zero
 * point, is widened once (|x - zp| <= 255: one madd stays exact) and each broadcast pair feeds up to 32 filters'
 * sums. Their requantization to the int16 state (clamp, then the state zero point added with wrap-around) is
 * mnh_requant8's. The time step with state zero point 0: memory 8 shifts two filters' windows per vector (a byte
 * shift per 128-bit lane, the new value blended in) and sums 8 filters with madds and two horizontal adds; memory a
 * multiple of 16 shifts each window 16 slots per vector. int32 sums wrap as the portable kernel's (a madd's one
 * overflow, -32768 * -32768 twice, wraps to the same residue). Rank 1 requantizes 8 outputs per vector. Other
 * memory sizes and state zero points take the portable kernel's time step; plain (non-constant) feature weights,
 * the portable kernel.
 *
 * Resets by epoch (mn_host.h's mnh_svdf_epoch; only NativeModel's batch loop bumps it, the generated model never
 * does): each call site keeps the epoch it last saw. The first call of a new epoch finds its state as init leaves it
 * (0 everywhere: the generated init's fill of an int16 state), so the shifted window is zeros and the newest value:
 * each filter's time sum is the newest value's product with the last time weight, plus the constant of the older
 * slots ((0 - state_zp) times the other weights, wrapping as the portable sums) and the bias (rank 1). The state
 * is neither read nor written: the newest values are kept aside (pend) and written out, with the zeros before
 * them, only if a later call of the same epoch steps on (a stream that goes on after a reset).
 */
#define mn_svdf_s8 mn_svdf_s8_portable
#include "svdf.portable.inc"
#undef mn_svdf_s8
#include "mn_host.h"

__attribute__((visibility("hidden"))) uint32_t mnh_svdf_epoch;
#if defined(MNH_AVX2)
__attribute__((visibility("hidden"))) int32_t mnh_svdf_tracks = 1;
#else
__attribute__((visibility("hidden"))) int32_t mnh_svdf_tracks = 0; /* no port: the portable kernel, init per reset */
#endif

#if defined(MNH_AVX2)
typedef struct {
    mnh_rq8 o8;      /* the output's requantization (rank 1) as vectors */
    __m256i o_mask, o_half; /* its right shift's 2^e - 1 and (2^e - 1) / 2 */
    __m128i o_left, o_right; /* its shifts as counts */
    mnh_rq8 s8;      /* the state's (zero point 0, clamped to int16), for the general path */
    __m256i fold_m, fold_c8; /* the folded path's multiplier and 2^30 + 2^(30+e), broadcast */
    int kp, blocks;
    int16_t *w;      /* mnh_pack_rows8 of the feature rows */
    mnh_rq q1, q2;   /* the state's requantization (zero point 0: added after), the output's (rank 1) */
    int16_t *x;      /* every batch row's input less its zero point, widened (kp pairs a row) */
    int16_t *fresh;  /* every batch row's newest state value of each filter (blocks * 8 a row) */
    uint32_t *acc;   /* every batch row's time sums per filter (blocks * 8 a row) */
    int fold;        /* the state's requantization as one 64-bit sum (mn_rq_init's MN_RQ_FOLDED, zero point 0) */
    int no_right;    /* else no right shift (0 <= shift < 31): the doubling high multiply alone (MN_RQ_NO_RIGHT) */
    int32_t fold_mult, fold_e1;
    int64_t fold_c;  /* 2^30 + 2^(30+e) */
    uint32_t epoch;  /* mnh_svdf_epoch at this call site's last call */
    int tracked;     /* the pack is kept (the epoch then means something) */
    int pending;     /* the state is init's zeros with pend as every filter's newest value (not yet written) */
    int16_t *pend;   /* every batch row's newest values of a first call in an epoch (blocks * 8 a row) */
    int32_t *wlast;  /* every filter's last time weight (blocks * 8, the tail 0) */
    uint32_t *tinit; /* every filter's time sum before its newest value, from init's zeros (blocks * 8) */
} svdf_pack;

/* The int8 rows (filters x input_size) of the paired layout, as the FULLY_CONNECTED port decodes it. */
static void unpair(int8_t *rows, const mn_word *args) {
    const uint32_t *w = MN_P(const uint32_t, W_FEATURE);
    const int depth = MN_I(INPUT_SIZE), units = MN_I(FILTERS), groups = (depth + 3) / 4, padded = units + (units & 1);
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


static svdf_pack *svdf_prepare(const mn_word *args) {
    mnh_slot *slot;
    svdf_pack *p = (svdf_pack *)mnh_lookup(args, &slot);
    if (p) return p;
    const int depth = MN_I(INPUT_SIZE), filters = MN_I(FILTERS), kp = mnh_pairs(depth), blocks = mnh_blocks8(filters);
    const int batches = MN_I(BATCHES);
    p = (svdf_pack *)aligned_alloc(32, (sizeof(svdf_pack) + 31) / 32 * 32);
    int8_t *rows = (int8_t *)mnh_alloc((size_t)filters * depth);
    if (!p || !rows) return NULL;
    memset(p, 0, sizeof(svdf_pack));
    p->kp = kp, p->blocks = blocks;
    p->w = (int16_t *)mnh_alloc((size_t)blocks * kp * 16 * sizeof(int16_t));
    p->x = (int16_t *)mnh_alloc(((size_t)2 * kp * batches + 16) * sizeof(int16_t));
    p->fresh = (int16_t *)mnh_alloc(((size_t)blocks * 8 * batches + 16) * sizeof(int16_t));
    p->acc = (uint32_t *)mnh_alloc((size_t)blocks * 8 * batches * sizeof(uint32_t));
    p->pend = (int16_t *)mnh_alloc(((size_t)blocks * 8 * batches + 16) * sizeof(int16_t));
    p->wlast = (int32_t *)mnh_alloc((size_t)blocks * 8 * sizeof(int32_t));
    p->tinit = (uint32_t *)mnh_alloc((size_t)blocks * 8 * sizeof(uint32_t));
    if (!p->pend || !p->wlast || !p->tinit) return NULL;
    p->epoch = mnh_svdf_epoch, p->tracked = slot != NULL;
    if (!slot) mnh_svdf_tracks = 0; /* a pack per call: no epoch kept */
    const int32_t m1 = MN_I(MULT_1), s1 = MN_I(SHIFT_1), m2 = MN_I(MULT_2), s2 = MN_I(SHIFT_2);
    if (!p->w || !p->x || !p->fresh || !p->acc || !mnh_rq_init(&p->q1, &m1, &s1, 1, 1) ||
        !mnh_rq_init(&p->q2, &m2, &s2, 1, 1))
        return NULL;
    if (!p->q1.vec || !p->q2.vec) return NULL;
    p->fold = m1 > (1 << 30) && s1 <= -2 && s1 >= -22;
    p->no_right = m1 >= 0 && s1 >= 0 && s1 < 31;
    p->fold_mult = m1, p->fold_e1 = -s1 - 1, p->fold_c = ((int64_t)1 << 30) + ((int64_t)1 << (30 - s1));
    p->fold_m = _mm256_set1_epi32(m1), p->fold_c8 = _mm256_set1_epi64x(p->fold_c);
    p->o8 = mnh_rq8_uniform(p->q2.mult[0], p->q2.shift[0], MN_I(OUT_ZP), -128, 127);
    p->o_mask = _mm256_set1_epi32((int32_t)((1u << p->q2.right[0]) - 1u));
    p->o_half = _mm256_srai_epi32(p->o_mask, 1);
    p->o_left = _mm_cvtsi32_si128(p->q2.left[0]), p->o_right = _mm_cvtsi32_si128(p->q2.right[0]);
    p->s8 = mnh_rq8_uniform(p->q1.mult[0], p->q1.shift[0], 0, -32768, 32767);
    unpair(rows, args);
    mnh_pack_rows8(p->w, rows, filters, depth, (size_t)depth);
    free(rows);
    mnh_keep(slot, args, p);
    return p;
}

/* 8 filters' feature sums requantized to the state: clamped to int16, then the state zero point added with
 * wrap-around (the low halves) */
__attribute__((always_inline)) static inline __m128i state8(const svdf_pack *p, __m256i acc, __m256i zp16) {
    __m256i y;
    if (p->fold) { /* v = x * m + 2^30 + 2^(30+e) - [x < 0] 2^31, floor(v / 2^(31+e)): mn_rq_clamp's */
        const __m256i x = acc, m = p->fold_m, c = p->fold_c8;
        const __m256i sg = _mm256_srai_epi32(x, 31);
        const __m256i se = _mm256_slli_epi64(_mm256_shuffle_epi32(sg, 0xA0), 31);
        const __m256i so = _mm256_slli_epi64(_mm256_shuffle_epi32(sg, 0xF5), 31);
        const __m256i ve = _mm256_add_epi64(_mm256_add_epi64(_mm256_mul_epi32(x, m), c), se);
        const __m256i vo = _mm256_add_epi64(_mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(x, 32), m), c), so);
        const __m256i hi32 = _mm256_blend_epi32(_mm256_srli_epi64(ve, 32), vo, 0xAA);
        y = _mm256_sra_epi32(hi32, _mm_cvtsi32_si128(p->fold_e1));
        y = _mm256_min_epi32(_mm256_max_epi32(y, _mm256_set1_epi32(-32768)), _mm256_set1_epi32(32767));
    } else if (p->no_right) { /* floor(((x << shift) * m + 2^30) / 2^31), the shift wrapping */
        const __m256i x = _mm256_sll_epi32(acc, _mm_cvtsi32_si128(p->q1.left[0]));
        const __m256i m = p->fold_m, nudge = _mm256_set1_epi64x((int64_t)1 << 30);
        const __m256i ev = _mm256_add_epi64(_mm256_mul_epi32(x, m), nudge);
        const __m256i od = _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(x, 32), m), nudge);
        y = _mm256_blend_epi32(_mm256_srli_epi64(ev, 31), _mm256_slli_epi64(od, 1), 0xAA);
        y = _mm256_min_epi32(_mm256_max_epi32(y, _mm256_set1_epi32(-32768)), _mm256_set1_epi32(32767));
    } else {
        y = mnh_requant8r(acc, &p->s8);
    }
    y = _mm256_add_epi32(y, zp16);
    y = _mm256_srai_epi32(_mm256_slli_epi32(y, 16), 16);
    return _mm_packs_epi32(_mm256_castsi256_si128(y), _mm256_extracti128_si256(y, 1));
}

/* mnh_requant8r for the output's per-tensor multiplier and shift (the same steps, the shifts uniform and the
 * rounding mask set up once) */
__attribute__((always_inline)) static inline __m256i out8(const svdf_pack *p, __m256i acc) {
    const __m256i x = _mm256_sll_epi32(acc, p->o_left), m = p->o8.mult, nudge = _mm256_set1_epi64x((int64_t)1 << 30);
    const __m256i even = _mm256_add_epi64(_mm256_mul_epi32(x, m), nudge);
    const __m256i odd = _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(x, 32), m), nudge);
    const __m256i h = _mm256_blend_epi32(_mm256_srli_epi64(even, 31), _mm256_slli_epi64(odd, 1), 0xAA);
    const __m256i threshold = _mm256_sub_epi32(p->o_half, _mm256_srai_epi32(h, 31));
    __m256i y = _mm256_sub_epi32(_mm256_sra_epi32(h, p->o_right),
                                 _mm256_cmpgt_epi32(_mm256_and_si256(h, p->o_mask), threshold));
    y = _mm256_min_epi32(_mm256_max_epi32(y, p->o8.lo_zp), p->o8.hi_zp);
    return _mm256_add_epi32(y, p->o8.zp);
}

/* R batch rows (x: their widened inputs, 2 kp int16 apart) times M blocks of 8 filters from block b0: each weight
 * vector loaded once for the R rows, each input pair broadcast once for the M blocks; the sums requantized into
 * fresh (the rows `fstride` int16 apart) */
__attribute__((always_inline)) static inline void features_tile(const svdf_pack *p, const int16_t *x, int16_t *fresh,
                                                                int fstride, int b0, const int R, const int M,
                                                                __m256i zp16) {
    const int kp = p->kp;
    const int16_t *w = p->w + (size_t)b0 * kp * 16;
    __m256i acc[4][4];
    for (int r = 0; r < R; r++)
        for (int k = 0; k < M; k++) acc[r][k] = _mm256_setzero_si256();
    for (int j = 0; j < kp; j++) {
        __m256i wv[4];
        for (int k = 0; k < M; k++) wv[k] = _mm256_loadu_si256((const __m256i *)(w + ((size_t)k * kp + j) * 16));
        for (int r = 0; r < R; r++) {
            const __m256i xv = _mm256_set1_epi32(((const int32_t *)(x + (size_t)r * 2 * kp))[j]);
            for (int k = 0; k < M; k++) acc[r][k] = _mm256_add_epi32(acc[r][k], _mm256_madd_epi16(xv, wv[k]));
        }
    }
    for (int r = 0; r < R; r++)
        for (int k = 0; k < M; k++)
            _mm_storeu_si128((__m128i *)(fresh + (size_t)r * fstride + 8 * (b0 + k)), state8(p, acc[r][k], zp16));
}

/* the feature projections of all filters of `rows` batch rows from x into fresh (blocks * 8 int16 a row): two rows
 * at a time with four blocks, or one */
static void features(const svdf_pack *p, const int16_t *x, int16_t *fresh, int rows, int32_t state_zp) {
    const __m256i zp16 = _mm256_set1_epi32(state_zp);
    const int fstride = p->blocks * 8;
    int r = 0;
    for (; r + 2 <= rows; r += 2) {
        const int16_t *xr = x + (size_t)r * 2 * p->kp;
        int16_t *fr = fresh + (size_t)r * fstride;
        int b0 = 0;
        for (; b0 + 4 <= p->blocks; b0 += 4) features_tile(p, xr, fr, fstride, b0, 2, 4, zp16);
        switch (p->blocks - b0) {
        case 1: features_tile(p, xr, fr, fstride, b0, 2, 1, zp16); break;
        case 2: features_tile(p, xr, fr, fstride, b0, 2, 2, zp16); break;
        case 3: features_tile(p, xr, fr, fstride, b0, 2, 3, zp16); break;
        default: break;
        }
    }
    for (; r < rows; r++) {
        const int16_t *xr = x + (size_t)r * 2 * p->kp;
        int16_t *fr = fresh + (size_t)r * fstride;
        int b0 = 0;
        for (; b0 + 4 <= p->blocks; b0 += 4) features_tile(p, xr, fr, fstride, b0, 1, 4, zp16);
        switch (p->blocks - b0) {
        case 1: features_tile(p, xr, fr, fstride, b0, 1, 1, zp16); break;
        case 2: features_tile(p, xr, fr, fstride, b0, 1, 2, zp16); break;
        case 3: features_tile(p, xr, fr, fstride, b0, 1, 3, zp16); break;
        default: break;
        }
    }
}

/* every batch row's input less the zero point, widened to int16 (each row kp pairs, an odd size's last one 0) */
static void widen_rows(int16_t *dst, const int8_t *in, int rows, int size, int32_t zp) {
    const int kp = mnh_pairs(size);
    const __m256i z = _mm256_set1_epi16((int16_t)zp);
    if (!(size & 1)) { /* the rows back to back on both sides: one run */
        const size_t n = (size_t)rows * size;
        size_t i = 0;
        for (; i + 16 <= n; i += 16)
            _mm256_storeu_si256((__m256i *)(dst + i),
                                _mm256_sub_epi16(_mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(in + i))), z));
        for (; i < n; i++) dst[i] = (int16_t)(in[i] - zp);
        return;
    }
    for (int r = 0; r < rows; r++) {
        const int8_t *x = in + (size_t)r * size;
        int16_t *d = dst + (size_t)r * 2 * kp;
        for (int i = 0; i < size; i++) d[i] = (int16_t)(x[i] - zp);
        d[size] = 0;
    }
}

/* memory 8, state zero point 0: acc[f] = init[f] + the time dot of filters [0, n) (n a multiple of 8 here) */
static void time8(int16_t *s, const int16_t *w, const int16_t *fresh, int n, const uint32_t *init, uint32_t *acc) {
    /* per pair of filters: byte shuffles putting fresh[2i] at lane 0's slot 7 and fresh[2i + 1] at lane 1's */
    for (int f = 0; f + 8 <= n; f += 8, s += 64, w += 64) {
        const __m256i fr = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(fresh + f)));
        __m256i m[4];
        for (int i = 0; i < 4; i++) {
            const __m256i ctl = _mm256_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                                 (char)(4 * i), (char)(4 * i + 1), -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                                 -1, -1, -1, -1, -1, (char)(4 * i + 2), (char)(4 * i + 3));
            const __m256i old = _mm256_loadu_si256((const __m256i *)(s + 16 * i));
            const __m256i now = _mm256_or_si256(_mm256_srli_si256(old, 2), _mm256_shuffle_epi8(fr, ctl));
            _mm256_storeu_si256((__m256i *)(s + 16 * i), now);
            m[i] = _mm256_madd_epi16(now, _mm256_loadu_si256((const __m256i *)(w + 16 * i)));
        }
        /* m[i]: filter 2i in lane 0, 2i + 1 in lane 1, four partial sums each */
        const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(m[0], m[1]), _mm256_hadd_epi32(m[2], m[3]));
        /* h: lane 0 filters 0, 2, 4, 6; lane 1 filters 1, 3, 5, 7 */
        const __m256i sum = _mm256_permutevar8x32_epi32(h, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        _mm256_storeu_si256((__m256i *)(acc + f),
                            _mm256_add_epi32(sum, _mm256_loadu_si256((const __m256i *)(init + f))));
    }
}

/* filter f's window of a memory a multiple of 16 (state zero point 0) shifted in place, fresh value last, times
 * its time weights: 8 int32 partial sums. `tail_ok`: s[memory] (the next filter's first slot, not yet shifted) may
 * be read, so each vector is one unaligned load one slot on; else the last vector is built from the slots it holds. */
__attribute__((always_inline)) static inline __m256i window16(int16_t *s, const int16_t *w, int memory, int16_t fresh, int tail_ok) {
    __m256i a = _mm256_setzero_si256();
    const __m256i last = _mm256_setr_epi16(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1);
    for (int k = 0; k < memory; k += 16) {
        __m256i now;
        if (k + 16 < memory) {
            now = _mm256_loadu_si256((const __m256i *)(s + k + 1));
        } else if (tail_ok) {
            now = _mm256_blendv_epi8(_mm256_loadu_si256((const __m256i *)(s + k + 1)), _mm256_set1_epi16(fresh), last);
        } else {
            const __m256i old = _mm256_loadu_si256((const __m256i *)(s + k));
            const __m256i hi_next = _mm256_permute2x128_si256(
                old, _mm256_castsi128_si256(_mm_cvtsi32_si128((uint16_t)fresh)), 0x21);
            now = _mm256_alignr_epi8(hi_next, old, 2);
        }
        _mm256_storeu_si256((__m256i *)(s + k), now);
        a = _mm256_add_epi32(a, _mm256_madd_epi16(now, _mm256_loadu_si256((const __m256i *)(w + k))));
    }
    return a;
}

/* memory a multiple of 16, state zero point 0: whole groups of 8 filters, their sums reduced together (int32 sums
 * wrap, so any order of additions gives the same bits) */
__attribute__((always_inline)) static inline int groups16(int16_t *s, const int16_t *w, const int memory,
                                                          const int16_t *fresh, int n, const uint32_t *init,
                                                          uint32_t *acc) {
    int f = 0;
    for (; f + 8 <= n; f += 8) {
        __m256i a[8];
        for (int i = 0; i < 8; i++)
            a[i] = window16(s + (size_t)(f + i) * memory, w + (size_t)(f + i) * memory, memory, fresh[f + i],
                            f + i + 1 < n);
        const __m256i h0 = _mm256_hadd_epi32(_mm256_hadd_epi32(a[0], a[1]), _mm256_hadd_epi32(a[2], a[3]));
        const __m256i h1 = _mm256_hadd_epi32(_mm256_hadd_epi32(a[4], a[5]), _mm256_hadd_epi32(a[6], a[7]));
        /* h0: filters 0..3 of the low 128-bit halves, then of the high ones; h1: filters 4..7 */
        const __m256i sum = _mm256_add_epi32(_mm256_permute2x128_si256(h0, h1, 0x20),
                                             _mm256_permute2x128_si256(h0, h1, 0x31));
        _mm256_storeu_si256((__m256i *)(acc + f),
                            _mm256_add_epi32(sum, _mm256_loadu_si256((const __m256i *)(init + f))));
    }
    return f;
}

static int time16x8(int16_t *s, const int16_t *w, int memory, const int16_t *fresh, int n, const uint32_t *init,
                    uint32_t *acc) {
    switch (memory) { /* the common sizes unrolled */
    case 16: return groups16(s, w, 16, fresh, n, init, acc);
    case 32: return groups16(s, w, 32, fresh, n, init, acc);
    default: return groups16(s, w, memory, fresh, n, init, acc);
    }
}

/* memory a multiple of 16, state zero point 0 */
static void time16(int16_t *s, const int16_t *w, int memory, const int16_t *fresh, int n, const uint32_t *init,
                   uint32_t *acc) {
    for (int f = 0; f < n; f++, s += memory, w += memory) {
        __m256i a = _mm256_setzero_si256();
        for (int k = 0; k < memory; k += 16) {
            const __m256i old = _mm256_loadu_si256((const __m256i *)(s + k));
            const int16_t next = k + 16 < memory ? s[k + 16] : fresh[f];
            /* old shifted down one slot across the lanes, next in slot 15 */
            const __m256i hi_next = _mm256_permute2x128_si256(old, _mm256_castsi128_si256(_mm_cvtsi32_si128((uint16_t)next)),
                                                              0x21);
            const __m256i now = _mm256_alignr_epi8(hi_next, old, 2);
            _mm256_storeu_si256((__m256i *)(s + k), now);
            a = _mm256_add_epi32(a, _mm256_madd_epi16(now, _mm256_loadu_si256((const __m256i *)(w + k))));
        }
        const __m128i h = _mm_add_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
        const __m128i h2 = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0x4E));
        acc[f] = init[f] + (uint32_t)_mm_cvtsi128_si32(_mm_add_epi32(h2, _mm_shuffle_epi32(h2, 0xB1)));
    }
}

/* the first call of an epoch: each row's time sums from its newest values alone (the state init's zeros) */
static void fresh_steps(svdf_pack *p, const int16_t *wt, const int32_t *bias, int batches, int filters, int memory,
                        int rank, int32_t state_zp) {
    const int n8 = p->blocks * 8;
    for (int f = 0; f < filters; f++) {
        const int16_t *w = wt + (size_t)f * memory;
        uint32_t c = rank == 1 ? (uint32_t)bias[f] : 0;
        for (int m = 0; m + 1 < memory; m++) c += (uint32_t)(0 - state_zp) * (uint32_t)w[m]; /* may wrap */
        p->wlast[f] = w[memory - 1], p->tinit[f] = c;
    }
    const __m256i zp = _mm256_set1_epi32(state_zp);
    for (int b = 0; b < batches; b++) {
        const int16_t *v = p->pend + (size_t)b * n8;
        uint32_t *acc = p->acc + (size_t)b * n8;
        for (int i = 0; i < n8; i += 8) {
            const __m256i x = _mm256_sub_epi32(_mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i *)(v + i))), zp);
            const __m256i t = _mm256_mullo_epi32(x, _mm256_loadu_si256((const __m256i *)(p->wlast + i)));
            _mm256_storeu_si256((__m256i *)(acc + i),
                                _mm256_add_epi32(t, _mm256_loadu_si256((const __m256i *)(p->tinit + i))));
        }
    }
}

/* the state a first call of the epoch left: init's zeros, each filter's newest value last */
static void materialize(const svdf_pack *p, int16_t *state, int batches, int filters, int memory) {
    const int n8 = p->blocks * 8;
    for (int b = 0; b < batches; b++) {
        const int16_t *v = p->pend + (size_t)b * n8;
        int16_t *s = state + (size_t)b * filters * memory;
        memset(s, 0, (size_t)filters * memory * sizeof(int16_t));
        for (int f = 0; f < filters; f++) s[(size_t)f * memory + memory - 1] = v[f];
    }
}

/* each row's time steps from its state, shifted in place, into acc: from the bias (rank 1) or 0 */
static void time_steps(svdf_pack *p, int16_t *state, const int16_t *wt, const int32_t *bias, int batches,
                       int filters, int memory, int rank, int32_t state_zp) {
    uint32_t zeros[64] = {0};
    const int whole8 = memory == 8 && state_zp == 0 ? filters / 8 * 8 : 0;
    const int vec16 = memory % 16 == 0 && state_zp == 0;
    const int astride = p->blocks * 8;
    for (int b = 0; b < batches; b++) {
        int16_t *s = state + (size_t)b * filters * memory;
        const int16_t *fresh = p->fresh + (size_t)b * p->blocks * 8;
        uint32_t *acc = p->acc + (size_t)b * astride;
        /* the time steps, from the bias (rank 1) or 0 */
        for (int f0 = 0; f0 < filters; f0 += 64) {
            const int n = mn_min(filters - f0, 64);
            const uint32_t *init = rank == 1 ? (const uint32_t *)bias + f0 : zeros;
            int done = 0;
            if (whole8 > f0) {
                done = mn_min(whole8 - f0, n);
                time8(s + (size_t)f0 * memory, wt + (size_t)f0 * memory, fresh + f0, done, init, acc + f0);
            } else if (vec16) {
                done = time16x8(s + (size_t)f0 * memory, wt + (size_t)f0 * memory, memory, fresh + f0, n, init,
                                acc + f0);
                time16(s + (size_t)(f0 + done) * memory, wt + (size_t)(f0 + done) * memory, memory,
                       fresh + f0 + done, n - done, init + done, acc + f0 + done);
                done = n;
            }
            if (done < n)
                time_chunk(s + (size_t)(f0 + done) * memory, wt + (size_t)(f0 + done) * memory, memory, 0,
                           fresh + f0 + done, n - done, state_zp, init + done, acc + f0 + done);
        }
    }
}

/* the outputs from acc (rank 1: the filters' sums; else summed per unit from the bias) */
static void outputs(const svdf_pack *p, int8_t *out, const int32_t *bias, int batches, int units, int rank,
                    int32_t out_zp, int32_t mult_2, int32_t shift_2) {
    const mn_rq q2 = mn_rq_init(mult_2, shift_2, out_zp);
    const int astride = p->blocks * 8;
    if (rank == 1 && units % 8 == 0) { /* the rows' sums back to back, as their outputs: one run */
        const size_t total = (size_t)batches * units;
        const uint32_t *acc = p->acc;
        size_t i = 0;
        for (; i + 16 <= total; i += 16) {
            const __m256i y0 = out8(p, _mm256_loadu_si256((const __m256i *)(acc + i)));
            const __m256i y1 = out8(p, _mm256_loadu_si256((const __m256i *)(acc + i + 8)));
            const __m128i w0 = _mm_packs_epi32(_mm256_castsi256_si128(y0), _mm256_extracti128_si256(y0, 1));
            const __m128i w1 = _mm_packs_epi32(_mm256_castsi256_si128(y1), _mm256_extracti128_si256(y1, 1));
            _mm_storeu_si128((__m128i *)(out + i), _mm_packs_epi16(w0, w1));
        }
        if (i < total)
            _mm_storel_epi64((__m128i *)(out + i),
                             mnh_bytes8(out8(p, _mm256_loadu_si256((const __m256i *)(acc + i)))));
        return;
    }
    for (int b = 0; b < batches; b++) {
        const uint32_t *acc = p->acc + (size_t)b * astride;
        int8_t *o = out + (size_t)b * units;
        if (rank == 1) {
            int u = 0;
            for (; u + 8 <= units; u += 8)
                _mm_storel_epi64((__m128i *)(o + u),
                                 mnh_bytes8(out8(p, _mm256_loadu_si256((const __m256i *)(acc + u)))));
            for (; u < units; u++) o[u] = (int8_t)mn_rq_clamp(&q2, (int32_t)acc[u], -128, 127);
            continue;
        }
        for (int u = 0, f = 0; u < units; u++) {
            uint32_t unit = (uint32_t)bias[u];
            for (int r = 0; r < rank; r++, f++) unit += acc[f];
            o[u] = (int8_t)mn_rq_clamp(&q2, (int32_t)unit, -128, 127);
        }
    }
}

void mn_svdf_s8(const mn_word *args) {
    svdf_pack *p = MN_I(PAIRED) ? svdf_prepare(args) : NULL;
    if (!p) {
        mnh_svdf_tracks = 0; /* the first call of this site (a pack, once made, stays): its state is init's */
        mn_svdf_s8_portable(args);
        return;
    }
    int8_t *out = MN_P(int8_t, OUT);
    const int8_t *in = MN_P(const int8_t, IN);
    const int16_t *wt = MN_P(const int16_t, W_TIME);
    const int32_t *bias = MN_P(const int32_t, BIAS);
    int16_t *state = MN_P(int16_t, STATE);
    const int batches = MN_I(BATCHES), input_size = MN_I(INPUT_SIZE), filters = MN_I(FILTERS);
    const int memory = MN_I(MEMORY), rank = MN_I(RANK), units = filters / rank;
    const int32_t in_zp = MN_I(IN_ZP), state_zp = MN_I(STATE_ZP);

    widen_rows(p->x, in, batches, input_size, in_zp);
    const uint32_t epoch = mnh_svdf_epoch;
    if (p->tracked && p->epoch != epoch) { /* the state is init's: the newest values alone, kept aside */
        p->epoch = epoch, p->pending = 1;
        features(p, p->x, p->pend, batches, state_zp);
        fresh_steps(p, wt, bias, batches, filters, memory, rank, state_zp);
    } else {
        if (p->pending) materialize(p, state, batches, filters, memory), p->pending = 0;
        features(p, p->x, p->fresh, batches, state_zp);
        time_steps(p, state, wt, bias, batches, filters, memory, rank, state_zp);
    }
    outputs(p, out, bias, batches, units, rank, MN_I(OUT_ZP), MN_I(MULT_2), MN_I(SHIFT_2));
}
#else
void mn_svdf_s8(const mn_word *args) { mn_svdf_s8_portable(args); }
#endif
