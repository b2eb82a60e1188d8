/* Helpers of micronn's float32 kernels (family f32): IEEE-754 single precision as micronn's Python kernels do it.
 *
 * Bit-identical floats need the same operations in the same order, each rounded once: every product is stored
 * before it is added (never a fused multiply-add: FP_CONTRACT is off for clang, and gcc's -std=c99 keeps it off),
 * and sums run in the reference's order. On a Cortex-M without an FPU the compiler's soft-float helpers
 * (__aeabi_fadd, ...) are correctly rounded IEEE operations, so the device computes the host's bits.
 *
 * Float parameters (activation ranges, beta) arrive as their IEEE bit patterns in the low 32 bits of a word.
 */
#ifndef MN_F32_H
#define MN_F32_H

#include "mn_kernels.h"

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#define MN_F32_LOWEST (-0x1.fffffep+127f) /* -FLT_MAX: std::numeric_limits<float>::lowest() */

/* word k as the float whose bits it holds. */
static inline float mn_f32_arg(const mn_word *args, int k) {
    const uint32_t bits = (uint32_t)args[k];
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* total + x * w with the product rounded first (no FMA); on NaNs, the total's and then x's win, as in TFLM. */
static inline float mn_f32_mac(float total, float x, float w) {
    const float product = x * w;
    return total + product;
}

/* std::min(std::max(x, lo), hi): NaN passes through. */
static inline float mn_f32_clamp(float x, float lo, float hi) {
    if (x < lo) x = lo;
    if (hi < x) x = hi;
    return x;
}

/* First and one-past-last filter tap whose input index `origin + tap * dilation` lies in [0, size): the taps
 * TFLM's float loops visit (taps in the padding are skipped, not added as zeros). */
static inline void mn_f32_taps(int origin, int dilation, int size, int taps, int *lo, int *hi) {
    *lo = origin < 0 ? (-origin + dilation - 1) / dilation : 0;
    *hi = size - origin <= 0 ? 0 : mn_min(taps, (size - origin + dilation - 1) / dilation);
    if (*hi < *lo) *hi = *lo;
}

/* ---- expf ------------------------------------------------------------------------------------------------- */

/* exp(x) rounded to float: evaluated in double to about 0.52 double ulp, then rounded once. That is the
 * correctly rounded expf except within ~2^-29 float ulp of a rounding tie. C's expf (glibc's, which micronn's
 * reference and TFLM's wheel call) is within 0.502 ulp, not correctly rounded: on about 1 in 10^4 inputs
 * lying within ~0.002 ulp of a tie the two round apart by one ulp (see tests/micro/test_kernels_f32.py).
 *
 * x = k ln2/32 + r with |r| <= ln2/64 (Cody-Waite: k * L1 is exact, L1 + L2 = ln2/32 to ~2^-100), so
 * exp(x) = 2^m * 2^(j/32) (k = 32 m + j) * exp(r), exp(r) - 1 by its Taylor series to r^6 (error < 2^-58). */
static inline float mn_f32_exp(float xf) {
    /* 2^(j/32) for j = 0..31 as a double plus its remainder (together ~106 bits) */
    static const double mn_f32_exp2_hi[32] = {
        0x1.0000000000000p+0, 0x1.059b0d3158574p+0, 0x1.0b5586cf9890fp+0, 0x1.11301d0125b51p+0, 0x1.172b83c7d517bp+0,
        0x1.1d4873168b9aap+0, 0x1.2387a6e756238p+0, 0x1.29e9df51fdee1p+0, 0x1.306fe0a31b715p+0, 0x1.371a7373aa9cbp+0,
        0x1.3dea64c123422p+0, 0x1.44e086061892dp+0, 0x1.4bfdad5362a27p+0, 0x1.5342b569d4f82p+0, 0x1.5ab07dd485429p+0,
        0x1.6247eb03a5585p+0, 0x1.6a09e667f3bcdp+0, 0x1.71f75e8ec5f74p+0, 0x1.7a11473eb0187p+0, 0x1.82589994cce13p+0,
        0x1.8ace5422aa0dbp+0, 0x1.93737b0cdc5e5p+0, 0x1.9c49182a3f090p+0, 0x1.a5503b23e255dp+0, 0x1.ae89f995ad3adp+0,
        0x1.b7f76f2fb5e47p+0, 0x1.c199bdd85529cp+0, 0x1.cb720dcef9069p+0, 0x1.d5818dcfba487p+0, 0x1.dfc97337b9b5fp+0,
        0x1.ea4afa2a490dap+0, 0x1.f50765b6e4540p+0,
    };
    static const double mn_f32_exp2_lo[32] = {
        0x0.0p+0, 0x1.d73e2a475b465p-55, 0x1.8a62e4adc610bp-54, -0x1.6c51039449b3ap-54, -0x1.19041b9d78a76p-55,
        0x1.e016e00a2643cp-54, 0x1.9b07eb6c70573p-54, 0x1.612e8afad1255p-55, 0x1.6f46ad23182e4p-55,
        -0x1.63aeabf42eae2p-54, 0x1.ada0911f09ebcp-55, 0x1.89b7a04ef80d0p-59, 0x1.d4397afec42e2p-56,
        -0x1.07abe1db13cadp-55, 0x1.6324c054647adp-54, -0x1.383c17e40b497p-54, -0x1.bdd3413b26456p-54,
        -0x1.16e4786887a99p-55, -0x1.41577ee04992fp-55, -0x1.d4c1dd41532d8p-54, 0x1.6e9f156864b27p-54,
        -0x1.75fc781b57ebcp-57, 0x1.c7c46b071f2bep-56, -0x1.d2f6edb8d41e1p-54, 0x1.7a1cd345dcc81p-54,
        -0x1.5584f7e54ac3bp-56, 0x1.11065895048ddp-55, 0x1.503cbd1e949dbp-56, 0x1.2ed02d75b3707p-55,
        -0x1.1a5cd4f184b5cp-54, -0x1.e9c23179c2893p-54, 0x1.9d3e12dd8a18bp-54,
    };
    const double inv_step = 0x1.71547652b82fep+5, l1 = 0x1.62e42fefa4000p-6, l2 = -0x1.8432a1b0e2634p-48;
    if (xf != xf) return xf + xf;             /* NaN, quieted */
    if (xf > 100.0f) return xf * 0x1p127f * 0x1p127f; /* +inf (for +inf too) */
    if (xf < -110.0f) return 0.0f;            /* below half the smallest subnormal (-inf too) */
    const double x = (double)xf;
    const double z = x * inv_step;
    const int32_t k = (int32_t)(z >= 0.0 ? z + 0.5 : z - 0.5);
    const double kd = (double)k;
    const double kl1 = kd * l1;
    const double r_hi = x - kl1;              /* exact: both are multiples of 2^-46 and |r_hi| < 2^-6 */
    const double kl2 = kd * l2;
    const double r = r_hi - kl2;
    double p = 1.0 / 720.0;
    p = p * r;
    p = p + 1.0 / 120.0;
    p = p * r;
    p = p + 1.0 / 24.0;
    p = p * r;
    p = p + 1.0 / 6.0;
    p = p * r;
    p = p + 0.5;
    p = p * r;
    p = p * r;
    p = p + r;                                /* exp(r) - 1 */
    const int32_t j = k & 31, m = (k - j) / 32; /* k = 32 m + j, 0 <= j < 32 */
    const double t = mn_f32_exp2_hi[j];
    double tp = t * p;
    tp = tp + mn_f32_exp2_lo[j];
    const double y = t + tp;                  /* 2^(j/32) * exp(r), in [0.98, 2.03] */
    const uint64_t scale_bits = (uint64_t)(m + 1023) << 52; /* 2^m, a normal double */
    double scale;
    memcpy(&scale, &scale_bits, sizeof scale);
    const double result = y * scale;          /* exact: a power of two, no double underflow or overflow */
    return (float)result;
}

#endif
