/* DEPTHWISE_CONV_2D, int16x8: int16 activations, int8 weights, int64 bias (zeros when the model has none).
 *
 * Output channel c * depth_multiplier + m filters input channel c; four adjacent channels at a time where the
 * depth multiplier is one and the sums fit int32. As in TFLM's 16x8 kernel the zero points are
 * ignored, so windows cut by the padding skip their outside taps. Each window's sum is exact: int32 where the
 * lowering proved it cannot overflow (`wide` = 0), int64 otherwise; then TFLM's 64-bit requantization with the
 * Q15 multiplier and total right shift the lowering precomputes. `stage` finishes each pixel in a stack buffer
 * before storing it (for outputs the planner streams over the input).
 */
#include "mn_kernels.h"

/* clang unrolls the multi-accumulator loops below until the M4 runs out of registers and spills every step */
#if defined(__clang__)
#define MN_S16_NO_UNROLL _Pragma("clang loop unroll(disable)")
#else
#define MN_S16_NO_UNROLL
#endif

enum { OUT, IN, FILTER, BIAS, MULT, SHIFT, N, IN_H, IN_W, IN_C, OUT_H, OUT_W, DEPTH_MULT, F_H, F_W, S_H, S_W, D_H,
       D_W, PAD_T, PAD_L, ACT_MIN, ACT_MAX, WIDE, STAGE };

/* Four adjacent channels (depth multiplier 1) summed over rows x cols taps, in int32 (the lowering proved the
 * sums fit). */
static inline void taps4(const int16_t *x, const int8_t *w, int rows, int cols, int x_step, int x_row, int w_step,
                         int w_row, int32_t *acc) {
    int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    for (int r = 0; r < rows; r++, x += x_row, w += w_row) {
        const int16_t *xp = x;
        const int8_t *wp = w;
        MN_S16_NO_UNROLL
        for (int k = 0; k < cols; k++, xp += x_step, wp += w_step) {
            a0 += xp[0] * wp[0];
            a1 += xp[1] * wp[1];
            a2 += xp[2] * wp[2];
            a3 += xp[3] * wp[3];
        }
    }
    acc[0] = a0, acc[1] = a1, acc[2] = a2, acc[3] = a3;
}

void mn_depthwise_conv_2d_s16(const mn_word *args) {
    int16_t *out = MN_P(int16_t, OUT);
    const int16_t *in = MN_P(const int16_t, IN);
    const int8_t *filter = MN_P(const int8_t, FILTER);
    const int64_t *bias = MN_P(const int64_t, BIAS);
    const int32_t *mult = MN_P(const int32_t, MULT), *shift = MN_P(const int32_t, SHIFT);
    const int n = MN_I(N), in_h = MN_I(IN_H), in_w = MN_I(IN_W), in_c = MN_I(IN_C);
    const int out_h = MN_I(OUT_H), out_w = MN_I(OUT_W), depth_mult = MN_I(DEPTH_MULT);
    const int fh = MN_I(F_H), fw = MN_I(F_W), sh = MN_I(S_H), sw = MN_I(S_W), dh = MN_I(D_H), dw = MN_I(D_W);
    const int pad_t = MN_I(PAD_T), pad_l = MN_I(PAD_L), wide = MN_I(WIDE), stage = MN_I(STAGE);
    const int32_t lo = MN_I(ACT_MIN), hi = MN_I(ACT_MAX);
    const int out_c = in_c * depth_mult;
    const int x_step = dw * in_c, x_row = dh * in_w * in_c, w_step = out_c, w_row = fw * out_c;
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
                const int rows = fy1 - fy0, cols = fx1 - fx0;
                const int16_t *x_first = image + ((size_t)(iy0 + fy0 * dh) * in_w + ix0 + fx0 * dw) * in_c;
                const int8_t *w_first = filter + (fy0 * fw + fx0) * out_c;
                int16_t *o = stage ? staged : out + (((size_t)b * out_h + oy) * out_w + ox) * out_c;
                int oc = 0;
                for (; !wide && depth_mult == 1 && oc + 4 <= out_c; oc += 4) {
                    int32_t acc[4];
                    taps4(x_first + oc, w_first + oc, rows, cols, x_step, x_row, w_step, w_row, acc);
                    for (int i = 0; i < 4; i++)
                        o[oc + i] = (int16_t)mn_clamp(mn_requant_q15((uint64_t)(int64_t)acc[i] + (uint64_t)bias[oc + i],
                                                                  mult[oc + i], shift[oc + i]), lo, hi);
                }
                for (; oc < out_c; oc++) {
                    const int16_t *xr = x_first + oc / depth_mult;
                    const int8_t *wr = w_first + oc;
                    uint64_t acc;
                    if (wide) {
                        int64_t a = 0;
                        for (int r = 0; r < rows; r++, xr += x_row, wr += w_row)
                            for (int k = 0; k < cols; k++) a += xr[k * x_step] * wr[k * w_step];
                        acc = (uint64_t)a;
                    } else {
                        int32_t a = 0; /* cannot overflow: the lowering bounded |sum| by 32768 * sum |w| */
                        for (int r = 0; r < rows; r++, xr += x_row, wr += w_row)
                            for (int k = 0; k < cols; k++) a += xr[k * x_step] * wr[k * w_step];
                        acc = (uint64_t)(int64_t)a;
                    }
                    o[oc] = (int16_t)mn_clamp(mn_requant_q15(acc + (uint64_t)bias[oc], mult[oc], shift[oc]), lo, hi);
                }
                if (stage) memcpy(out + (((size_t)b * out_h + oy) * out_w + ox) * out_c, staged, sizeof(int16_t) * out_c);
            }
        }
    }
}
