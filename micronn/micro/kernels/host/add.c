/* ADD and SUB, int8: the host port (x86-64 with AVX2) of kernels/add.c, same symbols, same argument words.
 *
 * Rows whose three operands are contiguous (no broadcast) go 8 elements at a time: each operand offset, shifted
 * and rescaled, the sum (or difference) with wrap-around, then the output rescaling, zero point and clamp, each
 * step the portable kernel's arithmetic (its multiplier-below-one MultiplyByQuantizedMultiplier is
 * mnh_requant8r's with no left shift). With AVX-512 VBMI such rows go 64 elements at a time first: an operand's
 * rescaled value depends on its byte alone, so each call site keeps the values of all 256 bytes for both operands
 * (the portable rescale's, as four byte planes, cached with mnh_lookup), looked up by byte permutes as relu.c's
 * tables; only the sum is rescaled, 16 lanes at a time. Where the output's right shift is 16 to 28 (ADD's usual
 * 17-20), the output rescaling itself is split over the two operands' tables (add_tables' carry form), 128
 * elements at a time (each table vector loaded once for two vectors of bytes): an output is two looked-up int16
 * parts and one carry from 16-bit sums, and the rare blocks where some lane's carry could depend on the dropped low
 * bits go through the rescaling above. Other rows, a row's last few elements, and a call site whose tables find no
 * memory, run the portable code (or the 8-element loop).
 */
#define mn_add_s8 mn_add_s8_portable
#define mn_sub_s8 mn_sub_s8_portable
#include "add.portable.inc"
#undef mn_add_s8
#undef mn_sub_s8
#include "mn_host.h"

#if defined(MNH_AVX2)
/* an operand's rescaling: mnh_requant8r's for a multiplier and right shift shared by all lanes, no clamp */
static inline mnh_rq8 rescaler(int32_t mult, int32_t shift) {
    return mnh_rq8_uniform(mult, shift, 0, INT32_MIN, INT32_MAX);
}

#if defined(__AVX512VBMI__) && defined(__AVX512BW__)
/* A call site's tables, per operand k (0, 1) and byte x:
 * - value: the operand's rescaled value (the portable rescale's), byte j at value[4 k + j][(uint8_t)x];
 * - carry (where `window`): the output rescaling split over the operands. With s = a + b (or a - b: then b's
 *   values negated), m2 = 2 mult, D = 2^(32 + e) and K = 2^31 + 2^(e - 1) 2^32, the output before the clamp is
 *   zp + floor((s m2 + K - [s < 0] 2^32) / D) (mnh_fr's form, TFLM's two roundings in one). Split each operand's
 *   v m2 = q D + r (0 <= r < D) and keep the top 16 bits of r: the first operand's gets K's top bits added (their
 *   carry, and zp, go into its q). Then the output is qa + qb + [ra + rb >= 2^16] (16-bit r: carry[4 k + 0, 1],
 *   int16 q: carry[4 k + 2, 3]), except where what the 16 bits leave out moves that carry: r's low bits (each below
 *   2^(16 + e)), K's low 2^31 and the sign's 2^32 (e >= 16: together more than -2^(16 + e), less than 3 times it)
 *   reach the next multiple of 2^16 only where the low 16 bits of ra + rb are 0 or at least 2^16 - 2. */
typedef struct {
    uint8_t value[8][256], carry[8][256];
    int64_t bound;  /* of every |a| + |b|: out16_fold's condition */
    int16_t window; /* the carry form's ambiguous sums: (low 16 bits + 2) mod 2^16 below it; 0: no carry form */
} add_tables;

/* v m2 split as above: q (zp and K's carry in) and the top 16 bits of r (K's top bits added) */
static inline void carry_split(int32_t v, int64_t m2, int e, int64_t add, int32_t *q, uint32_t *r) {
    const int64_t n = (int64_t)v * m2;
    const int64_t top = ((n & (((int64_t)1 << (32 + e)) - 1)) >> (16 + e)) + add;
    *q = (int32_t)((n >> (32 + e)) + (top >> 16)), *r = (uint32_t)(top & 0xffff);
}

static const add_tables *operand_tables(const mn_word *args, int subtract) {
    mnh_slot *slot;
    add_tables *t = (add_tables *)mnh_lookup(args, &slot);
    if (t) return t;
    t = (add_tables *)mnh_alloc(sizeof(add_tables));
    if (!t) return NULL;
    const int left_shift = MN_I(LEFT_SHIFT), e = -MN_I(SHIFT_OUT);
    const int64_t m2 = 2 * (int64_t)MN_I(MULT_OUT), kh = e >= 16 ? (((int64_t)1 << 31) >> (16 + e)) + (1 << 15) : 0;
    int64_t max_a = 0, max_b = 0, max_q = 0;
    for (int x = -128; x < 128; x++) {
        const int32_t a = rescale(x, MN_I(OFF1), left_shift, MN_I(MULT1), MN_I(SHIFT1));
        const int32_t b = rescale(x, MN_I(OFF2), left_shift, MN_I(MULT2), MN_I(SHIFT2));
        for (int k = 0; k < 4; k++) t->value[k][(uint8_t)x] = (uint8_t)((uint32_t)a >> 8 * k);
        for (int k = 0; k < 4; k++) t->value[4 + k][(uint8_t)x] = (uint8_t)((uint32_t)b >> 8 * k);
        max_a = mn_max(max_a, a < 0 ? -(int64_t)a : a), max_b = mn_max(max_b, b < 0 ? -(int64_t)b : b);
        if (e < 16 || e > 28) continue;
        int32_t q[2];
        uint32_t r[2];
        carry_split(a, m2, e, kh, &q[0], &r[0]), carry_split(subtract ? -b : b, m2, e, 0, &q[1], &r[1]);
        q[0] += MN_I(OUT_ZP);
        for (int k = 0; k < 2; k++) {
            t->carry[4 * k][(uint8_t)x] = (uint8_t)r[k], t->carry[4 * k + 1][(uint8_t)x] = (uint8_t)(r[k] >> 8);
            t->carry[4 * k + 2][(uint8_t)x] = (uint8_t)q[k], t->carry[4 * k + 3][(uint8_t)x] = (uint8_t)(q[k] >> 8);
            max_q = mn_max(max_q, q[k] < 0 ? -(int64_t)q[k] : q[k]);
        }
    }
    t->bound = max_a + max_b;
    /* the sums exact in int32 (no wrap), the int16 q + q + 1 far from overflow */
    t->window = e >= 16 && e <= 28 && MN_I(MULT_OUT) >= 0 && t->bound < INT32_MAX && max_q < 16000 ? 3 : 0;
    mnh_keep(slot, args, t);
    return t;
}

/* byte k of the value of each of the 64 bytes x from plane t (relu.c's lookup: two 128-byte halves by the sign) */
static inline __m512i plane_lookup(const uint8_t *t, __m512i x, __mmask64 negative) {
    const __m512i below = _mm512_permutex2var_epi8(_mm512_loadu_si512((const void *)t), x,
                                                   _mm512_loadu_si512((const void *)(t + 64)));
    const __m512i above = _mm512_permutex2var_epi8(_mm512_loadu_si512((const void *)(t + 128)), x,
                                                   _mm512_loadu_si512((const void *)(t + 192)));
    return _mm512_mask_blend_epi8(negative, below, above);
}

/* the values of 64 bytes x from one operand's planes, as int32 in the order the packs of out64 undo: v[j] holds,
 * in each 128-bit lane l, the elements 16 l + 4 j .. 16 l + 4 j + 3 */
static inline void operand_values(const uint8_t *t, __m512i x, __m512i v[4]) {
    const __mmask64 negative = _mm512_movepi8_mask(x);
    const __m512i b0 = plane_lookup(t, x, negative), b1 = plane_lookup(t + 256, x, negative);
    const __m512i b2 = plane_lookup(t + 512, x, negative), b3 = plane_lookup(t + 768, x, negative);
    const __m512i lo01 = _mm512_unpacklo_epi8(b0, b1), hi01 = _mm512_unpackhi_epi8(b0, b1);
    const __m512i lo23 = _mm512_unpacklo_epi8(b2, b3), hi23 = _mm512_unpackhi_epi8(b2, b3);
    v[0] = _mm512_unpacklo_epi16(lo01, lo23), v[1] = _mm512_unpackhi_epi16(lo01, lo23);
    v[2] = _mm512_unpacklo_epi16(hi01, hi23), v[3] = _mm512_unpackhi_epi16(hi01, hi23);
}

/* the output rescaling of 16 sums: mnh_requant8r's arithmetic with its right shift shared by all lanes */
typedef struct { __m512i mult, threshold, one, zp, lo_zp, hi_zp, mask; __m128i right; } out16;

static inline __m512i requant16(__m512i x, const out16 *r) {
    const __m512i nudge = _mm512_set1_epi64((int64_t)1 << 30);
    const __m512i even = _mm512_add_epi64(_mm512_mul_epi32(x, r->mult), nudge);
    const __m512i odd = _mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(x, 32), r->mult), nudge);
    const __m512i h = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(even, 31), _mm512_slli_epi64(odd, 1));
    const __m512i threshold = _mm512_sub_epi32(r->threshold, _mm512_srai_epi32(h, 31));
    const __mmask16 up = _mm512_cmpgt_epi32_mask(_mm512_and_si512(h, r->mask), threshold);
    __m512i y = _mm512_sra_epi32(h, r->right);
    y = _mm512_mask_add_epi32(y, up, y, r->one);
    y = _mm512_min_epi32(_mm512_max_epi32(y, r->lo_zp), r->hi_zp);
    return _mm512_add_epi32(y, r->zp);
}

/* The output rescaling of 16 sums as mnh_fr's (its conditions: |sum| < 2^28, a right shift e <= 20, zp in int8;
 * checked per call site): floor((h + half + zp * 2^e - [sum < 0 and e > 0]) / 2^e) with h + half + zp * 2^e the
 * high word of sum * m2 + k, m2 = 2 * mult, k = 2^31 + (half + zp * 2^e) * 2^32, the product taken unsigned and its
 * excess where sum < 0 taken off with the unit (corr = m2 + [e > 0]); zp included, not clamped (the saturating
 * packs and the byte clamp after them are the clamp). */
typedef struct { __m512i mult, k, corr; __m128i right; } fold16;

static inline __m512i fold16_apply(__m512i x, const fold16 *r) {
    const __m512i even = _mm512_add_epi64(_mm512_mul_epu32(x, r->mult), r->k);
    const __m512i odd = _mm512_add_epi64(_mm512_mul_epu32(_mm512_srli_epi64(x, 32), r->mult), r->k);
    const __m512i h = _mm512_mask_shuffle_epi32(odd, 0x5555, even, _MM_PERM_DDBB); /* the high words */
    return _mm512_sra_epi32(_mm512_mask_sub_epi32(h, _mm512_movepi32_mask(x), h, r->corr), r->right);
}

/* 64 outputs of contiguous operands: rescaled by fold16 (then the clamp [lo8, hi8] on bytes) where f is given, else
 * by requant16 (f and subtract: constants at each call) */
__attribute__((always_inline)) static inline void out64(uint8_t *p0, const uint8_t *p1, const uint8_t *p2,
                                                        const uint8_t *t, const out16 *r, const fold16 *f, __m512i lo8,
                                                        __m512i hi8, const int subtract) {
    __m512i a[4], b[4], y[4];
    operand_values(t, _mm512_loadu_si512((const void *)p1), a);
    operand_values(t + 1024, _mm512_loadu_si512((const void *)p2), b);
    for (int j = 0; j < 4; j++) {
        const __m512i s = subtract ? _mm512_sub_epi32(a[j], b[j]) : _mm512_add_epi32(a[j], b[j]);
        y[j] = f ? fold16_apply(s, f) : requant16(s, r);
    }
    const __m512i w = _mm512_packs_epi16(_mm512_packs_epi32(y[0], y[1]), _mm512_packs_epi32(y[2], y[3]));
    _mm512_storeu_si512((void *)p0, f ? _mm512_min_epi8(_mm512_max_epi8(w, lo8), hi8) : w);
}

/* an operand's carry-form words of two vectors of 64 bytes (x0, x1: index h), each plane's tables loaded once for
 * both: r[h] and q[h], [0] of bytes 0-7 of each 128-bit lane, [1] of 8-15 */
static inline void carry_words(const uint8_t *t, __m512i x0, __m512i x1, __m512i r[2][2], __m512i q[2][2]) {
    const __mmask64 n0 = _mm512_movepi8_mask(x0), n1 = _mm512_movepi8_mask(x1);
    __m512i b[2][4];
    for (int k = 0; k < 4; k++) {
        const uint8_t *p = t + 256 * k;
        const __m512i t0 = _mm512_loadu_si512((const void *)p), t1 = _mm512_loadu_si512((const void *)(p + 64));
        const __m512i t2 = _mm512_loadu_si512((const void *)(p + 128)), t3 = _mm512_loadu_si512((const void *)(p + 192));
        b[0][k] = _mm512_mask_blend_epi8(n0, _mm512_permutex2var_epi8(t0, x0, t1), _mm512_permutex2var_epi8(t2, x0, t3));
        b[1][k] = _mm512_mask_blend_epi8(n1, _mm512_permutex2var_epi8(t0, x1, t1), _mm512_permutex2var_epi8(t2, x1, t3));
    }
    for (int h = 0; h < 2; h++) {
        r[h][0] = _mm512_unpacklo_epi8(b[h][0], b[h][1]), r[h][1] = _mm512_unpackhi_epi8(b[h][0], b[h][1]);
        q[h][0] = _mm512_unpacklo_epi8(b[h][2], b[h][3]), q[h][1] = _mm512_unpackhi_epi8(b[h][2], b[h][3]);
    }
}

/* 128 outputs of contiguous operands by the carry form, clamped to [lo8, hi8]; 0 (nothing stored) where some lane's
 * dropped low bits could move its carry */
static inline int carry128(uint8_t *p0, const uint8_t *p1, const uint8_t *p2, const add_tables *t, __m512i window,
                           __m512i lo8, __m512i hi8) {
    __m512i ra[2][2], qa[2][2], rb[2][2], qb[2][2], y[2][2];
    carry_words(t->carry[0], _mm512_loadu_si512((const void *)p1), _mm512_loadu_si512((const void *)(p1 + 64)), ra,
                 qa);
    carry_words(t->carry[4], _mm512_loadu_si512((const void *)p2), _mm512_loadu_si512((const void *)(p2 + 64)), rb,
                 qb);
    __mmask32 unsure = 0;
    for (int g = 0; g < 2; g++)
        for (int h = 0; h < 2; h++) {
            const __m512i sum = _mm512_add_epi16(ra[g][h], rb[g][h]);
            const __mmask32 carry = _mm512_cmplt_epu16_mask(sum, ra[g][h]);
            unsure |= _mm512_cmplt_epu16_mask(_mm512_add_epi16(sum, _mm512_set1_epi16(2)), window);
            const __m512i q = _mm512_add_epi16(qa[g][h], qb[g][h]);
            y[g][h] = _mm512_mask_add_epi16(q, carry, q, _mm512_set1_epi16(1));
        }
    if (unsure) return 0;
    for (int g = 0; g < 2; g++) {
        const __m512i w = _mm512_packs_epi16(y[g][0], y[g][1]);
        _mm512_storeu_si512((void *)(p0 + 64 * g), _mm512_min_epi8(_mm512_max_epi8(w, lo8), hi8));
    }
    return 1;
}

#endif

static inline void fast_row(uint8_t *p0, const uint8_t *p1, const uint8_t *p2, int32_t n, int32_t s0, int32_t s1,
                            int32_t s2, const mn_word *args, const int subtract) {
    /* prepare keeps every multiplier >= 0 and shift <= 0 (the lowering checks); the vector path needs shifts >= -31 */
    if (s0 != 1 || s1 != 1 || s2 != 1 || n < 8 || MN_I(SHIFT1) < -31 || MN_I(SHIFT2) < -31 || MN_I(SHIFT_OUT) < -31) {
        add_row(p0, p1, p2, n, s0, s1, s2, args, subtract);
        return;
    }
    const __m128i left = _mm_cvtsi32_si128(MN_I(LEFT_SHIFT));
    const __m256i off1 = _mm256_set1_epi32(MN_I(OFF1)), off2 = _mm256_set1_epi32(MN_I(OFF2));
    const mnh_rq8 r1 = rescaler(MN_I(MULT1), MN_I(SHIFT1)), r2 = rescaler(MN_I(MULT2), MN_I(SHIFT2));
    const int32_t zp = MN_I(OUT_ZP);
    const mnh_rq8 ro = mnh_rq8_uniform(MN_I(MULT_OUT), MN_I(SHIFT_OUT), zp, MN_I(ACT_MIN), MN_I(ACT_MAX));
    int32_t i = 0;
#if defined(__AVX512VBMI__) && defined(__AVX512BW__)
    const add_tables *t = n >= 64 ? operand_tables(args, subtract) : NULL;
    const int32_t lo = MN_I(ACT_MIN), hi = MN_I(ACT_MAX), e = -MN_I(SHIFT_OUT);
    const int bytes = lo >= -128 && lo <= hi && hi <= 127; /* the clamp on bytes */
    if (t && t->bound < (1 << 28) && e <= 20 && !t->window && MN_I(MULT_OUT) >= 0 && zp >= -128 && zp <= 127 &&
        bytes) {
        const int64_t add = (e ? (int64_t)1 << (e - 1) : 0) + (int64_t)zp * ((int64_t)1 << e);
        fold16 f;
        const uint32_t m2 = 2u * (uint32_t)MN_I(MULT_OUT);
        f.mult = _mm512_set1_epi32((int32_t)m2), f.corr = _mm512_set1_epi32((int32_t)(m2 + (e > 0)));
        f.k = _mm512_set1_epi64(((int64_t)1 << 31) + add * ((int64_t)1 << 32));
        f.right = _mm_cvtsi32_si128(e);
        const __m512i lo8 = _mm512_set1_epi8((char)lo), hi8 = _mm512_set1_epi8((char)hi);
        for (; i + 64 <= n; i += 64) out64(p0 + i, p1 + i, p2 + i, t->value[0], NULL, &f, lo8, hi8, subtract);
    } else if (t) {
        const int32_t mask = (int32_t)(((uint32_t)1 << e) - 1);
        out16 r16;
        r16.mult = _mm512_set1_epi32(MN_I(MULT_OUT)), r16.right = _mm_cvtsi32_si128(e);
        r16.mask = _mm512_set1_epi32(mask), r16.threshold = _mm512_set1_epi32(mask >> 1);
        r16.one = _mm512_set1_epi32(1), r16.zp = _mm512_set1_epi32(zp);
        r16.lo_zp = _mm512_set1_epi32(MN_I(ACT_MIN) - zp), r16.hi_zp = _mm512_set1_epi32(MN_I(ACT_MAX) - zp);
        const __m512i none = _mm512_setzero_si512();
        if (t->window && bytes) { /* the carry form by 128, the general rescaling where a lane is unsure and after */
            const __m512i window = _mm512_set1_epi16(t->window);
            const __m512i lo8 = _mm512_set1_epi8((char)lo), hi8 = _mm512_set1_epi8((char)hi);
            for (; i + 128 <= n; i += 128)
                if (!carry128(p0 + i, p1 + i, p2 + i, t, window, lo8, hi8))
                    for (int h = 0; h < 128; h += 64)
                        out64(p0 + i + h, p1 + i + h, p2 + i + h, t->value[0], &r16, NULL, none, none, subtract);
        }
        for (; i + 64 <= n; i += 64) out64(p0 + i, p1 + i, p2 + i, t->value[0], &r16, NULL, none, none, subtract);
    }
#endif
    for (; i + 8 <= n; i += 8) {
        const __m256i x1 = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(p1 + i)));
        const __m256i x2 = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(p2 + i)));
        const __m256i a = mnh_requant8r(_mm256_sll_epi32(_mm256_add_epi32(x1, off1), left), &r1);
        const __m256i b = mnh_requant8r(_mm256_sll_epi32(_mm256_add_epi32(x2, off2), left), &r2);
        const __m256i raw = subtract ? _mm256_sub_epi32(a, b) : _mm256_add_epi32(a, b);
        _mm_storel_epi64((__m128i *)(p0 + i), mnh_bytes8(mnh_requant8r(raw, &ro)));
    }
    if (i < n) add_row(p0 + i, p1 + i, p2 + i, n - i, 1, 1, 1, args, subtract);
}

static void fast_add_rows(uint8_t *p0, const uint8_t *p1, const uint8_t *p2, int32_t n, int32_t s0, int32_t s1,
                          int32_t s2, const mn_word *args) {
    fast_row(p0, p1, p2, n, s0, s1, s2, args, 0);
}

static void fast_sub_rows(uint8_t *p0, const uint8_t *p1, const uint8_t *p2, int32_t n, int32_t s0, int32_t s1,
                          int32_t s2, const mn_word *args) {
    fast_row(p0, p1, p2, n, s0, s1, s2, args, 1);
}

void mn_add_s8(const mn_word *args) {
    mn_walk(args, GEO, MN_P(uint8_t, OUT), MN_P(const uint8_t, IN1), MN_P(const uint8_t, IN2), fast_add_rows);
}

void mn_sub_s8(const mn_word *args) {
    mn_walk(args, GEO, MN_P(uint8_t, OUT), MN_P(const uint8_t, IN1), MN_P(const uint8_t, IN2), fast_sub_rows);
}
#else
void mn_add_s8(const mn_word *args) { mn_add_s8_portable(args); }
void mn_sub_s8(const mn_word *args) { mn_sub_s8_portable(args); }
#endif
