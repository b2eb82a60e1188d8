/* The C library's expf and tanhf as micronn's float reference (and TFLM's wheel) get them from glibc on x86-64,
 * operation for operation, for kernels that must give the host's bits on any core (each checked on all 2^32 float
 * inputs against the host's, see tests/micro/test_kernels_lstm.py):
 *  - expf: x 32/ln2 = k + r, exp(x) = 2^(k/32) 2^(r/32) with a cubic in r, in double. The x86-64 build the
 *    reference runs on fuses its multiply-adds; only the unrounded product in r changes a float result (on two
 *    inputs), and splitting 32/ln2 in two parts gives it without an FMA instruction;
 *  - tanhf: from expm1f (fdlibm's float algorithm: reduction by ln2 in two parts, a rational correction);
 *  - TFLM's float sigmoid on top of expf.
 * glibc's results are not always correctly rounded, so a correctly rounded exp would differ on some inputs.
 */
#ifndef MN_LIBM_H
#define MN_LIBM_H

#include "mn_f32.h"

static inline uint32_t mn_libm_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float mn_libm_float(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* ---- expf ------------------------------------------------------------------------------------------------- */

/* 2^(j/32), j = 0..31, to the nearest double: expf's table (the host ports' vector expf reads it too) */
static inline const double *mn_libm_two_j(void) {
    static const double two_j[32] = {
        0x1.0000000000000p+0, 0x1.059b0d3158574p+0, 0x1.0b5586cf9890fp+0, 0x1.11301d0125b51p+0, 0x1.172b83c7d517bp+0,
        0x1.1d4873168b9aap+0, 0x1.2387a6e756238p+0, 0x1.29e9df51fdee1p+0, 0x1.306fe0a31b715p+0, 0x1.371a7373aa9cbp+0,
        0x1.3dea64c123422p+0, 0x1.44e086061892dp+0, 0x1.4bfdad5362a27p+0, 0x1.5342b569d4f82p+0, 0x1.5ab07dd485429p+0,
        0x1.6247eb03a5585p+0, 0x1.6a09e667f3bcdp+0, 0x1.71f75e8ec5f74p+0, 0x1.7a11473eb0187p+0, 0x1.82589994cce13p+0,
        0x1.8ace5422aa0dbp+0, 0x1.93737b0cdc5e5p+0, 0x1.9c49182a3f090p+0, 0x1.a5503b23e255dp+0, 0x1.ae89f995ad3adp+0,
        0x1.b7f76f2fb5e47p+0, 0x1.c199bdd85529cp+0, 0x1.cb720dcef9069p+0, 0x1.d5818dcfba487p+0, 0x1.dfc97337b9b5fp+0,
        0x1.ea4afa2a490dap+0, 0x1.f50765b6e4540p+0,
    };
    return two_j;
}

static inline float mn_libm_expf(float x) {
    const double inv_step = 0x1.71547652b82fep+5; /* 32 / ln2 */
    /* inv_step = hi + lo, hi with 29 significant bits: hi * x is exact for a float x */
    const double inv_step_hi = 0x1.7154765p+5, inv_step_lo = 0x1.5c17fp-26;
    const double round_shift = 0x1.8p+52;          /* adding it rounds to an integer, kept in the low bits */
    /* 2^(r/32) - 1 ~ r (c2 + r c1 + r^2 c0) */
    const double c0 = 0x1.c6af84b912394p-20, c1 = 0x1.ebfce50fac4f3p-13, c2 = 0x1.62e42ff0c52d6p-6;
    const uint32_t bits = mn_libm_bits(x), top = (bits >> 20) & 0x7ffu;
    if (top >= 0x42bu) {                                    /* |x| >= 88, infinities and NaN */
        if (bits == 0xff800000u) return 0.0f;
        if (top >= 0x7f8u) return x + x;
        if (x > 0x1.62e42ep6f) return 0x1p97f * 0x1p97f;   /* overflow: +inf */
        if (x < -0x1.9fe368p6f) return 0x1p-95f * 0x1p-95f; /* underflow: +0 */
    }
    const double xd = (double)x;
    const double z = inv_step * xd;
    double kd = z + round_shift;
    uint64_t k;
    memcpy(&k, &kd, sizeof k);
    kd = kd - round_shift;
    /* r = x 32/ln2 - k with the product unrounded, as the reference's fused multiply-add gives it: hi x - k is
     * exact (|r| < 1), the small lo x is added once */
    double r = inv_step_hi * xd;
    r = r - kd;
    const double r_lo = inv_step_lo * xd;
    r = r + r_lo;
    uint64_t scale_bits;
    memcpy(&scale_bits, &mn_libm_two_j()[k % 32], sizeof scale_bits);
    scale_bits += (k - k % 32) << 47; /* 2^(j/32) * 2^m for k = 32 m + j */
    double scale;
    memcpy(&scale, &scale_bits, sizeof scale);
    double hi = c0 * r;
    hi = hi + c1;
    const double r2 = r * r;
    double lo = c2 * r;
    lo = lo + 1.0;
    double y = hi * r2;
    y = y + lo;
    y = y * scale;
    return (float)y;
}

/* ---- tanhf ------------------------------------------------------------------------------------------------ */

/* exp(x) - 1 for the arguments tanhf passes, with fdlibm's float operations. */
static inline float mn_libm_expm1f(float x) {
    const float ln2_hi = 6.9313812256e-01f, ln2_lo = 9.0580006145e-06f, inv_ln2 = 1.4426950216e+00f;
    const float q1 = -3.3333335072e-02f, q2 = 1.5873016091e-03f, q3 = -7.9365076090e-05f, q4 = 4.0082177293e-06f,
                q5 = -2.0109921195e-07f;
    const uint32_t bits = mn_libm_bits(x), mag = bits & 0x7fffffffu;
    const int negative = (int)(bits >> 31);
    float c = 0.0f;
    int32_t k = 0;
    if (mag >= 0x4195b844u) {                   /* |x| >= 27 ln2 */
        if (mag > 0x7f800000u) return x + x;
        if (mag == 0x7f800000u) return negative ? -1.0f : x;
        if (negative) return -1.0f;
        if (x > 8.8721679688e+01f) return x * 0x1p127f * 0x1p127f;
    }
    if (mag > 0x3eb17218u) {                    /* |x| > ln2 / 2: x = k ln2 + (hi - lo) */
        float hi, lo;
        if (mag < 0x3f851592u) {                /* |x| < 3 ln2 / 2 */
            hi = negative ? x + ln2_hi : x - ln2_hi;
            lo = negative ? -ln2_lo : ln2_lo;
            k = negative ? -1 : 1;
        } else {
            const float scaled = inv_ln2 * x;
            k = (int32_t)(scaled + (negative ? -0.5f : 0.5f));
            const float kf = (float)k;
            const float k_hi = kf * ln2_hi;
            hi = x - k_hi;
            lo = kf * ln2_lo;
        }
        x = hi - lo;
        const float lost = hi - x;
        c = lost - lo;                          /* the reduction's rounding error */
    } else if (mag < 0x33000000u) {             /* |x| < 2^-25 */
        return x;
    }
    const float half_x = 0.5f * x;
    const float hxs = x * half_x;
    float p = hxs * q5;
    p = q4 + p;
    p = hxs * p;
    p = q3 + p;
    p = hxs * p;
    p = q2 + p;
    p = hxs * p;
    p = q1 + p;
    p = hxs * p;
    const float r1 = 1.0f + p;
    const float rh = r1 * half_x;
    const float t = 3.0f - rh;
    const float xt = x * t;
    const float denominator = 6.0f - xt;
    const float numerator = r1 - t;
    const float quotient = numerator / denominator;
    float e = hxs * quotient;
    if (k == 0) {
        const float xe = x * e;
        const float d = xe - hxs;
        return x - d;
    }
    const float ec = e - c;
    const float xec = x * ec;
    e = xec - c;
    e = e - hxs;
    if (k == -1) {
        const float d = x - e;
        const float half = 0.5f * d;
        return half - 0.5f;
    }
    if (k == 1) {
        if (x < -0.25f) {
            const float s = x + 0.5f;
            const float d = e - s;
            return -2.0f * d;
        }
        const float d = x - e;
        const float twice = 2.0f * d;
        return 1.0f + twice;
    }
    float y;
    if (k <= -2 || k > 56) {
        const float d = e - x;
        y = 1.0f - d;
        y = mn_libm_float(mn_libm_bits(y) + ((uint32_t)k << 23)); /* times 2^k */
        return y - 1.0f;
    }
    if (k < 23) {
        const float one_minus = mn_libm_float(0x3f800000u - (0x1000000u >> k)); /* 1 - 2^-k */
        const float d = e - x;
        y = one_minus - d;
    } else {
        const float two_minus_k = mn_libm_float((uint32_t)(0x7f - k) << 23);
        const float s = e + two_minus_k;
        y = x - s;
        y = y + 1.0f;
    }
    return mn_libm_float(mn_libm_bits(y) + ((uint32_t)k << 23));
}

static inline float mn_libm_tanhf(float x) {
    const uint32_t bits = mn_libm_bits(x), mag = bits & 0x7fffffffu;
    float z;
    if (mag >= 0x7f800000u) {                   /* +-inf: +-1; NaN: NaN */
        const float inverse = 1.0f / x;
        return (bits >> 31) ? inverse - 1.0f : inverse + 1.0f;
    }
    if (mag == 0) return x;
    if (mag >= 0x41b00000u) {                   /* |x| >= 22 */
        z = 1.0f - 1.0e-30f;
    } else if (mag < 0x24000000u) {             /* |x| < 2^-55 */
        const float s = 1.0f + x;
        return x * s;
    } else {
        const float twice = 2.0f * mn_libm_float(mag);
        if (mag >= 0x3f800000u) {               /* |x| >= 1: 1 - 2 / (e^2|x| + 1) */
            const float t = mn_libm_expm1f(twice);
            const float s = t + 2.0f;
            const float q = 2.0f / s;
            z = 1.0f - q;
        } else {                                /* -(e^-2|x| - 1) / (e^-2|x| + 1) */
            const float t = mn_libm_expm1f(-twice);
            const float s = t + 2.0f;
            const float n = -t;
            z = n / s;
        }
    }
    return (bits >> 31) ? -z : z;
}

/* TFLM's float sigmoid: 1 above 16.619..., expf(x) below -9, else 1 / (1 + expf(-x)). */
static inline float mn_libm_sigmoid(float x) {
    if (x > 16.619047164916992188f) return 1.0f;
    if (x < -9.0f) return mn_libm_expf(x);
    const float e = mn_libm_expf(-x);
    const float d = 1.0f + e;
    return 1.0f / d;
}

#endif
