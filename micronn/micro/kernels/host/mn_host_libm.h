/* mn_libm.h's expf, tanhf and TFLM's float sigmoid over whole arrays (mnh_expf_n, mnh_sigmoid_n, mnh_tanhf_n), bit
 * for bit the scalar functions' results (which are glibc's): the same operations in the same order, each rounded
 * once, every branch computed and the lane's own selected.
 *  - With AVX-512 (F, DQ) and FMA: 16 lanes at a time. expf is glibc's FMA build's (the one glibc runs on such a
 *    core): its five fused multiply-adds (the rounding shift, the reduction, three steps of the polynomial) fused
 *    here too, the 32-entry table read by two permutes; tanhf's expm1f computes only the reconstructions tanhf's
 *    two argument ranges reach.
 *  - Else (AVX2): 8 lanes at a time, no FMA: the reduction's fused product emulated by a split constant, the
 *    rest unfused (which rounds to the same floats on every input).
 * Lanes outside the vector paths' domains (for expf |x| >= 88, infinities and NaN; for tanhf |x| < 2^-26 and
 * non-finite) are recomputed with the scalar function, so every float input gives the scalar bits: checked on all
 * 2^32 inputs for both widths (see tests/export/test_native_ports_f32.py for the sampled test and the exhaustive
 * check).
 */
#ifndef MN_HOST_LIBM_H
#define MN_HOST_LIBM_H

#include "mn_libm.h"
#include "mn_host.h"

#if defined(MNH_AVX2)

/* the scalar functions, for the lanes the vector paths leave to them */
__attribute__((unused)) static float mnh_libm_expf(float x) { return mn_libm_expf(x); }
__attribute__((unused)) static float mnh_libm_sigmoid(float x) { return mn_libm_sigmoid(x); }
__attribute__((unused)) static float mnh_libm_tanhf(float x) { return mn_libm_tanhf(x); }

/* fdlibm expm1f's rational correction of a reduced x at width W (256, 512; V its float vector): *hxs_out =
 * x (x / 2), returns e = hxs (r1 - t) / (6 - x t), r1 the polynomial in hxs, t = 3 - r1 x / 2 */
#define MNH_EXPM1F_E(W, V)                                                                                         \
    __attribute__((always_inline)) static inline V mnh_expm1f_e##W(V x, V *hxs_out) {                              \
        const V half_x = _mm##W##_mul_ps(_mm##W##_set1_ps(0.5f), x);                                               \
        const V hxs = _mm##W##_mul_ps(x, half_x);                                                                  \
        V p = _mm##W##_mul_ps(hxs, _mm##W##_set1_ps(-2.0109921195e-07f));                                          \
        p = _mm##W##_add_ps(_mm##W##_set1_ps(4.0082177293e-06f), p);                                               \
        p = _mm##W##_mul_ps(hxs, p);                                                                               \
        p = _mm##W##_add_ps(_mm##W##_set1_ps(-7.9365076090e-05f), p);                                              \
        p = _mm##W##_mul_ps(hxs, p);                                                                               \
        p = _mm##W##_add_ps(_mm##W##_set1_ps(1.5873016091e-03f), p);                                               \
        p = _mm##W##_mul_ps(hxs, p);                                                                               \
        p = _mm##W##_add_ps(_mm##W##_set1_ps(-3.3333335072e-02f), p);                                              \
        p = _mm##W##_mul_ps(hxs, p);                                                                               \
        const V r1 = _mm##W##_add_ps(_mm##W##_set1_ps(1.0f), p);                                                   \
        const V t = _mm##W##_sub_ps(_mm##W##_set1_ps(3.0f), _mm##W##_mul_ps(r1, half_x));                          \
        const V denominator = _mm##W##_sub_ps(_mm##W##_set1_ps(6.0f), _mm##W##_mul_ps(x, t));                      \
        *hxs_out = hxs;                                                                                            \
        return _mm##W##_mul_ps(hxs, _mm##W##_div_ps(_mm##W##_sub_ps(r1, t), denominator));                         \
    }

/* ---- 16 lanes (AVX-512 F and DQ, FMA) ------------------------------------------------------------------------ */
#if defined(__AVX512F__) && defined(__AVX512DQ__) && defined(__FMA__)
#define MNH_LIBM16 1

typedef struct { __m512d t[4]; } mnh_exp_tab;

/* the table as four vectors, each entry less j << 47 (so the scale is the entry plus k << 47) */
__attribute__((always_inline)) static inline mnh_exp_tab mnh_exp_table(void) {
    mnh_exp_tab tab;
    const __m512i j = _mm512_slli_epi64(_mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7), 47);
    for (int q = 0; q < 4; q++)
        tab.t[q] = _mm512_castsi512_pd(_mm512_sub_epi64(_mm512_loadu_si512(mn_libm_two_j() + 8 * q),
                                                        _mm512_add_epi64(j, _mm512_set1_epi64((long long)q << 50))));
    return tab;
}

/* glibc's expf as its FMA build computes it, 8 lanes in double; lanes in the normal path (|x| < 88) */
__attribute__((always_inline)) static inline __m256 mnh_expf8_fma(__m256 x, const mnh_exp_tab *tab) {
    const __m512d xd = _mm512_cvtps_pd(x);
    const __m512d shift = _mm512_set1_pd(0x1.8p+52), inv = _mm512_set1_pd(0x1.71547652b82fep+5);
    __m512d kd = _mm512_fmadd_pd(xd, inv, shift);
    const __m512i ki = _mm512_castpd_si512(kd);
    kd = _mm512_sub_pd(kd, shift);
    const __m512d r = _mm512_fmsub_pd(xd, inv, kd);
    const __m512d lo = _mm512_permutex2var_pd(tab->t[0], ki, tab->t[1]);
    const __m512d hi = _mm512_permutex2var_pd(tab->t[2], ki, tab->t[3]);
    const __m512d t = _mm512_mask_blend_pd(_mm512_test_epi64_mask(ki, _mm512_set1_epi64(16)), lo, hi);
    const __m512d s = _mm512_castsi512_pd(_mm512_add_epi64(_mm512_castpd_si512(t), _mm512_slli_epi64(ki, 47)));
    const __m512d z = _mm512_fmadd_pd(_mm512_set1_pd(0x1.c6af84b912394p-20), r, _mm512_set1_pd(0x1.ebfce50fac4f3p-13));
    const __m512d r2 = _mm512_mul_pd(r, r);
    __m512d y = _mm512_fmadd_pd(_mm512_set1_pd(0x1.62e42ff0c52d6p-6), r, _mm512_set1_pd(1.0));
    y = _mm512_fmadd_pd(z, r2, y);
    return _mm512_cvtpd_ps(_mm512_mul_pd(y, s));
}

__attribute__((always_inline)) static inline __m512 mnh_expf16_normal(__m512 x, const mnh_exp_tab *tab) {
    const __m256 lo = mnh_expf8_fma(_mm512_castps512_ps256(x), tab);
    const __m256 hi = mnh_expf8_fma(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)), tab);
    return _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1);
}

static inline __mmask16 mnh_expf16_rare(__m512 x) {
    const __m512i mag = _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x7fffffff));
    return _mm512_cmpgt_epi32_mask(mag, _mm512_set1_epi32(0x42afffff));
}

__attribute__((always_inline)) static inline __m512 mnh_sigmoid16_core(__m512 x, __mmask16 *rare,
                                                                       const mnh_exp_tab *tab) {
    const __m512 one = _mm512_set1_ps(1.0f);
    const __mmask16 big = _mm512_cmp_ps_mask(x, _mm512_set1_ps(16.619047164916992188f), _CMP_GT_OQ);
    const __mmask16 small = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-9.0f), _CMP_LT_OQ);
    /* -x, x below -9, 0 above 16.6 */
    const __m512 neg = _mm512_mask_xor_ps(x, (__mmask16)~small, x, _mm512_set1_ps(-0.0f));
    const __m512 a = _mm512_maskz_mov_ps((__mmask16)~big, neg);
    *rare = mnh_expf16_rare(a);
    const __m512 e = mnh_expf16_normal(a, tab);
    __m512 y = _mm512_div_ps(one, _mm512_add_ps(one, e));
    y = _mm512_mask_mov_ps(y, small, e);
    return _mm512_mask_mov_ps(y, big, one);
}

MNH_EXPM1F_E(512, __m512)

/* tanhf's expm1f(2|x|) (|x| >= 1, `large`) or expm1f(-2|x|) (|x| < 1), `a` = 2|x|: fdlibm's float reductions and
 * reconstructions for the k each domain reaches (large: k >= 3; small: k = 0, -1, -2 or -3). Lanes with
 * k > 56 take the 23 <= k <= 56 form: tanhf rounds either to 1. */
__attribute__((always_inline)) static inline __m512 mnh_tanh_expm1f16(__m512 a, __mmask16 large) {
    const __m512 ln2_hi = _mm512_set1_ps(6.9313812256e-01f), ln2_lo = _mm512_set1_ps(9.0580006145e-06f);
    const __m512 half = _mm512_set1_ps(0.5f), one = _mm512_set1_ps(1.0f);
    const __m512i abits = _mm512_castps_si512(a);
    const __mmask16 small = (__mmask16)~large;
    const __m512 x0 = _mm512_mask_xor_ps(a, small, a, _mm512_set1_ps(-0.0f)); /* the argument */
    const __mmask16 reduce = large | _mm512_cmpgt_epi32_mask(abits, _mm512_set1_epi32(0x3eb17218));
    const __mmask16 near = _mm512_mask_cmplt_epi32_mask(small, abits, _mm512_set1_epi32(0x3f851592)); /* k = -1 */
    const __m512 rnd = _mm512_mask_blend_ps(large, _mm512_set1_ps(-0.5f), half);
    const __m512i kn = _mm512_cvttps_epi32(_mm512_add_ps(_mm512_mul_ps(_mm512_set1_ps(1.4426950216e+00f), x0), rnd));
    const __m512 kf = _mm512_cvtepi32_ps(kn);
    const __m512 hi = _mm512_mask_add_ps(_mm512_sub_ps(x0, _mm512_mul_ps(kf, ln2_hi)), near, x0, ln2_hi);
    const __m512 lo = _mm512_mask_mov_ps(_mm512_mul_ps(kf, ln2_lo), near, _mm512_set1_ps(-9.0580006145e-06f));
    const __m512i k = _mm512_maskz_mov_epi32(reduce, _mm512_mask_mov_epi32(kn, near, _mm512_set1_epi32(-1)));
    const __m512 xr = _mm512_sub_ps(hi, lo);
    const __m512 c = _mm512_maskz_sub_ps(reduce, _mm512_sub_ps(hi, xr), lo);
    const __m512 x = _mm512_mask_mov_ps(x0, reduce, xr);

    __m512 hxs;
    const __m512 e = mnh_expm1f_e512(x, &hxs);

    const __m512 y0 = _mm512_sub_ps(x, _mm512_sub_ps(_mm512_mul_ps(x, e), hxs)); /* k = 0 */
    const __m512 e2 = _mm512_sub_ps(_mm512_sub_ps(_mm512_mul_ps(x, _mm512_sub_ps(e, c)), c), hxs);
    const __m512 ym1 = _mm512_sub_ps(_mm512_mul_ps(half, _mm512_sub_ps(x, e2)), half); /* k = -1 */
    const __m512i k23 = _mm512_slli_epi32(k, 23);
    const __m512 d = _mm512_sub_ps(e2, x);
    /* k = -2, -3: (1 - (e - x)) 2^k - 1 */
    const __m512i scaled = _mm512_add_epi32(_mm512_castps_si512(_mm512_sub_ps(one, d)), k23);
    const __m512 yf = _mm512_sub_ps(_mm512_castsi512_ps(scaled), one);
    /* 3 <= k < 23: ((1 - 2^-k) - (e - x)) 2^k */
    const __m512 one_minus = _mm512_castsi512_ps(_mm512_sub_epi32(
        _mm512_set1_epi32(0x3f800000), _mm512_srlv_epi32(_mm512_set1_epi32(0x1000000), k)));
    const __m512 ys = _mm512_sub_ps(one_minus, d);
    /* k >= 23: ((x - (e + 2^-k)) + 1) 2^k */
    const __m512 two_minus_k = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_sub_epi32(_mm512_set1_epi32(0x7f), k), 23));
    const __m512 yl = _mm512_add_ps(_mm512_sub_ps(x, _mm512_add_ps(e2, two_minus_k)), one);
    const __m512 ybig = _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(
        _mm512_mask_mov_ps(yl, _mm512_cmplt_epi32_mask(k, _mm512_set1_epi32(23)), ys)), k23));
    __m512 y = _mm512_mask_mov_ps(yf, _mm512_cmpeq_epi32_mask(k, _mm512_set1_epi32(-1)), ym1);
    y = _mm512_mask_mov_ps(y, _mm512_cmpeq_epi32_mask(k, _mm512_setzero_si512()), y0);
    return _mm512_mask_mov_ps(y, large, ybig);
}

__attribute__((always_inline)) static inline __m512 mnh_tanhf16_core(__m512 x, __mmask16 *rare,
                                                                     const mnh_exp_tab *tab) {
    const __m512i mag = _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x7fffffff));
    const __m512 two = _mm512_set1_ps(2.0f);
    (void)tab;
    *rare = _mm512_cmplt_epi32_mask(mag, _mm512_set1_epi32(0x32800000)) |
            _mm512_cmpgt_epi32_mask(mag, _mm512_set1_epi32(0x7f7fffff));
    const __mmask16 large = _mm512_cmpgt_epi32_mask(mag, _mm512_set1_epi32(0x3f7fffff));
    const __mmask16 huge = _mm512_cmpgt_epi32_mask(mag, _mm512_set1_epi32(0x41afffff));
    const __m512 a = _mm512_mask_mov_ps(_mm512_mul_ps(two, _mm512_castsi512_ps(mag)), huge, two);
    const __m512 t = mnh_tanh_expm1f16(a, large);
    const __m512 s = _mm512_add_ps(t, two);
    const __m512 q = _mm512_div_ps(_mm512_mask_blend_ps(large, _mm512_xor_ps(t, _mm512_set1_ps(-0.0f)), two), s);
    __m512 z = _mm512_mask_sub_ps(q, large, _mm512_set1_ps(1.0f), q);
    z = _mm512_mask_mov_ps(z, huge, _mm512_set1_ps(1.0f));
    return _mm512_or_ps(z, _mm512_and_ps(x, _mm512_set1_ps(-0.0f)));
}

__attribute__((always_inline)) static inline __m512 mnh_expf16_core(__m512 x, __mmask16 *rare,
                                                                    const mnh_exp_tab *tab) {
    *rare = mnh_expf16_rare(x);
    return mnh_expf16_normal(x, tab);
}

/* y[i] = f(x[i]) for the lanes of `rare` (x: the vector read, y: where it went) */
__attribute__((noinline, cold, unused)) static void mnh_patch16(float *y, __m512 x, __mmask16 rare,
                                                                float (*f)(float)) {
    float xs[16];
    _mm512_storeu_ps(xs, x);
    for (int i = 0; i < 16; i++)
        if (rare >> i & 1) y[i] = f(xs[i]);
}

/* y[0..n) = f(x[0..n)), 16 at a time, the last n % 16 through masked loads and stores (nothing past n read or
 * written); a vector is read before it is written, so y may be x */
#define MNH_MAP(name, core, scalar)                                                                                \
    __attribute__((unused)) static void name(float *y, const float *x, int n) {                                    \
        const mnh_exp_tab tab = mnh_exp_table();                                                                   \
        for (int i = 0; i < n; i += 16) {                                                                          \
            const __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);                \
            const __m512 v = _mm512_maskz_loadu_ps(m, x + i);                                                      \
            __mmask16 rare;                                                                                        \
            _mm512_mask_storeu_ps(y + i, m, core(v, &rare, &tab));                                                 \
            if (rare & m) mnh_patch16(y + i, v, rare & m, scalar);                                                 \
        }                                                                                                          \
    }
MNH_MAP(mnh_expf_n, mnh_expf16_core, mnh_libm_expf)
MNH_MAP(mnh_sigmoid_n, mnh_sigmoid16_core, mnh_libm_sigmoid)
MNH_MAP(mnh_tanhf_n, mnh_tanhf16_core, mnh_libm_tanhf)
#undef MNH_MAP

/* ---- 8 lanes (AVX2) ------------------------------------------------------------------------------------------ */
#else

/* ---- expf: x 32/ln2 = k + r in double, 2^(k/32) from the table, the cubic in r --------------------------- */

/* expf of 4 floats (as doubles), each lane in the normal path (|x| < 88) */
__attribute__((always_inline)) static inline __m128 mnh_expf4(__m128 x4) {
    const __m256d xd = _mm256_cvtps_pd(x4);
    const __m256d shift = _mm256_set1_pd(0x1.8p+52);
    const __m256d z = _mm256_mul_pd(_mm256_set1_pd(0x1.71547652b82fep+5), xd);
    __m256d kd = _mm256_add_pd(z, shift);
    const __m256i k = _mm256_castpd_si256(kd);
    kd = _mm256_sub_pd(kd, shift);
    __m256d r = _mm256_mul_pd(_mm256_set1_pd(0x1.7154765p+5), xd);
    r = _mm256_sub_pd(r, kd);
    r = _mm256_add_pd(r, _mm256_mul_pd(_mm256_set1_pd(0x1.5c17fp-26), xd));
    const __m256i j = _mm256_and_si256(k, _mm256_set1_epi64x(31));
    __m256i scale = _mm256_i64gather_epi64((const long long *)mn_libm_two_j(), j, 8);
    scale = _mm256_add_epi64(scale, _mm256_slli_epi64(_mm256_sub_epi64(k, j), 47));
    __m256d hi = _mm256_mul_pd(_mm256_set1_pd(0x1.c6af84b912394p-20), r);
    hi = _mm256_add_pd(hi, _mm256_set1_pd(0x1.ebfce50fac4f3p-13));
    const __m256d r2 = _mm256_mul_pd(r, r);
    __m256d lo = _mm256_mul_pd(_mm256_set1_pd(0x1.62e42ff0c52d6p-6), r);
    lo = _mm256_add_pd(lo, _mm256_set1_pd(1.0));
    __m256d y = _mm256_mul_pd(hi, r2);
    y = _mm256_add_pd(y, lo);
    y = _mm256_mul_pd(y, _mm256_castsi256_pd(scale));
    return _mm256_cvtpd_ps(y);
}

/* lanes where expf leaves the normal path: |x| >= 88, infinities, NaN (as a movemask) */
static inline int mnh_expf_rare(__m256 x) {
    const __m256i mag = _mm256_and_si256(_mm256_castps_si256(x), _mm256_set1_epi32(0x7fffffff));
    return _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(mag, _mm256_set1_epi32(0x42afffff))));
}

/* the lanes of `rare` recomputed by the scalar f */
static inline __m256 mnh_fixup(__m256 y, __m256 x, int rare, float (*f)(float)) {
    float xs[8], ys[8];
    _mm256_storeu_ps(xs, x);
    _mm256_storeu_ps(ys, y);
    for (int i = 0; i < 8; i++)
        if (rare >> i & 1) ys[i] = f(xs[i]);
    return _mm256_loadu_ps(ys);
}

__attribute__((always_inline)) static inline __m256 mnh_expf8_normal(__m256 x) {
    const __m128 lo = mnh_expf4(_mm256_castps256_ps128(x)), hi = mnh_expf4(_mm256_extractf128_ps(x, 1));
    return _mm256_insertf128_ps(_mm256_castps128_ps256(lo), hi, 1);
}

/* ---- TFLM's sigmoid: 1 above 16.619..., expf(x) below -9, else 1 / (1 + expf(-x)) --------------------------- */

/* the sigmoid of lanes x, *rare the lanes to recompute with mnh_libm_sigmoid */
__attribute__((always_inline)) static inline __m256 mnh_sigmoid8_core(__m256 x, int *rare) {
    const __m256 one = _mm256_set1_ps(1.0f);
    const __m256 big = _mm256_cmp_ps(x, _mm256_set1_ps(16.619047164916992188f), _CMP_GT_OQ);
    const __m256 small = _mm256_cmp_ps(x, _mm256_set1_ps(-9.0f), _CMP_LT_OQ);
    const __m256 neg = _mm256_xor_ps(x, _mm256_set1_ps(-0.0f));
    __m256 a = _mm256_blendv_ps(neg, x, small);
    a = _mm256_andnot_ps(big, a); /* 0 where the result is 1 */
    *rare = mnh_expf_rare(a);
    const __m256 e = mnh_expf8_normal(a);
    const __m256 d = _mm256_add_ps(one, e);
    __m256 y = _mm256_div_ps(one, d);
    y = _mm256_blendv_ps(y, e, small);
    return _mm256_blendv_ps(y, one, big);
}

/* ---- tanhf: 1 - 2 / (expm1f(2|x|) + 2) or -t / (t + 2), t = expm1f(-2|x|), with fdlibm's float expm1f -------- */

MNH_EXPM1F_E(256, __m256)

/* expm1f of lanes y in [2, 44) or (-2, -2^-25], the arguments tanhf passes: the scalar function's reductions
 * (k = 0; k = -1, taken by negative y only; k = y / ln2 rounded) and reconstructions (k = 0, k = -1, k <= -2 or
 * k > 56, 1 < k < 23, 23 <= k <= 56; k = 1 needs y in (ln2 / 2, 3 ln2 / 2)), each lane taking its own. */
__attribute__((always_inline)) static inline __m256 mnh_expm1f8(__m256 x) {
    const __m256 ln2_hi = _mm256_set1_ps(6.9313812256e-01f), ln2_lo = _mm256_set1_ps(9.0580006145e-06f);
    const __m256 half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f), sign = _mm256_set1_ps(-0.0f);
    const __m256i mag = _mm256_and_si256(_mm256_castps_si256(x), _mm256_set1_epi32(0x7fffffff));
    const __m256 negative = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);
    const __m256i reduce = _mm256_cmpgt_epi32(mag, _mm256_set1_epi32(0x3eb17218));
    const __m256i near = _mm256_cmpgt_epi32(_mm256_set1_epi32(0x3f851592), mag);
    /* |x| < 3 ln2 / 2 (x negative here): x + ln2_hi, lo = -ln2_lo, k = -1 */
    const __m256 hi1 = _mm256_add_ps(x, ln2_hi);
    const __m256 lo1 = _mm256_xor_ps(ln2_lo, sign);
    const __m256i k1 = _mm256_set1_epi32(-1);
    /* else k = (int)(x / ln2 +- 0.5) */
    const __m256 scaled = _mm256_mul_ps(_mm256_set1_ps(1.4426950216e+00f), x);
    const __m256i kn = _mm256_cvttps_epi32(_mm256_add_ps(scaled, _mm256_or_ps(half, _mm256_and_ps(negative, sign))));
    const __m256 kf = _mm256_cvtepi32_ps(kn);
    const __m256 hin = _mm256_sub_ps(x, _mm256_mul_ps(kf, ln2_hi));
    const __m256 lon = _mm256_mul_ps(kf, ln2_lo);
    const __m256 hi = _mm256_blendv_ps(hin, hi1, _mm256_castsi256_ps(near));
    const __m256 lo = _mm256_blendv_ps(lon, lo1, _mm256_castsi256_ps(near));
    __m256i k = _mm256_blendv_epi8(kn, k1, near);
    k = _mm256_and_si256(k, reduce);
    const __m256 xr = _mm256_sub_ps(hi, lo);
    const __m256 c = _mm256_and_ps(_mm256_sub_ps(_mm256_sub_ps(hi, xr), lo), _mm256_castsi256_ps(reduce));
    x = _mm256_blendv_ps(x, xr, _mm256_castsi256_ps(reduce));

    __m256 hxs;
    __m256 e = mnh_expm1f_e256(x, &hxs);

    /* k == 0 */
    const __m256 y0 = _mm256_sub_ps(x, _mm256_sub_ps(_mm256_mul_ps(x, e), hxs));
    /* k != 0: the reduction's error taken out */
    e = _mm256_sub_ps(_mm256_mul_ps(x, _mm256_sub_ps(e, c)), c);
    e = _mm256_sub_ps(e, hxs);
    const __m256 ym1 = _mm256_sub_ps(_mm256_mul_ps(half, _mm256_sub_ps(x, e)), half); /* k == -1 */
    const __m256i k23 = _mm256_slli_epi32(k, 23);
    /* k <= -2 or k > 56: (1 - (e - x)) 2^k - 1 */
    const __m256 yf = _mm256_sub_ps(_mm256_castsi256_ps(_mm256_add_epi32(
        _mm256_castps_si256(_mm256_sub_ps(one, _mm256_sub_ps(e, x))), k23)), one);
    /* 1 < k < 23: ((1 - 2^-k) - (e - x)) 2^k */
    const __m256 one_minus = _mm256_castsi256_ps(_mm256_sub_epi32(
        _mm256_set1_epi32(0x3f800000), _mm256_srlv_epi32(_mm256_set1_epi32(0x1000000), k)));
    const __m256 ys = _mm256_sub_ps(one_minus, _mm256_sub_ps(e, x));
    /* 23 <= k <= 56: ((x - (e + 2^-k)) + 1) 2^k */
    const __m256 two_minus_k = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_sub_epi32(_mm256_set1_epi32(0x7f), k), 23));
    const __m256 yl = _mm256_add_ps(_mm256_sub_ps(x, _mm256_add_ps(e, two_minus_k)), one);
    const __m256 ymid = _mm256_castsi256_ps(_mm256_add_epi32(
        _mm256_castps_si256(_mm256_blendv_ps(yl, ys, _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(23), k)))),
        k23));
    const __m256i far = _mm256_or_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(-1), k),
                                        _mm256_cmpgt_epi32(k, _mm256_set1_epi32(56)));
    __m256 y = _mm256_blendv_ps(ymid, yf, _mm256_castsi256_ps(far));
    y = _mm256_blendv_ps(y, ym1, _mm256_castsi256_ps(_mm256_cmpeq_epi32(k, _mm256_set1_epi32(-1))));
    return _mm256_blendv_ps(y, y0, _mm256_castsi256_ps(_mm256_cmpeq_epi32(k, _mm256_setzero_si256())));
}

/* tanhf of lanes x, *rare the lanes to recompute with mnh_libm_tanhf */
__attribute__((always_inline)) static inline __m256 mnh_tanhf8_core(__m256 x, int *rare_out) {
    const __m256i bits = _mm256_castps_si256(x), mag = _mm256_and_si256(bits, _mm256_set1_epi32(0x7fffffff));
    const __m256 one = _mm256_set1_ps(1.0f), two = _mm256_set1_ps(2.0f);
    /* the scalar function's lanes: |x| < 2^-26 (zero, tiny), infinities, NaN */
    const int rare = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_or_si256(
        _mm256_cmpgt_epi32(_mm256_set1_epi32(0x32800000), mag), _mm256_cmpgt_epi32(mag, _mm256_set1_epi32(0x7f7fffff)))));
    const __m256i large = _mm256_cmpgt_epi32(mag, _mm256_set1_epi32(0x3f7fffff)); /* |x| >= 1 */
    const __m256i huge = _mm256_cmpgt_epi32(mag, _mm256_set1_epi32(0x41afffff));  /* |x| >= 22: 1 - 1e-30 = 1 */
    __m256 twice = _mm256_mul_ps(two, _mm256_castsi256_ps(mag));
    twice = _mm256_blendv_ps(_mm256_xor_ps(twice, _mm256_set1_ps(-0.0f)), twice, _mm256_castsi256_ps(large));
    twice = _mm256_andnot_ps(_mm256_castsi256_ps(huge), twice); /* lanes whose expm1f is not used: any valid input */
    twice = _mm256_blendv_ps(twice, two, _mm256_castsi256_ps(huge));
    const __m256 t = mnh_expm1f8(twice);
    const __m256 s = _mm256_add_ps(t, two);
    /* one division for both forms: 2 / s where |x| >= 1 (then 1 - it), else -t / s */
    const __m256 q = _mm256_div_ps(_mm256_blendv_ps(_mm256_xor_ps(t, _mm256_set1_ps(-0.0f)), two,
                                                    _mm256_castsi256_ps(large)), s);
    __m256 z = _mm256_blendv_ps(q, _mm256_sub_ps(one, q), _mm256_castsi256_ps(large));
    z = _mm256_blendv_ps(z, _mm256_set1_ps(1.0f - 1.0e-30f), _mm256_castsi256_ps(huge));
    z = _mm256_or_ps(z, _mm256_and_ps(x, _mm256_set1_ps(-0.0f)));
    *rare_out = rare;
    return z;
}

__attribute__((always_inline)) static inline __m256 mnh_expf8_core(__m256 x, int *rare) {
    *rare = mnh_expf_rare(x);
    return mnh_expf8_normal(x);
}

/* y[0..n) = f(x[0..n)), two vectors at a time (independent chains side by side), the last n % 8 through a buffer
 * (nothing past n read or written); a vector is read before it is written, so y may be x */
#define MNH_MAP(name, core, scalar)                                                                                \
    __attribute__((unused)) static void name(float *y, const float *x, int n) {                                    \
        int i = 0;                                                                                                 \
        for (; i + 16 <= n; i += 16) {                                                                             \
            const __m256 x0 = _mm256_loadu_ps(x + i), x1 = _mm256_loadu_ps(x + i + 8);                             \
            int r0, r1;                                                                                            \
            __m256 y0 = core(x0, &r0), y1 = core(x1, &r1);                                                         \
            if (r0) y0 = mnh_fixup(y0, x0, r0, scalar);                                                            \
            if (r1) y1 = mnh_fixup(y1, x1, r1, scalar);                                                            \
            _mm256_storeu_ps(y + i, y0), _mm256_storeu_ps(y + i + 8, y1);                                          \
        }                                                                                                          \
        for (; i < n; i += 8) {                                                                                    \
            float buf[8] = {0};                                                                                    \
            const int k = n - i < 8 ? n - i : 8;                                                                   \
            memcpy(buf, x + i, (size_t)k * sizeof(float));                                                         \
            const __m256 x0 = _mm256_loadu_ps(buf);                                                                \
            int r0;                                                                                                \
            __m256 y0 = core(x0, &r0);                                                                             \
            if (r0) y0 = mnh_fixup(y0, x0, r0, scalar);                                                            \
            _mm256_storeu_ps(buf, y0);                                                                             \
            memcpy(y + i, buf, (size_t)k * sizeof(float));                                                         \
        }                                                                                                          \
    }
MNH_MAP(mnh_expf_n, mnh_expf8_core, mnh_libm_expf)
MNH_MAP(mnh_sigmoid_n, mnh_sigmoid8_core, mnh_libm_sigmoid)
MNH_MAP(mnh_tanhf_n, mnh_tanhf8_core, mnh_libm_tanhf)
#undef MNH_MAP
#endif /* 16 or 8 lanes */

#endif /* AVX2 */
#endif /* MN_HOST_LIBM_H */
