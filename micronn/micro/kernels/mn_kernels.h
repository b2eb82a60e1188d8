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

/* Paths of the generic kernels a call may need. An exported program specialises them to its calls: its generated
 * mn_config.h (micronn/export/codegen.py) sets to 0 those no call takes, and the compiler drops their code. Absent
 * (the host-driven runtime, the tuner, NativeModel), every path stays. */
#if defined(__has_include)
#if __has_include("mn_config.h")
#include "mn_config.h"
#endif
#endif
#ifndef MN_STAGE
#define MN_STAGE 1 /* CONV_2D / DEPTHWISE_CONV_2D with the STAGE word set */
#endif
#ifndef MN_DILATION
#define MN_DILATION 1 /* CONV_2D / DEPTHWISE_CONV_2D dilated */
#endif
#ifndef MN_CONV_GROUPS
#define MN_CONV_GROUPS 1 /* grouped CONV_2D */
#endif
#ifndef MN_CONV_CUT
#define MN_CONV_CUT 1 /* CONV_2D with windows the input's border cuts */
#endif
#ifndef MN_CONV_ONE
#define MN_CONV_ONE 1 /* CONV_2D finishing a channel alone (not in a group of four or a pair of whole windows) */
#endif
#ifndef MN_DW_TAIL
#define MN_DW_TAIL 1 /* DEPTHWISE_CONV_2D with a depth multiplier other than 1 or channels not a multiple of 4 */
#endif

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

/* ---- matrix-vector products over paired weight rows (FULLY_CONNECTED, SVDF) ------------------------------
 *
 * lower.paired_rows stores int8 weight rows (depth padded to a multiple of 4 with zeros, rows to an even count)
 * as halfwords h = 256 * w[r+1][i] + w[r][i] (a "pair" of rows r, r+1). Per group of 4 inputs a tile of 4 rows
 * is 4 words: rows 0/1 at inputs (0,2), rows 0/1 at (1,3), rows 2/3 at (0,2), rows 2/3 at (1,3); a last tile of
 * 2 rows (when the row count is 2 mod 4) is 2 words per group. The input is widened once (mn_pair_widen) to
 * int16 pairs (x0,x2), (x1,x3) per group. With the DSP extension one SMLAD of a raw weight word adds
 * 256 * dot(row r+1) + dot(row r), a second SMLAD of its SXTB16 (the low bytes, sign-extended) dot(row r):
 * three instructions per four multiply-accumulates instead of four. Both sums are exact (no wrap) over at most
 * MN_PAIR_GROUPS groups (|x| <= 255, |w| <= 128: 257 * 255 * 128 * 252 < 2^31), so (ab - a) >> 8 is dot(row r+1)
 * exactly; the chunks are added with wrap-around like TFLM's int32 sums. A pair whose halfword would leave int16
 * (w[r+1] = -128, w[r] < 0) holds -127 for w[r+1] and is corrected afterwards (mn_pair_fix). */
#define MN_PAIR_GROUPS 63

/* x[0..n) - zp widened to int16: DSP: per group of 4 the words (x0,x2), (x1,x3) (SXTB16's order), portable:
 * in order; zero-padded to whole groups (the padded weights are 0). xe holds 2 words per group. */
__attribute__((noinline, unused)) static void mn_pair_widen(const int8_t *x, int n, int32_t zp, uint32_t *xe) {
    const int groups = (n + 3) / 4;
#if defined(__ARM_FEATURE_DSP)
    const uint32_t zp2 = ((uint32_t)zp & 0xFFFFu) * 0x10001u;
    int g = 0;
    if (zp == 0)
        for (; 4 * g + 4 <= n; g++, xe += 2) {
            const uint32_t v = mn_word4(x + 4 * g);
            xe[0] = MN_EVEN(v), xe[1] = MN_ODD(v);
        }
    for (; 4 * g + 4 <= n; g++, xe += 2) {
        const uint32_t v = mn_word4(x + 4 * g);
        xe[0] = (uint32_t)__builtin_arm_ssub16((int32_t)MN_EVEN(v), (int32_t)zp2);
        xe[1] = (uint32_t)__builtin_arm_ssub16((int32_t)MN_ODD(v), (int32_t)zp2);
    }
    if (g < groups) { /* the last, partial group: never read past the input */
        uint32_t v = 0;
        for (int i = 4 * g; i < n; i++) v |= (uint32_t)(uint8_t)x[i] << (8 * (i - 4 * g));
        xe[0] = (uint32_t)__builtin_arm_ssub16((int32_t)MN_EVEN(v), (int32_t)zp2);
        xe[1] = (uint32_t)__builtin_arm_ssub16((int32_t)MN_ODD(v), (int32_t)zp2);
    }
#else
    int16_t *h = (int16_t *)xe;
    for (int i = 0; i < 4 * groups; i++) h[i] = (int16_t)(i < n ? x[i] - zp : 0);
#endif
}

#if defined(__ARM_FEATURE_DSP) && defined(__thumb2__)
/* Every whole tile (4 rows) of a block in one asm loop, the accumulators in registers throughout (out of line, so
 * that nothing else competes for them). Per group: one LDRD of input pairs, two LDRD of weight words (SXTB16 in
 * place once the raw word has been used), eight SMLAD. Per tile: the four sums added into acc with one LDM and
 * one STM, then `skip` bytes to the next tile's group g0. */
__attribute__((noinline, unused)) static void mn_pair_tiles4(const uint32_t *xe, const uint32_t *w, int n, int tiles,
                                                            uint32_t skip, uint32_t *acc) {
    const uint32_t *x;
    uint32_t g, a0, ab01, a2, ab23;
    /* what the loop reloads per tile, reached through one register: input, groups, skip, tiles left, acc */
    mn_word frame[5] = {(mn_word)xe, (mn_word)n, skip, (mn_word)tiles, (mn_word)acc};
    __asm__ volatile(
        "0:\n\t"
        "mov    %[a0], #0\n\t"
        "mov    %[ab01], #0\n\t"
        "mov    %[a2], #0\n\t"
        "mov    %[ab23], #0\n\t"
        "ldr    %[x], [%[p]]\n\t"
        "ldr    %[g], [%[p], #4]\n\t"
        "1:\n\t"
        "ldrd   r4, r5, [%[x]], #8\n\t"
        "ldrd   r8, r9, [%[k]], #8\n\t"
        "smlad  %[ab01], r8, r4, %[ab01]\n\t"
        "sxtb16 r8, r8\n\t"
        "smlad  %[a0], r8, r4, %[a0]\n\t"
        "smlad  %[ab01], r9, r5, %[ab01]\n\t"
        "sxtb16 r9, r9\n\t"
        "smlad  %[a0], r9, r5, %[a0]\n\t"
        "ldrd   r8, r9, [%[k]], #8\n\t"
        "smlad  %[ab23], r8, r4, %[ab23]\n\t"
        "sxtb16 r8, r8\n\t"
        "smlad  %[a2], r8, r4, %[a2]\n\t"
        "smlad  %[ab23], r9, r5, %[ab23]\n\t"
        "sxtb16 r9, r9\n\t"
        "smlad  %[a2], r9, r5, %[a2]\n\t"
        "subs   %[g], %[g], #1\n\t"
        "bne    1b\n\t"
        "ldr    %[g], [%[p], #16]\n\t"
        "ldmia  %[g], {r4, r5, r8, r9}\n\t"
        "add    r4, r4, %[a0]\n\t"
        "sub    %[ab01], %[ab01], %[a0]\n\t"
        "add    r5, r5, %[ab01], asr #8\n\t"
        "add    r8, r8, %[a2]\n\t"
        "sub    %[ab23], %[ab23], %[a2]\n\t"
        "add    r9, r9, %[ab23], asr #8\n\t"
        "stmia  %[g]!, {r4, r5, r8, r9}\n\t"
        "str    %[g], [%[p], #16]\n\t"
        "ldr    %[g], [%[p], #8]\n\t"
        "add    %[k], %[k], %[g]\n\t"
        "ldr    %[g], [%[p], #12]\n\t"
        "subs   %[g], %[g], #1\n\t"
        "str    %[g], [%[p], #12]\n\t"
        "bne    0b\n\t"
        : [x] "=&r"(x), [k] "+r"(w), [g] "=&r"(g), [a0] "=&r"(a0), [ab01] "=&r"(ab01), [a2] "=&r"(a2),
          [ab23] "=&r"(ab23)
        : [p] "r"(frame)
        : "r4", "r5", "r8", "r9", "cc", "memory");
}
#endif

/* acc[0..rows) += the dot products of `rows` paired rows (a multiple of 2: tiles of 4, maybe a last tile of 2)
 * over groups [g0, g0 + n), n <= MN_PAIR_GROUPS, of a matrix of `groups` groups per row: `w` is the tiles' start,
 * xe the widened input of group g0. All tiles in one call, so the loops keep their registers. */
#if defined(__ARM_FEATURE_DSP)
__attribute__((noinline, unused)) static void mn_pair_block(const uint32_t *xe, const uint32_t *w, int g0, int n,
                                                            int groups, int rows, uint32_t *acc) {
    const uint32_t *wt = w + 4 * g0;
#if defined(__thumb2__)
    if (rows >= 4) {
        mn_pair_tiles4(xe, wt, n, rows / 4, 16u * (uint32_t)(groups - n), acc);
        acc += rows & ~3;
    }
#else
    for (int t = rows / 4; t > 0; t--, wt += 4 * groups, acc += 4) {
        const uint32_t *x = xe, *k = wt;
        uint32_t a0 = 0, ab01 = 0, a2 = 0, ab23 = 0;
        for (int g = n; g > 0; g--, k += 4, x += 2) {
            const uint32_t x02 = x[0], x13 = x[1];
            uint32_t k0 = k[0], k1 = k[1];
            ab01 = MN_SMLAD(k0, x02, ab01), a0 = MN_SMLAD(MN_EVEN(k0), x02, a0);
            ab01 = MN_SMLAD(k1, x13, ab01), a0 = MN_SMLAD(MN_EVEN(k1), x13, a0);
            k0 = k[2], k1 = k[3];
            ab23 = MN_SMLAD(k0, x02, ab23), a2 = MN_SMLAD(MN_EVEN(k0), x02, a2);
            ab23 = MN_SMLAD(k1, x13, ab23), a2 = MN_SMLAD(MN_EVEN(k1), x13, a2);
        }
        acc[0] += a0, acc[1] += (uint32_t)((int32_t)(ab01 - a0) >> 8);
        acc[2] += a2, acc[3] += (uint32_t)((int32_t)(ab23 - a2) >> 8);
    }
#endif
    if (rows & 2) { /* the last pair: its tile starts after the whole tiles and has 2 words per group */
        const uint32_t *x = xe, *k = w + (size_t)(rows & ~3) * groups + 2 * g0;
        uint32_t a0 = 0, ab01 = 0;
        for (int g = n; g > 0; g--, k += 2, x += 2) {
            const uint32_t x02 = x[0], x13 = x[1], k0 = k[0], k1 = k[1];
            ab01 = MN_SMLAD(k0, x02, ab01), a0 = MN_SMLAD(MN_EVEN(k0), x02, a0);
            ab01 = MN_SMLAD(k1, x13, ab01), a0 = MN_SMLAD(MN_EVEN(k1), x13, a0);
        }
        acc[0] += a0, acc[1] += (uint32_t)((int32_t)(ab01 - a0) >> 8);
    }
}
#else
/* The portable reading of the same layout: each halfword split back into its two int8 weights. */
static inline void mn_pair_block(const uint32_t *xe, const uint32_t *w, int g0, int n, int groups, int rows,
                                 uint32_t *acc) {
    for (int r0 = 0; r0 < rows; r0 += 2) {
        const int tile = r0 & ~3, width = rows - tile >= 4 ? 4 : 2; /* rows in this pair's tile */
        const int16_t *h = (const int16_t *)(w + (size_t)tile * groups) + 2 * width * g0 + 4 * ((r0 - tile) / 2);
        const int16_t *x = (const int16_t *)xe;
        for (int g = 0; g < n; g++, x += 4, h += 2 * width)
            for (int j = 0; j < 4; j++) { /* input 4g + j sits at halfword (j & 1) * 2 + (j >> 1) of the pair */
                const int32_t hw = h[(j & 1) * 2 + (j >> 1)], lo = (int8_t)(hw & 0xFF), xi = x[j];
                acc[r0] += (uint32_t)(lo * xi);
                acc[r0 + 1] += (uint32_t)(((hw - lo) >> 8) * xi);
            }
    }
}
#endif

/* Groups widened at a time: 96 inputs, a 192-byte stack buffer (firmware RAM counts the stack). */
#define MN_PAIR_SLAB 24

/* acc[0..rows) += the whole dot products of `rows` paired rows at `w` with x[0..n) - zp; xe (2 * MN_PAIR_SLAB
 * words) already holds the widened input when `widened` (inputs of one slab, widened once per batch). */
static inline void mn_pair_matvec(const int8_t *x, int n, int32_t zp, uint32_t *xe, int widened, const uint32_t *w,
                                  int rows, uint32_t *acc) {
    const int groups = (n + 3) / 4;
    for (int s0 = 0; s0 < groups; s0 += MN_PAIR_SLAB) {
        const int s1 = mn_min(groups, s0 + MN_PAIR_SLAB);
        if (!widened) mn_pair_widen(x + 4 * s0, mn_min(n - 4 * s0, 4 * MN_PAIR_SLAB), zp, xe);
        for (int g0 = s0; g0 < s1; g0 += MN_PAIR_GROUPS)
            mn_pair_block(xe + 2 * (g0 - s0), w, g0, mn_min(MN_PAIR_GROUPS, s1 - g0), groups, rows, acc);
    }
}

/* The corrections of lower.paired_rows for the rows before `end`: a weight -128 stored as -127 added its input
 * x - zp once too often to row fix[0]'s dot product. Returns where the next rows' corrections start. */
static inline const int32_t *mn_pair_fix(const int32_t *fix, int first, int end, const int8_t *x, int32_t zp,
                                         uint32_t *acc) {
    for (; fix[0] < end; fix += 2) acc[fix[0] - first] -= (uint32_t)(x[fix[1]] - zp);
    return fix;
}

/* Requantization with the per-tensor work done once (mn_rq_init): exactly clamp(mn_mbqm(acc, mult, shift) + zp,
 * lo, hi), as mn_requant_s8 computes it. For mult > 2^30 and a right shift 2 <= e <= 22 both roundings fold into
 * one 64-bit multiply-accumulate: with z = acc * mult + 2^30 (z < 0 exactly when acc < 0), TFLM's result plus
 * zp is floor((z + 2^(30+e) - [z<0] * 2^31 + zp * 2^(31+e)) / 2^(31+e)) (nested floor divisions by powers of
 * two); |zp| <= 255 keeps that sum inside int64. The constant's low word is 2^30 or 0xC0000000, its high word
 * hi or hi - 1 for negative acc. */
typedef struct { int32_t mult, shift, zp, e; uint32_t hi; int kind; } mn_rq;
enum { MN_RQ_GENERAL = 0, MN_RQ_FOLDED = 1, MN_RQ_NO_RIGHT = 2 };

static inline mn_rq mn_rq_init(int32_t mult, int32_t shift, int32_t zp) {
    mn_rq q = {mult, shift, zp, -shift, 0, MN_RQ_GENERAL};
    if (mult > (1 << 30) && shift <= -2 && shift >= -22 && zp >= -255 && zp <= 255) {
        q.kind = MN_RQ_FOLDED;
        q.hi = ((uint32_t)1 << (q.e - 2)) + (uint32_t)zp * ((uint32_t)1 << (q.e - 1));
    } else if (mult >= 0 && shift >= 0 && shift < 31) {
        q.kind = MN_RQ_NO_RIGHT; /* srdhm alone: floor((x * mult + 2^30) / 2^31) */
    }
    return q;
}

static inline int32_t mn_rq_clamp(const mn_rq *q, int32_t acc, int32_t lo, int32_t hi) {
    if (q->kind == MN_RQ_FOLDED) {
        const uint32_t s = (uint32_t)(acc >> 31);
        const uint64_t k = ((uint64_t)(q->hi + s) << 32) | (0x40000000u | (s << 31));
        const int64_t v = (int64_t)(k + (uint64_t)((int64_t)acc * q->mult));
        return mn_clamp((int32_t)(v >> 32) >> (q->e - 1), lo, hi);
    }
    if (q->kind == MN_RQ_NO_RIGHT)
        return mn_add_clamp((int32_t)(((int64_t)mn_wrap_shl(acc, q->shift) * q->mult + (1 << 30)) >> 31), q->zp, lo,
                            hi);
    return mn_add_clamp(mn_mbqm(acc, q->mult, q->shift), q->zp, lo, hi);
}

/* out[i] = requantized acc[i] for n values of one tensor's multiplier (mn_rq), clamped to [lo, hi]: int8 outputs,
 * or int16 ones (then `zp16` is added after the clamp with wrap-around, SVDF's order; q holds zero point 0). */
__attribute__((noinline, unused)) static void mn_rq_s8_loop(const uint32_t *acc, int8_t *out, int n, const mn_rq *q,
                                                    int32_t lo, int32_t hi) {
    const mn_rq r = *q;
    if (r.kind == MN_RQ_FOLDED) {
        const int e1 = r.e - 1;
        for (int i = 0; i < n; i++) {
            const int32_t a = (int32_t)acc[i];
            const uint32_t s = (uint32_t)(a >> 31);
            const int64_t v = (int64_t)((((uint64_t)(r.hi + s) << 32) | (0x40000000u | (s << 31))) +
                                        (uint64_t)((int64_t)a * r.mult));
#if defined(__ARM_FEATURE_DSP)
            if (lo == -128 && hi == 127) {
                out[i] = (int8_t)__builtin_arm_ssat((int32_t)(v >> 32) >> e1, 8);
                continue;
            }
#endif
            out[i] = (int8_t)mn_clamp((int32_t)(v >> 32) >> e1, lo, hi);
        }
        return;
    }
    for (int i = 0; i < n; i++) out[i] = (int8_t)mn_rq_clamp(&r, (int32_t)acc[i], lo, hi);
}

__attribute__((noinline, unused)) static void mn_rq_s16_loop(const uint32_t *acc, int16_t *out, int n, const mn_rq *q,
                                                     int32_t zp16) {
    const mn_rq r = *q;
#if defined(__ARM_FEATURE_DSP) && defined(__thumb2__)
    if (r.kind == MN_RQ_NO_RIGHT && r.mult >= (1 << 30)) {
        /* floor((x * mult + 2^30) / 2^31) = SMMLAR(x, 2 * mult - 2^32, x): (2 * x * mult - x * 2^32 + 2^31) >> 32
         * is that value less x, exactly, and SMMLAR adds x back; one instruction */
        const int32_t m2 = (int32_t)(2u * (uint32_t)r.mult);
        for (int i = 0; i < n; i++) {
            const int32_t a = mn_wrap_shl((int32_t)acc[i], r.shift);
            int32_t y;
            __asm__("smmlar %0, %1, %2, %1" : "=r"(y) : "r"(a), "r"(m2));
            out[i] = (int16_t)(__builtin_arm_ssat(y, 16) + zp16);
        }
        return;
    }
#endif
    if (r.kind == MN_RQ_NO_RIGHT) {
        for (int i = 0; i < n; i++) {
            const int32_t y = (int32_t)(((int64_t)mn_wrap_shl((int32_t)acc[i], r.shift) * r.mult + (1 << 30)) >> 31);
            out[i] = (int16_t)(mn_clamp(y, -32768, 32767) + zp16);
        }
        return;
    }
    for (int i = 0; i < n; i++) out[i] = (int16_t)(mn_rq_clamp(&r, (int32_t)acc[i], -32768, 32767) + zp16);
}

#endif
