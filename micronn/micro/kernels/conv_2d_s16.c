/* CONV_2D, int16x8: int16 activations, int8 weights (per-channel or per-tensor), int64 or int32 bias.
 *
 * TFLM's 16x8 convolution ignores the input and output zero points, so a window cut by the padding simply skips
 * its outside taps. The sum of a window is exact: int32 when the lowering proved (from the weights) that no sum
 * can leave it (`wide` = 0), int64 otherwise. With an int64 bias (or none) the output stage is TFLM's 64-bit
 * requantization, whose Q15 multiplier and total right shift the lowering precomputes; with an int32 bias it is
 * the 32-bit one of the int8 kernels on the sum wrapped to int32 (`requant32` = 1, `mult`/`shift` as TFLM's).
 * Output pixels in raster order, each pixel's channels four at a time (every input value loaded once feeds four
 * filters) where the sums fit int32. With `stage` set (the planner streams the output over the input), each pixel
 * is finished in a stack buffer before it is stored.
 */
#include "mn_kernels.h"

/* clang unrolls the multi-accumulator loops below until the M4 runs out of registers and spills every step */
#if defined(__clang__)
#define MN_S16_NO_UNROLL _Pragma("clang loop unroll(disable)")
#else
#define MN_S16_NO_UNROLL
#endif

enum { OUT, IN, FILTER, BIAS, MULT, SHIFT, N, IN_H, IN_W, IN_C, OUT_H, OUT_W, OUT_C, F_H, F_W, F_C, S_H, S_W, D_H,
       D_W, PAD_T, PAD_L, ACT_MIN, ACT_MAX, REQUANT32, WIDE, STAGE };

/* Four output channels whose filters lie `stride` bytes apart: acc[j] + sum x[i] * w_j[i], each x loaded once for
 * the four. uint32 sums: exact where the lowering proved they fit int32, else wrapped like TFLM's int32. */
static inline void dot4(const int16_t *x, const int8_t *w, int stride, int n, uint32_t *acc) {
    uint32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
    const int8_t *w1 = w + stride, *w2 = w1 + stride, *w3 = w2 + stride;
    MN_S16_NO_UNROLL
    for (int i = 0; i < n; i++) {
        const int32_t v = x[i];
        a0 += (uint32_t)(v * w[i]);
        a1 += (uint32_t)(v * w1[i]);
        a2 += (uint32_t)(v * w2[i]);
        a3 += (uint32_t)(v * w3[i]);
    }
    acc[0] = a0, acc[1] = a1, acc[2] = a2, acc[3] = a3;
}

static inline uint32_t dot32(const int16_t *x, const int8_t *w, int n) {
    uint32_t a = 0;
    for (int i = 0; i < n; i++) a += (uint32_t)(x[i] * w[i]);
    return a;
}

/* Exact int64 sums, for filters whose sums can leave int32. */
static inline int64_t dot64(const int16_t *x, const int8_t *w, int n) {
    int64_t a = 0;
    for (int i = 0; i < n; i++) a += x[i] * w[i];
    return a;
}

/* The output stage: bias, requantization, activation clamp. */
static inline int16_t output(uint64_t acc, int64_t bias, int32_t mult, int32_t shift, int requant32, int32_t lo,
                             int32_t hi) {
    int32_t y;
    if (requant32) y = mn_mbqm((int32_t)(uint32_t)(acc + (uint64_t)bias), mult, shift);
    else y = mn_requant_q15(acc + (uint64_t)bias, mult, shift);
    return (int16_t)mn_clamp(y, lo, hi);
}

void mn_conv_2d_s16(const mn_word *args) {
    int16_t *out = MN_P(int16_t, OUT);
    const int16_t *in = MN_P(const int16_t, IN);
    const int8_t *filter = MN_P(const int8_t, FILTER);
    const int64_t *bias = MN_P(const int64_t, BIAS);
    const int32_t *mult = MN_P(const int32_t, MULT), *shift = MN_P(const int32_t, SHIFT);
    const int n = MN_I(N), in_h = MN_I(IN_H), in_w = MN_I(IN_W), in_c = MN_I(IN_C);
    const int out_h = MN_I(OUT_H), out_w = MN_I(OUT_W), out_c = MN_I(OUT_C);
    const int fh = MN_I(F_H), fw = MN_I(F_W), fc = MN_I(F_C), sh = MN_I(S_H), sw = MN_I(S_W);
    const int dh = MN_I(D_H), dw = MN_I(D_W), pad_t = MN_I(PAD_T), pad_l = MN_I(PAD_L);
    const int32_t lo = MN_I(ACT_MIN), hi = MN_I(ACT_MAX);
    const int requant32 = MN_I(REQUANT32), wide = MN_I(WIDE), stage = MN_I(STAGE);
    const int groups = in_c / fc, per_group = out_c / groups, f_row = fw * fc, f_size = fh * f_row;
    const int contiguous = dw == 1 && groups == 1; /* one filter row reads one contiguous run of input */
    int16_t staged[stage ? out_c : 1];

    for (int b = 0; b < n; b++) {
        const int16_t *image = in + (size_t)b * in_h * in_w * in_c;
        for (int oy = 0; oy < out_h; oy++) {
            const int iy0 = oy * sh - pad_t;
            int fy0, fy1;
            mn_valid_taps(iy0, dh, in_h, fh, &fy0, &fy1);
            for (int ox = 0; ox < out_w; ox++) {
                const int ix0 = ox * sw - pad_l;
                int fx0, fx1;
                mn_valid_taps(ix0, dw, in_w, fw, &fx0, &fx1);
                const int run = contiguous ? (fx1 - fx0) * fc : fc, runs = contiguous ? 1 : fx1 - fx0;
                int16_t *o = stage ? staged : out + (((size_t)b * out_h + oy) * out_w + ox) * out_c;
                int oc = 0;
                for (; !wide && oc + 4 <= out_c && oc % per_group + 4 <= per_group; oc += 4) { /* one group */
                    const int16_t *x_group = image + (oc / per_group) * fc;
                    const int8_t *w0 = filter + (size_t)oc * f_size;
                    uint32_t acc[4] = {0, 0, 0, 0};
                    for (int fy = fy0; fy < fy1; fy++) {
                        const int16_t *x_row = x_group + (size_t)(iy0 + fy * dh) * in_w * in_c;
                        for (int fx = fx0; fx < fx0 + runs; fx++)
                            dot4(x_row + (ix0 + fx * dw) * in_c, w0 + fy * f_row + fx * fc, f_size, run, acc);
                    }
                    for (int i = 0; i < 4; i++)
                        o[oc + i] = output((uint64_t)(int64_t)(int32_t)acc[i], bias[oc + i], mult[oc + i],
                                           shift[oc + i], requant32, lo, hi);
                }
                for (; oc < out_c; oc++) {
                    const int16_t *x_group = image + (oc / per_group) * fc;
                    const int8_t *w0 = filter + (size_t)oc * f_size;
                    uint64_t acc = 0; /* the window's sum, exact (int32 sums only where they cannot overflow) */
                    uint32_t acc32 = 0;
                    for (int fy = fy0; fy < fy1; fy++) {
                        const int16_t *x_row = x_group + (size_t)(iy0 + fy * dh) * in_w * in_c;
                        for (int fx = fx0; fx < fx0 + runs; fx++) {
                            const int16_t *x = x_row + (ix0 + fx * dw) * in_c;
                            const int8_t *w = w0 + fy * f_row + fx * fc;
                            if (wide) acc += (uint64_t)dot64(x, w, run);
                            else acc32 += dot32(x, w, run);
                        }
                    }
                    o[oc] = output(wide ? acc : (uint64_t)(int64_t)(int32_t)acc32, bias[oc], mult[oc], shift[oc],
                                   requant32, lo, hi);
                }
                if (stage) memcpy(out + (((size_t)b * out_h + oy) * out_w + ox) * out_c, staged, sizeof(int16_t) * out_c);
            }
        }
    }
}
