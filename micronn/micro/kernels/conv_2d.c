/* CONV_2D, int8 with per-channel (or per-tensor) requantization, grouped when the filter is thinner than the input.
 *
 * Output pixels in raster order, each pixel's channels four (else two) at a time: every input byte loaded once
 * feeds several filters. A window lying wholly inside the input starts from `bias_full` = bias + input_offset * sum(filter),
 * so its inner loop is a plain int8 dot product; windows cut by the padding add (x + input_offset) * w over
 * their valid taps only, as TFLM does. With `stage` set (the planner streams the output over the input),
 * each pixel is finished in a stack buffer before it is stored.
 */
#include "mn_kernels.h"

enum { OUT, IN, FILTER, BIAS, BIAS_FULL, MULT, SHIFT, N, IN_H, IN_W, IN_C, OUT_H, OUT_W, OUT_C, F_H, F_W, F_C,
       S_H, S_W, D_H, D_W, PAD_T, PAD_L, IN_OFF, OUT_ZP, ACT_MIN, ACT_MAX, STAGE };

void mn_conv_2d_s8(const mn_word *args) {
    int8_t *out = MN_P(int8_t, OUT);
    const int8_t *in = MN_P(const int8_t, IN), *filter = MN_P(const int8_t, FILTER);
    const int32_t *bias = MN_P(const int32_t, BIAS), *bias_full = MN_P(const int32_t, BIAS_FULL);
    const int32_t *mult = MN_P(const int32_t, MULT);
    const int8_t *shift = MN_P(const int8_t, SHIFT); /* int8 per channel (lower._requant_args) */
    const int n = MN_I(N), in_h = MN_I(IN_H), in_w = MN_I(IN_W), in_c = MN_I(IN_C);
    const int out_h = MN_I(OUT_H), out_w = MN_I(OUT_W), out_c = MN_I(OUT_C);
    const int fh = MN_I(F_H), fw = MN_I(F_W), fc = MN_I(F_C), sh = MN_I(S_H), sw = MN_I(S_W);
    const int dh = MN_DILATION ? MN_I(D_H) : 1, dw = MN_DILATION ? MN_I(D_W) : 1; /* paths: mn_kernels.h */
    const int pad_t = MN_I(PAD_T), pad_l = MN_I(PAD_L), stage = MN_STAGE ? MN_I(STAGE) : 0;
    const int32_t in_off = MN_I(IN_OFF), out_zp = MN_I(OUT_ZP), lo = MN_I(ACT_MIN), hi = MN_I(ACT_MAX);
    const int groups = MN_CONV_GROUPS ? in_c / fc : 1, per_group = out_c / groups;
    const int f_row = fw * fc, f_size = fh * f_row;
    const int contiguous = dw == 1 && groups == 1; /* one filter row reads one contiguous run of input */
    int8_t staged[stage ? out_c : 1];

    for (int b = 0; b < n; b++) {
        const int8_t *image = in + (size_t)b * in_h * in_w * in_c;
        for (int oy = 0; oy < out_h; oy++) {
            const int iy0 = oy * sh - pad_t;
            int fy0 = 0, fy1 = fh;
            if (MN_CONV_CUT) mn_valid_taps(iy0, dh, in_h, fh, &fy0, &fy1);
            for (int ox = 0; ox < out_w; ox++) {
                const int ix0 = ox * sw - pad_l;
                int fx0 = 0, fx1 = fw;
                if (MN_CONV_CUT) mn_valid_taps(ix0, dw, in_w, fw, &fx0, &fx1);
                const int full = fy0 == 0 && fy1 == fh && fx0 == 0 && fx1 == fw;
                const int run = contiguous ? (fx1 - fx0) * fc : fc, runs = contiguous ? 1 : fx1 - fx0;
                int8_t *o = stage ? staged : out + (((size_t)b * out_h + oy) * out_w + ox) * out_c;
                int oc = 0;
                for (; oc + 4 <= out_c && oc % per_group + 4 <= per_group; oc += 4) { /* four channels, one group */
                    const int8_t *x_group = image + (oc / per_group) * fc, *w0 = filter + (size_t)oc * f_size;
                    const int32_t *b4 = (full ? bias_full : bias) + oc;
                    uint32_t acc[4] = {(uint32_t)b4[0], (uint32_t)b4[1], (uint32_t)b4[2], (uint32_t)b4[3]};
                    for (int fy = fy0; fy < fy1; fy++) {
                        const int8_t *x_row = x_group + (size_t)(iy0 + fy * dh) * in_w * in_c;
                        for (int fx = fx0; fx < fx0 + runs; fx++)
                            mn_dot4_s8(x_row + (ix0 + fx * dw) * in_c, w0 + fy * f_row + fx * fc, f_size, run,
                                       full ? 0 : in_off, acc);
                    }
                    for (int i = 0; i < 4; i++)
                        o[oc + i] = mn_requant_s8((int32_t)acc[i], mult[oc + i], shift[oc + i], out_zp, lo, hi);
                }
                while (oc < out_c) {
                    const int8_t *x_group = image + (oc / per_group) * fc;
                    const int8_t *w0 = filter + (size_t)oc * f_size;
                    const int pair = !MN_CONV_ONE || (full && oc + 1 < out_c && (oc + 1) % per_group != 0);
                    int32_t a0 = full ? bias_full[oc] : bias[oc], a1 = pair ? bias_full[oc + 1] : 0;
                    for (int fy = fy0; fy < fy1; fy++) {
                        const int8_t *x_row = x_group + (size_t)(iy0 + fy * dh) * in_w * in_c;
                        for (int r = 0; r < runs; r++) {
                            const int fx = fx0 + r;
                            const int8_t *x = x_row + (ix0 + fx * dw) * in_c, *w = w0 + fy * f_row + fx * fc;
                            if (pair) mn_dot2_s8(x, w, w + f_size, run, &a0, &a1);
                            else if (full) a0 = mn_dot_s8(x, w, run, a0);
                            else a0 = mn_dot_off_s8(x, w, run, in_off, a0);
                        }
                    }
                    o[oc] = mn_requant_s8(a0, mult[oc], shift[oc], out_zp, lo, hi);
                    if (pair) o[oc + 1] = mn_requant_s8(a1, mult[oc + 1], shift[oc + 1], out_zp, lo, hi);
                    oc += pair ? 2 : 1;
                }
                if (stage) memcpy(out + (((size_t)b * out_h + oy) * out_w + ox) * out_c, staged, (size_t)out_c);
            }
        }
    }
}
