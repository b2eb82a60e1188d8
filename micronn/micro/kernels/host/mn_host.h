/* Helpers of the host ports (the C files of micronn/micro/kernels/host): the x86-64 AVX2 versions of the hot kernels that
 * NativeModel compiles in place of the portable ones (which stay the firmware's, and the ports' fallback).
 *
 * Every port gives the portable kernel's bytes: int32 sums wrap, so they may be taken in any order, and int8
 * products are summed with _mm256_madd_epi16 on int16 lanes (exact, never saturating). Requantization is
 * mn_requant_s8 eight lanes at a time, with the same 64-bit rounding.
 *
 * Weights are repacked once per call site and kept for the library's lifetime (mnh_cache, keyed by the call's
 * argument array): the lowering computed `bias_full` from the weights' values, so they are constants of the call.
 * Not thread-safe, like the generated model itself (NativeModel loads one library copy per instance).
 */
#ifndef MN_HOST_H
#define MN_HOST_H

#include "mn_elementwise.h"

/* The host-only batch loop's resets (host/svdf.c defines them; NativeModel's batch loop, generated with the epoch
 * only when every variable tensor is an int8 SVDF's state, uses them): instead of the model's init before each
 * sample, mnh_svdf_epoch++; each SVDF call site remembers the epoch it last saw, and the first call of a new one
 * takes its state as init leaves it (all 0) without reading it. mnh_svdf_tracks: 0 once some SVDF call runs
 * without that bookkeeping (the portable kernel), after which the loop calls init again (and still bumps). */
extern uint32_t mnh_svdf_epoch __attribute__((visibility("hidden")));
extern int32_t mnh_svdf_tracks __attribute__((visibility("hidden")));

#if defined(__x86_64__) && defined(__AVX2__) && !defined(MN_NO_HOST_PORTS)
#define MNH_AVX2 1
#include <immintrin.h>
#include <stdlib.h>

/* ---- a per-call-site cache of repacked constants --------------------------------------------------------- */

enum { MNH_SLOTS = 1024 };
typedef struct { const mn_word *key; void *value; } mnh_slot;
static mnh_slot mnh_table[MNH_SLOTS];

/* The value cached for `args`, or NULL; *slot is where to keep a new one (NULL: the table is full). */
static inline void *mnh_lookup(const mn_word *args, mnh_slot **slot) {
    size_t h = ((uintptr_t)args >> 3) * 0x9E3779B97F4A7C15ull >> 54; /* 10 bits */
    for (int i = 0; i < MNH_SLOTS; i++, h = (h + 1) & (MNH_SLOTS - 1)) {
        if (mnh_table[h].key == args) { *slot = &mnh_table[h]; return mnh_table[h].value; }
        if (mnh_table[h].key == NULL) { *slot = &mnh_table[h]; return NULL; }
    }
    *slot = NULL;
    return NULL;
}

/* zeroed memory for a cache entry; NULL when out of memory (the caller then runs the portable kernel) */
static inline void *mnh_alloc(size_t bytes) { return calloc(1, bytes ? bytes : 1); }

static inline void mnh_keep(mnh_slot *slot, const mn_word *args, void *value) {
    if (slot) slot->key = args, slot->value = value;
}

/* ---- float operations whose NaN is fixed ------------------------------------------------------------------
 * x86 gives the first source operand's NaN when both are NaN, but a compiler may swap the operands of a commutative
 * intrinsic. Where two NaNs can meet and the scalar code's order decides the result's sign, these keep `a` first. */
static inline __m256 mnh_mul_ps(__m256 a, __m256 b) {
    __m256 r;
    __asm__("vmulps %2, %1, %0" : "=x"(r) : "x"(a), "xm"(b));
    return r;
}

static inline __m256 mnh_add_ps(__m256 a, __m256 b) {
    __m256 r;
    __asm__("vaddps %2, %1, %0" : "=x"(r) : "x"(a), "xm"(b));
    return r;
}

/* whether any lane of the n sums is a NaN (the ports then sum again with mnh_add_ps/mnh_mul_ps) */
static inline int mnh_any_nan(const __m256 *acc, int n) { /* an unordered compare is true where either is a NaN */
    __m256 nan = _mm256_cmp_ps(acc[0], acc[n - 1], _CMP_UNORD_Q);
    for (int i = 1; i + 1 < n; i += 2) nan = _mm256_or_ps(nan, _mm256_cmp_ps(acc[i], acc[i + 1], _CMP_UNORD_Q));
    return _mm256_movemask_ps(nan) != 0;
}

/* ---- int8 weights as int16 pairs, eight output channels per vector ----------------------------------------
 * Rows (output channels) `rows` of `k` int8 weights, `stride` bytes apart, as blocks of 8 rows: per block and per
 * pair of inputs j, 16 int16 = (w[r][2j], w[r][2j+1]) for the block's 8 rows r; rows and inputs past the end are
 * 0. One broadcast int32 holding inputs (x[2j], x[2j+1]) as int16 then gives 8 rows' partial sums in one madd. */
static inline int mnh_pairs(int k) { return (k + 1) / 2; }
static inline int mnh_blocks8(int rows) { return (rows + 7) / 8; }

/* m blocks' sums over kp input pairs x (int16, read as int32 pairs) of weights packed as above, blocks kp * 16
 * int16 apart: acc[k] holds block k's 8 rows */
__attribute__((always_inline)) static inline void mnh_dots16(__m256i *acc, const int16_t *x, const int16_t *w, int kp,
                                                             const int m) {
    for (int k = 0; k < m; k++) acc[k] = _mm256_setzero_si256();
    const int32_t *xp = (const int32_t *)x;
    for (int j = 0; j < kp; j++) {
        const __m256i xv = _mm256_set1_epi32(xp[j]);
        for (int k = 0; k < m; k++)
            acc[k] = _mm256_add_epi32(acc[k], _mm256_madd_epi16(xv, _mm256_loadu_si256(
                                                  (const __m256i *)(w + ((size_t)k * kp + j) * 16))));
    }
}

__attribute__((unused)) static void mnh_pack_rows8(int16_t *dst, const int8_t *w, int rows, int k, size_t stride) {
    const int kp = mnh_pairs(k);
    for (int b = 0; b < mnh_blocks8(rows); b++)
        for (int r = 0; r < 8; r++) {
            const int row = 8 * b + r;
            if (row >= rows) continue;
            const int8_t *src = w + (size_t)row * stride;
            int16_t *d = dst + (size_t)b * kp * 16 + 2 * r;
            for (int i = 0; i < k; i++) d[(size_t)(i / 2) * 16 + (i & 1)] = src[i];
        }
}

/* n int8 values widened to int16 (n rounded up to even: the last one 0 when n is odd). */
static inline void mnh_widen(int16_t *dst, const int8_t *src, int n) {
    int i = 0;
    for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256((__m256i *)(dst + i), _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(src + i))));
    for (; i < n; i++) dst[i] = src[i];
    if (n & 1) dst[n] = 0;
}

/* mnh_widen where src + n may be followed by other readable bytes before `end`: a last partial 16 is widened
 * whole when it can be read, its extra lanes stored past dst + n (the caller leaves 16 int16 of room and
 * overwrites them or never reads them). */
static inline void mnh_widen_over(int16_t *dst, const int8_t *src, int n, const int8_t *end) {
    int i = 0;
    for (; i < n; i += 16) {
        if (src + i + 16 > end) { mnh_widen(dst + i, src + i, n - i); return; }
        _mm256_storeu_si256((__m256i *)(dst + i), _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(src + i))));
    }
    if (n & 1) dst[n] = 0;
}

/* n int8 values as uint8 u = x + 128 (the VNNI paths' unsigned operand): 64 at a time with AVX-512 BW and a masked
 * last step (nothing past dst + n written, nothing past src + n read), else 32 at a time, then one by one. */
static inline void mnh_flip(uint8_t *dst, const int8_t *src, size_t n) {
    size_t i = 0;
#if defined(__AVX512BW__)
    const __m512i top = _mm512_set1_epi8(-128);
    for (; i + 64 <= n; i += 64)
        _mm512_storeu_si512((void *)(dst + i), _mm512_xor_si512(_mm512_loadu_si512((const void *)(src + i)), top));
    if (i < n) {
        const __mmask64 k = ((__mmask64)1 << (n - i)) - 1;
        _mm512_mask_storeu_epi8(dst + i, k, _mm512_xor_si512(_mm512_maskz_loadu_epi8(k, src + i), top));
    }
#else
    const __m256i top = _mm256_set1_epi8(-128);
    for (; i + 32 <= n; i += 32)
        _mm256_storeu_si256((__m256i *)(dst + i),
                            _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(src + i)), top));
    for (; i < n; i++) dst[i] = (uint8_t)(src[i] ^ 0x80);
#endif
}

static inline void mnh_fill16(int16_t *dst, int16_t v, int n) {
    int i = 0;
    const __m256i vv = _mm256_set1_epi16(v);
    for (; i + 16 <= n; i += 16) _mm256_storeu_si256((__m256i *)(dst + i), vv);
    for (; i < n; i++) dst[i] = v;
}

/* ---- requantization ----------------------------------------------------------------------------------------
 * Per output channel: multiplier, left shift max(shift, 0), right shift max(-shift, 0), in arrays padded to whole
 * vectors. The vector path needs every multiplier >= 0 and |shift| <= 31 (true of QuantizeMultiplier's); else
 * the kernels requantize lane by lane with mn_requant_s8. */
typedef struct { int32_t *mult, *left, *right, *shift; int vec; } mnh_rq;

/* rq arrays for n channels (rounded up to `round`), from the call's multipliers and shifts. */
static inline int mnh_rq_init(mnh_rq *q, const int32_t *mult, const int32_t *shift, int n, int round) {
    const int m = (n + round - 1) / round * round;
    int32_t *buf = (int32_t *)mnh_alloc((size_t)4 * m * sizeof(int32_t));
    if (!buf) return 0;
    q->mult = buf, q->left = buf + m, q->right = buf + 2 * m, q->shift = buf + 3 * m, q->vec = 1;
    for (int i = 0; i < n; i++) {
        q->mult[i] = mult[i], q->shift[i] = shift[i];
        q->left[i] = shift[i] > 0 ? shift[i] : 0, q->right[i] = shift[i] < 0 ? -shift[i] : 0;
        if (mult[i] < 0 || shift[i] > 31 || shift[i] < -31) q->vec = 0;
    }
    return 1;
}

/* Eight sums requantized as mn_requant_s8 (multipliers >= 0): round(acc << left * mult / 2^31) with TFLM's
 * nudge (the 64-bit products of even and odd lanes, bits 31..62 of each), then the rounding right shift, then
 * zp added with the clamp to [lo, hi] (clamped to [lo - zp, hi - zp] first: the sum stays exact). */
static inline __m256i mnh_requant8(__m256i acc, const int32_t *mult, const int32_t *left, const int32_t *right,
                                   __m256i zp, __m256i lo_zp, __m256i hi_zp) {
    const __m256i m = _mm256_loadu_si256((const __m256i *)mult), e = _mm256_loadu_si256((const __m256i *)right);
    const __m256i x = _mm256_sllv_epi32(acc, _mm256_loadu_si256((const __m256i *)left));
    const __m256i nudge = _mm256_set1_epi64x((int64_t)1 << 30), one = _mm256_set1_epi32(1);
    const __m256i even = _mm256_add_epi64(_mm256_mul_epi32(x, m), nudge);
    const __m256i odd = _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(x, 32), _mm256_srli_epi64(m, 32)), nudge);
    const __m256i h = _mm256_blend_epi32(_mm256_srli_epi64(even, 31), _mm256_slli_epi64(odd, 1), 0xAA);
    const __m256i mask = _mm256_sub_epi32(_mm256_sllv_epi32(one, e), one);
    const __m256i threshold = _mm256_sub_epi32(_mm256_srai_epi32(mask, 1), _mm256_srai_epi32(h, 31));
    __m256i y = _mm256_sub_epi32(_mm256_srav_epi32(h, e), _mm256_cmpgt_epi32(_mm256_and_si256(h, mask), threshold));
    y = _mm256_min_epi32(_mm256_max_epi32(y, lo_zp), hi_zp);
    return _mm256_add_epi32(y, zp);
}

/* The low byte of each of 8 int32 lanes (already in int8 range), in order. */
static inline __m128i mnh_bytes8(__m256i y) {
    const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(y), _mm256_extracti128_si256(y, 1));
    return _mm_packs_epi16(w, w);
}

/* The requantization parameters of 8 channels, loaded once for several pixels. */
typedef struct { __m256i mult, left, right, zp, lo_zp, hi_zp; } mnh_rq8;

static inline mnh_rq8 mnh_rq8_load(const mnh_rq *q, int c, int32_t zp, int32_t lo, int32_t hi) {
    mnh_rq8 r;
    r.mult = _mm256_loadu_si256((const __m256i *)(q->mult + c));
    r.left = _mm256_loadu_si256((const __m256i *)(q->left + c));
    r.right = _mm256_loadu_si256((const __m256i *)(q->right + c));
    r.zp = _mm256_set1_epi32(zp), r.lo_zp = _mm256_set1_epi32(lo - zp), r.hi_zp = _mm256_set1_epi32(hi - zp);
    return r;
}

/* The same for one multiplier and shift in every lane (a per-tensor requantization; mn_mbqm's shifts). */
static inline mnh_rq8 mnh_rq8_uniform(int32_t mult, int32_t shift, int32_t zp, int32_t lo, int32_t hi) {
    mnh_rq8 r;
    r.mult = _mm256_set1_epi32(mult);
    r.left = _mm256_set1_epi32(shift > 0 ? shift : 0), r.right = _mm256_set1_epi32(shift < 0 ? -shift : 0);
    r.zp = _mm256_set1_epi32(zp), r.lo_zp = _mm256_set1_epi32(lo - zp), r.hi_zp = _mm256_set1_epi32(hi - zp);
    return r;
}

/* mnh_requant8 with the parameters in registers. */
static inline __m256i mnh_requant8r(__m256i acc, const mnh_rq8 *r) {
    const __m256i x = _mm256_sllv_epi32(acc, r->left), e = r->right, m = r->mult;
    const __m256i nudge = _mm256_set1_epi64x((int64_t)1 << 30), one = _mm256_set1_epi32(1);
    const __m256i even = _mm256_add_epi64(_mm256_mul_epi32(x, m), nudge);
    const __m256i odd = _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(x, 32), _mm256_srli_epi64(m, 32)), nudge);
    const __m256i h = _mm256_blend_epi32(_mm256_srli_epi64(even, 31), _mm256_slli_epi64(odd, 1), 0xAA);
    const __m256i mask = _mm256_sub_epi32(_mm256_sllv_epi32(one, e), one);
    const __m256i threshold = _mm256_sub_epi32(_mm256_srai_epi32(mask, 1), _mm256_srai_epi32(h, 31));
    __m256i y = _mm256_sub_epi32(_mm256_srav_epi32(h, e), _mm256_cmpgt_epi32(_mm256_and_si256(h, mask), threshold));
    y = _mm256_min_epi32(_mm256_max_epi32(y, r->lo_zp), r->hi_zp);
    return _mm256_add_epi32(y, r->zp);
}

/* m pixels' 8 channels (acc[i], outputs `stride` bytes apart, n <= 8 channels each) requantized and stored. */
__attribute__((always_inline)) static inline void mnh_store8xm(int8_t *out, size_t stride, int m, int n, const __m256i *acc, int acc_stride,
                                const mnh_rq *q, int c, int32_t zp, int32_t lo, int32_t hi) {
    if (!q->vec) {
        for (int i = 0; i < m; i++) {
            int32_t a[8];
            _mm256_storeu_si256((__m256i *)a, acc[i * acc_stride]);
            for (int j = 0; j < n; j++) out[i * stride + j] = mn_requant_s8(a[j], q->mult[c + j], q->shift[c + j], zp,
                                                                             lo, hi);
        }
        return;
    }
    const mnh_rq8 r = mnh_rq8_load(q, c, zp, lo, hi);
    for (int i = 0; i < m; i++) {
        const __m128i b = mnh_bytes8(mnh_requant8r(acc[i * acc_stride], &r));
        if (n == 8) {
            _mm_storel_epi64((__m128i *)(out + i * stride), b);
        } else {
            int8_t tmp[16];
            _mm_storeu_si128((__m128i *)tmp, b);
            for (int j = 0; j < n; j++) out[i * stride + j] = tmp[j];
        }
    }
}

/* out[0..n) (n <= 8) = the requantized acc of channels c..c+n of q. */
static inline void mnh_store8(int8_t *out, int n, __m256i acc, const mnh_rq *q, int c, int32_t zp, int32_t lo,
                              int32_t hi) {
    if (q->vec) {
        const __m128i b = mnh_bytes8(mnh_requant8(acc, q->mult + c, q->left + c, q->right + c, _mm256_set1_epi32(zp),
                                                  _mm256_set1_epi32(lo - zp), _mm256_set1_epi32(hi - zp)));
        if (n == 8) { _mm_storel_epi64((__m128i *)out, b); return; }
        int8_t tmp[16];
        _mm_storeu_si128((__m128i *)tmp, b);
        memcpy(out, tmp, (size_t)n);
        return;
    }
    int32_t a[8];
    _mm256_storeu_si256((__m256i *)a, acc);
    for (int i = 0; i < n; i++) out[i] = mn_requant_s8(a[i], q->mult[c + i], q->shift[c + i], zp, lo, hi);
}


/* ---- requantization in fewer operations, where the sums are bounded --------------------------------------------
 * For |acc << left| < 2^28 and right shifts e <= 20 (checked per call site by mnh_fq_init), mn_requant_s8's
 * result is, with h = floor(((acc << left) * mult + 2^30) / 2^31) (TFLM's doubling high multiply, whose nudge for a
 * negative product gives the same value), y = floor((h + half - [h < 0 and e > 0] + zp * 2^e) / 2^e) clamped to
 * [lo, hi], half = 2^(e-1) (0 when e = 0): TFLM's rounding division rounds half away from zero, which is rounding
 * half up less one unit before the division for negative h, and zp * 2^e added before a floor division by 2^e
 * adds zp after it. Every int32 sum stays below 2^28 + 2^19 + 2^27 in magnitude: nothing wraps. */
typedef struct {
    int32_t *mult, *mult_odd, *left, *right, *add, *neg; /* neg: -1 where e > 0, else 0 */
    int any_left, any_e0, ok;
} mnh_fq;

/* fq arrays for n channels (padded to whole vectors of `round`); ok = 0 where the fast form does not hold for
 * sums bounded by bound[c] in magnitude (bound as int64), or for out of range parameters. */
static inline int mnh_fq_init(mnh_fq *q, const int32_t *mult, const int32_t *shift, const int64_t *bound, int32_t zp,
                              int n, int round) {
    const int m = (n + round - 1) / round * round;
    int32_t *buf = (int32_t *)mnh_alloc((size_t)6 * m * sizeof(int32_t));
    if (!buf) return 0;
    q->mult = buf, q->mult_odd = buf + m, q->left = buf + 2 * m, q->right = buf + 3 * m, q->add = buf + 4 * m;
    q->neg = buf + 5 * m, q->any_left = 0, q->any_e0 = 0, q->ok = zp >= -128 && zp <= 127;
    for (int i = 0; i < n; i++) {
        const int left = shift[i] > 0 ? shift[i] : 0, e = shift[i] < 0 ? -shift[i] : 0;
        if (mult[i] < 0 || left > 31 || e > 20 || bound[i] >= ((int64_t)1 << 28) >> left) { q->ok = 0; continue; }
        q->mult[i] = mult[i], q->left[i] = left, q->right[i] = e;
        q->add[i] = (e ? 1 << (e - 1) : 0) + zp * (1 << e), q->neg[i] = e ? -1 : 0;
        q->any_left |= left > 0, q->any_e0 |= e == 0;
    }
    for (int i = 0; i < m; i++) q->mult_odd[i] = i % 2 == 0 && i + 1 < n ? q->mult[i + 1] : 0;
    for (int i = n; i < m; i++) q->add[i] = zp; /* padding lanes: 0 * anything, + zp */
    return 1;
}

typedef struct { __m256i mult, mult_odd, left, right, add, neg, lo, hi; } mnh_fq8;

static inline mnh_fq8 mnh_fq8_load(const mnh_fq *q, int c, int32_t lo, int32_t hi) {
    mnh_fq8 r;
    r.mult = _mm256_loadu_si256((const __m256i *)(q->mult + c));
    r.mult_odd = _mm256_loadu_si256((const __m256i *)(q->mult_odd + c));
    r.left = _mm256_loadu_si256((const __m256i *)(q->left + c));
    r.right = _mm256_loadu_si256((const __m256i *)(q->right + c));
    r.add = _mm256_loadu_si256((const __m256i *)(q->add + c));
    r.neg = _mm256_loadu_si256((const __m256i *)(q->neg + c));
    r.lo = _mm256_set1_epi32(lo), r.hi = _mm256_set1_epi32(hi);
    return r;
}

/* Eight sums requantized (with zp, clamped): mn_requant_s8's values under mnh_fq's conditions. LEFT / E0: some
 * channel of the call has a left shift / no right shift (compile-time constants at the call, 0 skips the work). */
__attribute__((always_inline)) static inline __m256i mnh_fq8_apply(__m256i acc, const mnh_fq8 *r, int left, int e0) {
    const __m256i x = left ? _mm256_sllv_epi32(acc, r->left) : acc, nudge = _mm256_set1_epi64x((int64_t)1 << 30);
    const __m256i even = _mm256_add_epi64(_mm256_mul_epi32(x, r->mult), nudge);
    const __m256i odd = _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(x, 32), r->mult_odd), nudge);
    const __m256i h = _mm256_blend_epi32(_mm256_srli_epi64(even, 31), _mm256_slli_epi64(odd, 1), 0xAA);
    __m256i s = _mm256_srai_epi32(h, 31);
    if (e0) s = _mm256_and_si256(s, r->neg);
    const __m256i y = _mm256_srav_epi32(_mm256_add_epi32(_mm256_add_epi32(h, r->add), s), r->right);
    return _mm256_min_epi32(_mm256_max_epi32(y, r->lo), r->hi);
}

/* ---- mnh_fq's requantization in fewer operations still: the zero point and rounding constant inside the product --
 * Under mnh_fq's conditions (x = acc << left, |x| < 2^28, e <= 20): h + add (mnh_fq's h and add) is the high word of
 * the 64-bit P + k, P = x * m2 with m2 = 2 * mult (< 2^32) and k = 2^31 + add * 2^32 (floor((2 x mult + 2^31) /
 * 2^32) = h, add an integer). TFLM's unit off a negative h (where e > 0) is taken off wherever x < 0: there h <= 0,
 * and for h = 0 the unit changes nothing, floor((half - 1) / 2^e) = floor(half / 2^e) = 0. The product is taken
 * unsigned (vpmuludq: m2 needs 32 bits), of x + 2^32 where x < 0, which adds m2 * 2^32 to P: the high word is then
 * m2 too large there, taken off with the unit as one subtraction of corr = m2 + [e > 0] where x < 0. The result is
 * floor((h + add - [x < 0 and e > 0]) / 2^e), zp included and not clamped: the caller clamps (a saturating pack to
 * int8 then [lo, hi] on the bytes is the same clamp). */
typedef struct {
    int32_t *mult, *mult_odd, *left, *right, *corr; /* m2 (as uint32 bits); mult_odd: channel 2i + 1's in lane 2i */
    int64_t *k_even, *k_odd;                        /* per lane pair: 2^31 + add * 2^32 of its even / odd channel */
} mnh_fr;

/* fr arrays for n channels (padded to whole vectors of `round`, round even) from fq arrays accepted by mnh_fq_init
 * (fq->ok) for the same channels. */
static inline int mnh_fr_init(mnh_fr *r, const mnh_fq *q, int n, int round) {
    const int m = (n + round - 1) / round * round;
    int32_t *buf = (int32_t *)mnh_alloc((size_t)5 * m * sizeof(int32_t));
    int64_t *k = (int64_t *)mnh_alloc((size_t)m * sizeof(int64_t));
    if (!buf || !k) return 0;
    r->mult = buf, r->mult_odd = buf + m, r->left = buf + 2 * m, r->right = buf + 3 * m, r->corr = buf + 4 * m;
    r->k_even = k, r->k_odd = k + m / 2;
    for (int i = 0; i < m; i++) {
        const int64_t add = i < n ? q->add[i] : 0; /* padding lanes: mult 0, never stored */
        const uint32_t m2 = i < n ? 2u * (uint32_t)q->mult[i] : 0, m2_odd = 2u * (uint32_t)q->mult_odd[i];
        const int right = i < n ? q->right[i] : 0;
        r->mult[i] = (int32_t)m2, r->mult_odd[i] = (int32_t)m2_odd, r->left[i] = i < n ? q->left[i] : 0;
        r->right[i] = right, r->corr[i] = (int32_t)(m2 + (right > 0));
        (i % 2 ? r->k_odd : r->k_even)[i / 2] = ((int64_t)1 << 31) + (int64_t)((uint64_t)add << 32);
    }
    return 1;
}

typedef struct { __m256i mult, mult_odd, left, right, corr, k_even, k_odd; } mnh_fr8;

static inline mnh_fr8 mnh_fr8_load(const mnh_fr *r, int c) {
    mnh_fr8 v;
    v.mult = _mm256_loadu_si256((const __m256i *)(r->mult + c));
    v.mult_odd = _mm256_loadu_si256((const __m256i *)(r->mult_odd + c));
    v.left = _mm256_loadu_si256((const __m256i *)(r->left + c));
    v.right = _mm256_loadu_si256((const __m256i *)(r->right + c));
    v.corr = _mm256_loadu_si256((const __m256i *)(r->corr + c));
    v.k_even = _mm256_loadu_si256((const __m256i *)(r->k_even + c / 2));
    v.k_odd = _mm256_loadu_si256((const __m256i *)(r->k_odd + c / 2));
    return v;
}

/* Channel c's parameters in all eight lanes (eight sums of the one channel). */
static inline mnh_fr8 mnh_fr8_channel(const mnh_fr *r, int c) {
    mnh_fr8 v;
    v.mult = v.mult_odd = _mm256_set1_epi32(r->mult[c]), v.left = _mm256_set1_epi32(r->left[c]);
    v.right = _mm256_set1_epi32(r->right[c]), v.corr = _mm256_set1_epi32(r->corr[c]);
    v.k_even = v.k_odd = _mm256_set1_epi64x((c % 2 ? r->k_odd : r->k_even)[c / 2]);
    return v;
}

/* Eight sums requantized with zp, not clamped (see mnh_fr). LEFT: some channel of the call has a left shift;
 * ABOVE: the call's outputs are clamped at or above its zero point (as after a ReLU), where a negative sum's output,
 * zp or less, clamps to the same byte as a zero sum's, zp: the sums are taken as max(acc, 0), which needs no
 * correction (compile-time constants at the call). */
__attribute__((always_inline)) static inline __m256i mnh_fr8_apply_as(__m256i acc, const mnh_fr8 *r, int left,
                                                                      int above) {
    const __m256i a = above ? _mm256_max_epi32(acc, _mm256_setzero_si256()) : acc;
    const __m256i x = left ? _mm256_sllv_epi32(a, r->left) : a;
    const __m256i even = _mm256_add_epi64(_mm256_mul_epu32(x, r->mult), r->k_even);
    const __m256i odd = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(x, 32), r->mult_odd), r->k_odd);
#if defined(__AVX512VL__) && defined(__AVX512DQ__)
    const __m256i h = _mm256_mask_shuffle_epi32(odd, 0x55, even, _MM_PERM_DDBB); /* the high words */
    const __m256i y = above ? h : _mm256_mask_sub_epi32(h, _mm256_movepi32_mask(x), h, r->corr);
#else
    const __m256i h = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
    const __m256i y = above ? h : _mm256_sub_epi32(h, _mm256_and_si256(_mm256_srai_epi32(x, 31), r->corr));
#endif
    return _mm256_srav_epi32(y, r->right);
}

__attribute__((always_inline)) static inline __m256i mnh_fr8_apply(__m256i acc, const mnh_fr8 *r, int left) {
    return mnh_fr8_apply_as(acc, r, left, 0);
}

/* ---- int32 elementwise rows (mn_elementwise.h's walk) ------------------------------------------------------ */

/* A row function for mn_walk: a row whose output and first input advance one int32 per element and whose second
 * input does too or is broadcast (stride 0) runs eight lanes at a time through VEC(a, b, w); other rows, and a
 * row's last n % 8 elements, through the portable ROW, called out of line (the common whole-vector row then saves
 * no registers). The two cases are separate loops, a broadcast second input read once, and VEC reads the call's
 * scalars from w, a local copy of the first argument words, so the compiler loads them once per row instead of
 * again after every store (which it must assume may change args). Each group of eight is read before it is
 * written, so an output placed exactly over an input (the planner's in-place sharing, which needs the same shape:
 * never a broadcast input) is fine, as in the portable loop. */
#define MNH_ROW_WORDS 8 /* fewer than the words of any elementwise call (its walk geometry alone has 24) */
#define MNH_ROWS_S32(name, row, vec)                                                                           \
    __attribute__((noinline)) static void name##_rest(uint8_t *p0, const uint8_t *p1, const uint8_t *p2,      \
                                                      int32_t n, int32_t s0, int32_t s1, int32_t s2,          \
                                                      const mn_word *args) {                                  \
        row(p0, p1, p2, n, s0, s1, s2, args);                                                                  \
    }                                                                                                          \
    static void name(uint8_t *p0, const uint8_t *p1, const uint8_t *p2, int32_t n, int32_t s0, int32_t s1,    \
                     int32_t s2, const mn_word *args) {                                                        \
        int32_t i = 0;                                                                                         \
        if (s0 == 4 && s1 == 4 && (s2 == 4 || s2 == 0) && n >= 8) {                                            \
            mn_word w[MNH_ROW_WORDS];                                                                          \
            memcpy(w, args, sizeof w);                                                                         \
            if (s2 == 0) {                                                                                     \
                const __m256i b = _mm256_set1_epi32(*(const int32_t *)p2);                                     \
                for (; i + 8 <= n; i += 8) {                                                                   \
                    const __m256i a = _mm256_loadu_si256((const __m256i *)(p1 + 4 * (size_t)i));               \
                    _mm256_storeu_si256((__m256i *)(p0 + 4 * (size_t)i), vec(a, b, w));                       \
                }                                                                                              \
            } else {                                                                                           \
                for (; i + 8 <= n; i += 8) {                                                                   \
                    const __m256i a = _mm256_loadu_si256((const __m256i *)(p1 + 4 * (size_t)i));               \
                    const __m256i b = _mm256_loadu_si256((const __m256i *)(p2 + 4 * (size_t)i));               \
                    _mm256_storeu_si256((__m256i *)(p0 + 4 * (size_t)i), vec(a, b, w));                       \
                }                                                                                              \
            }                                                                                                  \
        }                                                                                                      \
        if (i < n) name##_rest(p0 + 4 * (size_t)i, p1 + 4 * (size_t)i, p2 + (size_t)s2 * i, n - i, s0, s1, s2,  \
                               args);                                                                          \
    }

/* mn_walk, with the common case first: a walk whose outer dimensions are all 1 (an elementwise op the lowering merged
 * into one row) is one call of `row`, without the odometer, whose registers and stack the general walk (kept out of
 * line) would otherwise make every call save and restore. */
__attribute__((noinline, unused)) static void mnh_walk_all(const mn_word *args, int geo, uint8_t *p0,
                                                           const uint8_t *p1, const uint8_t *p2, mn_row_fn *row) {
    mn_walk(args, geo, p0, p1, p2, row);
}

static inline void mnh_walk(const mn_word *args, int geo, uint8_t *p0, const uint8_t *p1, const uint8_t *p2,
                            mn_row_fn *row) {
    const mn_word *size = args + geo;
    int one = 1;
    for (int d = 0; d < MN_WALK_DIMS - 1; d++) one &= (int32_t)size[d] == 1;
    const mn_word *in = size + MN_WALK_DIMS - 1;
    if (one && (int32_t)in[0] > 0)
        row(p0, p1, p2, (int32_t)in[0], (int32_t)in[MN_WALK_DIMS], (int32_t)in[2 * MN_WALK_DIMS],
            (int32_t)in[3 * MN_WALK_DIMS], args);
    else
        mnh_walk_all(args, geo, p0, p1, p2, row);
}

/* Clamped to [lo, hi] lane by lane, as mn_clamp. */
static inline __m256i mnh_clamp32(__m256i x, int32_t lo, int32_t hi) {
    return _mm256_min_epi32(_mm256_max_epi32(x, _mm256_set1_epi32(lo)), _mm256_set1_epi32(hi));
}

/* C's a / d in eight int32 lanes for one divisor d (neither 0 nor -1): |a| times the magic number m of v = |d|,
 * shifted right by 31 + l, the sign put back (the proof is in host/div_s32.c's header). */
typedef struct { __m256i m, d; __m128i shift; } mnh_div_magic;

static inline mnh_div_magic mnh_magic_of(int32_t d) {
    const uint32_t v = d < 0 ? 0u - (uint32_t)d : (uint32_t)d;
    const int l = v == 1 ? 0 : 32 - __builtin_clz(v - 1);
    const uint64_t m = (((uint64_t)1 << (31 + l)) + v - 1) / v;
    mnh_div_magic g;
    g.m = _mm256_set1_epi32((int32_t)(uint32_t)m), g.d = _mm256_set1_epi32(d), g.shift = _mm_cvtsi32_si128(31 + l);
    return g;
}

/* ---- uint32 lanes (the signal kernels) ---------------------------------------------------------------------- */

/* The low 32 bits of (a * b) >> sh for eight uint32 pairs, the products exact in 64 bits (sh 0..63). */
static inline __m256i mnh_mul_shift_epu32(__m256i a, __m256i b, __m128i sh) {
    const __m256i even = _mm256_srl_epi64(_mm256_mul_epu32(a, b), sh);
    const __m256i odd = _mm256_srl_epi64(_mm256_mul_epu32(_mm256_srli_epi64(a, 32), _mm256_srli_epi64(b, 32)), sh);
    return _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
}

static inline __m256i mnh_div_magic8(__m256i a, const mnh_div_magic *g) {
    const __m256i q = mnh_mul_shift_epu32(_mm256_abs_epi32(a), g->m, g->shift); /* |a| / |d| */
    const __m256i neg = _mm256_srai_epi32(_mm256_xor_si256(a, g->d), 31);    /* -1 where the signs differ */
    return _mm256_sub_epi32(_mm256_xor_si256(q, neg), neg);
}

/* The position of the leading one of each uint32 lane of v (v = 0 gives a negative value), and in *bits the float
 * bits of v, or of v >> 8 when v >= 2^24: below 2^24 the conversion is exact, so the exponent field less 127 (plus
 * 8 for the shifted case) is the position, and the mantissa holds the bits below the leading one, at least 16 of
 * them when v >= 2^24 (v's own, shifted up with zeros, when smaller). */
static inline __m256i mnh_leading_one(__m256i v, __m256i *bits) {
    const __m256i big = _mm256_cmpeq_epi32(_mm256_max_epu32(v, _mm256_set1_epi32(1 << 24)), v); /* v >= 2^24 */
    *bits = _mm256_castps_si256(_mm256_cvtepi32_ps(_mm256_blendv_epi8(v, _mm256_srli_epi32(v, 8), big)));
    return _mm256_add_epi32(_mm256_sub_epi32(_mm256_srli_epi32(*bits, 23), _mm256_set1_epi32(127)),
                            _mm256_and_si256(big, _mm256_set1_epi32(8)));
}

#endif /* AVX2 */
#endif /* MN_HOST_H */
