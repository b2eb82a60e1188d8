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

#endif
