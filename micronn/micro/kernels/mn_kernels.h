/* micronn's device kernels: the calling convention and TFLM's fixed-point arithmetic.
 *
 * Every kernel is `void mn_<name>(const mn_word *args)`: one flat array of machine words built by
 * micronn/micro/lower.py (integers as two's complement words, pointers as device addresses). Kernels keep no
 * state between calls and call nothing but memcpy/memset (and the compiler's __aeabi_* helpers).
 *
 * The arithmetic reproduces micronn's Python reference (micronn/quant.py, micronn/fixedpoint.py), which is
 * TFLM's default double-rounding build. Sums that TFLM keeps in int32 are accumulated in uint32 here: the
 * same bits, and wrap-around is defined behaviour in C.
 */
#ifndef MN_KERNELS_H
#define MN_KERNELS_H

#include <stddef.h>
#include <stdint.h>

typedef uintptr_t mn_word;

void *memcpy(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);

#define MN_I(k) ((int32_t)args[k])             /* word k as a signed int32 */
#define MN_P(type, k) ((type *)args[k])        /* word k as a pointer */

/* Storage of spilled tensors (TinySeg's Spill/Fetch), reached only through a function whose address comes in an
 * argument word (lower.StorageRef): copies n bytes between buf and byte `offset` of the object stored under `id`
 * (write 1: into storage), returns 0 on success. Kernels stop at the first non-zero return and leave it in
 * mn_status, the error channel (kernels/spill.c) that their caller reads and clears (lower.FALLIBLE). */
typedef int (*mn_storage_fn)(uint32_t id, uint32_t offset, void *buf, uint32_t n, uint32_t write);
#define MN_STORAGE(k) ((mn_storage_fn)args[k]) /* word k as the storage function */

static inline int32_t mn_min(int32_t a, int32_t b) { return a < b ? a : b; }
static inline int32_t mn_max(int32_t a, int32_t b) { return a > b ? a : b; }
static inline int32_t mn_clamp(int32_t x, int32_t lo, int32_t hi) { return x < lo ? lo : x > hi ? hi : x; }
/* clamp(y + zp, lo, hi) with the sum taken exactly (as the Python reference does in int64). */
static inline int32_t mn_add_clamp(int32_t y, int32_t zp, int32_t lo, int32_t hi) {
    return y < lo - zp ? lo : y > hi - zp ? hi : y + zp;
}
static inline int32_t mn_wrap_add(int32_t a, int32_t b) { return (int32_t)((uint32_t)a + (uint32_t)b); }
static inline int32_t mn_wrap_shl(int32_t x, int s) { return (int32_t)((uint32_t)x << s); }

/* First and one-past-last filter tap whose input index `origin + tap * dilation` lies in [0, size). */
static inline void mn_valid_taps(int origin, int dilation, int size, int taps, int *lo, int *hi) {
    *lo = origin < 0 ? (-origin + dilation - 1) / dilation : 0;
    *hi = size - origin <= 0 ? 0 : mn_min(taps, (size - origin + dilation - 1) / dilation);
}

/* memmove (the runtime provides only memcpy): byte-wise in the safe direction when the ranges overlap. */
static inline void mn_move(void *dst, const void *src, size_t n) {
    uint8_t *d = (uint8_t *)dst;
    const uint8_t *s = (const uint8_t *)src;
    if (d == s || n == 0) return;
    if (d + n <= s || s + n <= d) { memcpy(d, s, n); return; }
    if (d < s) { for (size_t i = 0; i < n; i++) d[i] = s[i]; }
    else { for (size_t i = n; i-- > 0;) d[i] = s[i]; }
}

/* n elements of `size` bytes, each a copy of `value` (memset for bytes). */
static inline void mn_fill(void *dst, const void *value, size_t size, size_t n) {
    if (size == 1) { memset(dst, *(const uint8_t *)value, n); return; }
    for (size_t i = 0; i < n; i++) memcpy((uint8_t *)dst + i * size, value, size);
}

/* Element types of the integer data-movement kernels. */
enum { MN_INT8 = 0, MN_UINT8 = 1, MN_INT16 = 2, MN_INT32 = 3 };

static inline int32_t mn_load(const void *p, int type, size_t i) {
    switch (type) {
    case MN_INT8: return ((const int8_t *)p)[i];
    case MN_UINT8: return ((const uint8_t *)p)[i];
    case MN_INT16: return ((const int16_t *)p)[i];
    default: return ((const int32_t *)p)[i];
    }
}

static inline void mn_store(void *p, int type, size_t i, int32_t v) {
    switch (type) {
    case MN_INT8: ((int8_t *)p)[i] = (int8_t)v; break;
    case MN_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case MN_INT16: ((int16_t *)p)[i] = (int16_t)v; break;
    default: ((int32_t *)p)[i] = v; break;
    }
}

/* ---- gemmlowp / TFLM fixed point ------------------------------------------------------------------------ */

/* SaturatingRoundingDoublingHighMul: round(a * b / 2^31), halves away from zero; saturates MIN * MIN. */
static inline int32_t mn_srdhm(int32_t a, int32_t b) {
    if (a == b && a == INT32_MIN) return INT32_MAX;
    int64_t ab = (int64_t)a * b;
    int64_t v = ab + (ab >= 0 ? (1 << 30) : 1 - (1 << 30));
    return (int32_t)(v >= 0 ? v >> 31 : -((-v) >> 31)); /* C division truncates toward zero */
}

/* RoundingDivideByPOT: x / 2^e rounded half away from zero, 0 <= e <= 31. */
static inline int32_t mn_rdbpot(int32_t x, int e) {
    int32_t mask = (int32_t)((1u << e) - 1u);
    int32_t threshold = (mask >> 1) + (x < 0);
    return (x >> e) + ((x & mask) > threshold);
}

/* MultiplyByQuantizedMultiplier, 32-bit, double rounding: shift > 0 shifts left (wrapping) first. */
static inline int32_t mn_mbqm(int32_t x, int32_t multiplier, int32_t shift) {
    int left = shift > 0 ? shift : 0, right = shift > 0 ? 0 : -shift;
    return mn_rdbpot(mn_srdhm(mn_wrap_shl(x, left), multiplier), right);
}

/* MultiplyByQuantizedMultiplier(int64 x, ...) of TFLM's 16x8 kernels: a Q15 multiplier, one rounding. */
static inline int64_t mn_mbqm64(int64_t x, int32_t multiplier, int32_t shift) {
    int32_t reduced = multiplier < 0x7FFF0000 ? (multiplier + (1 << 15)) >> 16 : 0x7FFF;
    int total = 15 - shift;
    return (x * reduced + ((int64_t)1 << (total - 1))) >> total;
}

/* SaturatingRoundingMultiplyByPOT: x * 2^e, saturating for e > 0, rounding for e < 0. */
static inline int32_t mn_srmpot(int32_t x, int e) {
    if (e > 0) {
        int32_t threshold = (int32_t)((1u << (31 - e)) - 1u);
        return x > threshold ? INT32_MAX : x < -threshold ? INT32_MIN : mn_wrap_shl(x, e);
    }
    return e < 0 ? mn_rdbpot(x, -e) : x;
}

/* gemmlowp Rescale between fixed-point formats with `src` and `dst` integer bits. */
static inline int32_t mn_rescale(int32_t x, int src, int dst) { return mn_srmpot(x, src - dst); }

static inline int mn_clz32(uint32_t x) {
    int n = 0;
    if (x == 0) return 32;
    while (!(x & 0x80000000u)) { x <<= 1; n++; }
    return n;
}

/* exp(a) for a Q0.31 a in [-1/4, 0): Taylor expansion around -1/8, in Q0.31. */
static inline int32_t mn_exp_quarter(int32_t a) {
    const int32_t exp_m1_8 = 1895147668, one_third = 715827883;
    int32_t x = a + (1 << 28);
    int32_t x2 = mn_srdhm(x, x), x3 = mn_srdhm(x2, x), x4 = mn_srdhm(x2, x2);
    int32_t x4_4 = mn_rdbpot(x4, 2);
    int32_t poly = mn_rdbpot(mn_srdhm(x4_4 + x3, one_third) + x2, 1);
    return exp_m1_8 + mn_srdhm(exp_m1_8, x + poly);
}

/* gemmlowp exp_on_negative_values: exp(a) of a Q(int_bits) value a <= 0, as Q0.31. */
static inline int32_t mn_exp_on_negative_values(int32_t a, int int_bits) {
    static const int32_t barrel[7] = {1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242};
    int frac_bits = 31 - int_bits;
    int32_t quarter = (int32_t)1 << (frac_bits - 2);
    int32_t r = (a & (quarter - 1)) - quarter;
    int32_t result = mn_exp_quarter(mn_rescale(r, int_bits, 0));
    int32_t remainder = r - a;
    for (int e = -2; e <= 4; e++) /* each set bit 2^e of -a multiplies by exp(-2^e) */
        if (int_bits > e && ((remainder >> (frac_bits + e)) & 1)) result = mn_srdhm(result, barrel[e + 2]);
    if (int_bits > 5 && a < -((int32_t)1 << (36 - int_bits))) result = 0;
    return a == 0 ? INT32_MAX : result;
}

/* gemmlowp one_over_one_plus_x_for_x_in_0_1: 1 / (1 + a) for a Q0.31 a in [0, 1), Newton-Raphson in Q2.29. */
static inline int32_t mn_one_over_one_plus_x(int32_t a) {
    int64_t s = (int64_t)a + INT32_MAX; /* RoundingHalfSum(a, 1) */
    s += s >= 0 ? 1 : -1;
    int32_t half_denominator = (int32_t)(s >= 0 ? s >> 1 : -((-s) >> 1));
    int32_t x = 1515870810 + mn_srdhm(half_denominator, -1010580540);
    for (int i = 0; i < 3; i++)
        x = x + mn_rescale(mn_srdhm(x, (1 << 29) - mn_srdhm(half_denominator, x)), 4, 2);
    return mn_rescale(x, 1, 0);
}

/* ---- dot products of the convolution family ---------------------------------------------------------------- */

/* With the M4's DSP extension, four int8 values are loaded as one (possibly unaligned) word and SXTB16 splits
 * it into two pairs of int16 lanes (bytes 0,2 and 1,3); SMLAD adds both lane products to an accumulator. The
 * sums wrap like the uint32 sums of the portable loops (SMLAD only sets the sticky Q flag), so both paths
 * give the same bits. */
#if defined(__ARM_FEATURE_DSP)
typedef uint32_t __attribute__((aligned(1), may_alias)) mn_u32_any;
static inline uint32_t mn_word4(const int8_t *p) { return *(const mn_u32_any *)p; }
#define MN_EVEN(v) ((uint32_t)__builtin_arm_sxtb16((int32_t)(v)))
#define MN_ODD(v) ((uint32_t)__builtin_arm_sxtb16((int32_t)(((v) >> 8) | ((v) << 24)))) /* SXTB16 ROR #8 */
#define MN_SMLAD(a, b, acc) ((uint32_t)__builtin_arm_smlad((int32_t)(a), (int32_t)(b), (int32_t)(acc)))
#endif

/* acc + sum x[i] * w[i] (int32 wrap-around). */
static inline int32_t mn_dot_s8(const int8_t *x, const int8_t *w, int n, int32_t acc) {
    uint32_t a = (uint32_t)acc;
    int i = 0;
#if defined(__ARM_FEATURE_DSP)
#pragma clang loop unroll(disable)
    for (; i + 4 <= n; i += 4) {
        const uint32_t v = mn_word4(x + i), k = mn_word4(w + i);
        a = MN_SMLAD(MN_ODD(v), MN_ODD(k), MN_SMLAD(MN_EVEN(v), MN_EVEN(k), a));
    }
#endif
    for (; i < n; i++) a += (uint32_t)(x[i] * w[i]);
    return (int32_t)a;
}

/* Two output channels at once: each x is loaded once for both filters. */
static inline void mn_dot2_s8(const int8_t *x, const int8_t *w0, const int8_t *w1, int n, int32_t *acc0,
                              int32_t *acc1) {
    uint32_t a0 = (uint32_t)*acc0, a1 = (uint32_t)*acc1;
    int i = 0;
#if defined(__ARM_FEATURE_DSP)
#pragma clang loop unroll(disable)
    for (; i + 4 <= n; i += 4) {
        const uint32_t v = mn_word4(x + i), ve = MN_EVEN(v), vo = MN_ODD(v);
        const uint32_t k0 = mn_word4(w0 + i), k1 = mn_word4(w1 + i);
        a0 = MN_SMLAD(vo, MN_ODD(k0), MN_SMLAD(ve, MN_EVEN(k0), a0));
        a1 = MN_SMLAD(vo, MN_ODD(k1), MN_SMLAD(ve, MN_EVEN(k1), a1));
    }
#endif
    for (; i < n; i++) {
        const int32_t v = x[i];
        a0 += (uint32_t)(v * w0[i]);
        a1 += (uint32_t)(v * w1[i]);
    }
    *acc0 = (int32_t)a0;
    *acc1 = (int32_t)a1;
}

/* Four output channels whose filters lie `stride` bytes apart, acc[j] + sum (x[i] + off) * w_j[i]: each x feeds
 * four filters (off is 0 but for windows cut by the padding; x + off fits an int16 lane). */
static inline void mn_dot4_s8(const int8_t *x, const int8_t *w, int stride, int n, int32_t off, uint32_t *acc) {
    uint32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
    const int8_t *w1 = w + stride, *w2 = w1 + stride, *w3 = w2 + stride;
    int i = 0;
#if defined(__ARM_FEATURE_DSP)
    const uint32_t off2 = ((uint32_t)off & 0xFFFFu) * 0x10001u;
#pragma clang loop unroll(disable)
    for (; i + 4 <= n; i += 4) {
        const uint32_t v = mn_word4(x + i);
        uint32_t ve = MN_EVEN(v), vo = MN_ODD(v), k = mn_word4(w + i);
        if (off) ve = (uint32_t)__builtin_arm_sadd16((int32_t)ve, (int32_t)off2),
                 vo = (uint32_t)__builtin_arm_sadd16((int32_t)vo, (int32_t)off2);
        a0 = MN_SMLAD(vo, MN_ODD(k), MN_SMLAD(ve, MN_EVEN(k), a0));
        k = mn_word4(w1 + i);
        a1 = MN_SMLAD(vo, MN_ODD(k), MN_SMLAD(ve, MN_EVEN(k), a1));
        k = mn_word4(w2 + i);
        a2 = MN_SMLAD(vo, MN_ODD(k), MN_SMLAD(ve, MN_EVEN(k), a2));
        k = mn_word4(w3 + i);
        a3 = MN_SMLAD(vo, MN_ODD(k), MN_SMLAD(ve, MN_EVEN(k), a3));
    }
#endif
    for (; i < n; i++) {
        const int32_t v = x[i] + off;
        a0 += (uint32_t)(v * w[i]);
        a1 += (uint32_t)(v * w1[i]);
        a2 += (uint32_t)(v * w2[i]);
        a3 += (uint32_t)(v * w3[i]);
    }
    acc[0] = a0, acc[1] = a1, acc[2] = a2, acc[3] = a3;
}

/* acc + sum (x[i] + offset) * w[i]: for windows cut by the padding, where no precomputed sum of w applies. */
static inline int32_t mn_dot_off_s8(const int8_t *x, const int8_t *w, int n, int32_t offset, int32_t acc) {
    uint32_t a = (uint32_t)acc;
    for (int i = 0; i < n; i++) a += (uint32_t)((x[i] + offset) * w[i]);
    return (int32_t)a;
}

/* The quantized output stage: requantize, add the zero point, clamp to the activation range. Multipliers from
 * QuantizeMultiplier are never negative, and then SaturatingRoundingDoublingHighMul cannot saturate and is
 * (x * m + 2^30) >> 31 (an arithmetic shift: floor), and RoundingDivideByPOT is (h - (h < 0) + 2^(e-1)) >> e. */
static inline int8_t mn_requant_s8(int32_t acc, int32_t mult, int32_t shift, int32_t zp, int32_t lo, int32_t hi) {
    int32_t y;
    if (mult >= 0) {
        const int64_t h = ((int64_t)mn_wrap_shl(acc, shift > 0 ? shift : 0) * mult + (1 << 30)) >> 31;
        y = shift >= 0 ? (int32_t)h : (int32_t)((h - (h < 0) + ((int64_t)1 << (-shift - 1))) >> -shift);
    } else {
        y = mn_mbqm(acc, mult, shift);
    }
    return (int8_t)mn_add_clamp(y, zp, lo, hi);
}

/* TFLM's MultiplyByQuantizedMultiplier(int64, ...) with the Q15 multiplier and total shift precomputed, wrapping
 * like the Python reference's int64 arithmetic (and its out-of-range shifts), truncated to int32. */
static inline int32_t mn_requant_q15(uint64_t acc, int32_t q15, int32_t total) {
    uint64_t v = acc * (uint64_t)(int64_t)q15;
    if (total >= 1 && total <= 64) v += (uint64_t)1 << (total - 1);
    const int64_t s = (int64_t)v;
    return (int32_t)(total >= 0 && total < 64 ? s >> total : s < 0 ? -1 : 0);
}

#endif
