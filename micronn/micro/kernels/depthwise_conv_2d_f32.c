/* DEPTHWISE_CONV_2D, float32: output channel c * multiplier + m filters input channel c.
 *
 * Each output value sums its taps in the reference's order (filter_y, filter_x), skipping taps in the padding,
 * one float32 rounding per product and per addition, then adds the bias (bias + total: a NaN bias wins). With
 * `stage` set, each output pixel is finished in a stack buffer before it is stored.
 */
#include "mn_f32.h"

enum { OUT, IN, FILTER, BIAS, N, IN_H, IN_W, IN_C, OUT_H, OUT_W, MULT, F_H, F_W, S_H, S_W, D_H, D_W, PAD_T, PAD_L,
       ACT_MIN, ACT_MAX, STAGE };

void mn_depthwise_conv_2d_f32(const mn_word *args) {
    float *out = MN_P(float, OUT);
    const float *in = MN_P(const float, IN), *filter = MN_P(const float, FILTER), *bias = MN_P(const float, BIAS);
    const int n = MN_I(N), in_h = MN_I(IN_H), in_w = MN_I(IN_W), in_c = MN_I(IN_C);
    const int out_h = MN_I(OUT_H), out_w = MN_I(OUT_W), mult = MN_I(MULT), out_c = in_c * mult;
    const int fh = MN_I(F_H), fw = MN_I(F_W), sh = MN_I(S_H), sw = MN_I(S_W);
    const int dh = MN_I(D_H), dw = MN_I(D_W), pad_t = MN_I(PAD_T), pad_l = MN_I(PAD_L), stage = MN_I(STAGE);
    const float lo = mn_f32_arg(args, ACT_MIN), hi = mn_f32_arg(args, ACT_MAX);
    float staged[stage ? out_c : 1];

    for (int b = 0; b < n; b++) {
        const float *image = in + (size_t)b * in_h * in_w * in_c;
        for (int oy = 0; oy < out_h; oy++) {
            const int iy0 = oy * sh - pad_t;
            int fy0, fy1;
            mn_f32_taps(iy0, dh, in_h, fh, &fy0, &fy1);
            for (int ox = 0; ox < out_w; ox++) {
                const int ix0 = ox * sw - pad_l;
                int fx0, fx1;
                mn_f32_taps(ix0, dw, in_w, fw, &fx0, &fx1);
                float *o = stage ? staged : out + (((size_t)b * out_h + oy) * out_w + ox) * out_c;
                for (int oc = 0, ic = 0, m = 0; oc < out_c; oc++) { /* oc = ic * mult + m */
                    const float *x_ch = image + ic;
                    float total = 0.0f;
                    for (int fy = fy0; fy < fy1; fy++) {
                        const float *x_row = x_ch + (size_t)(iy0 + fy * dh) * in_w * in_c;
                        const float *w_row = filter + (size_t)fy * fw * out_c + oc;
                        for (int fx = fx0; fx < fx1; fx++)
                            total = mn_f32_mac(total, x_row[(size_t)(ix0 + fx * dw) * in_c], w_row[(size_t)fx * out_c]);
                    }
                    if (bias) total = bias[oc] + total;
                    o[oc] = mn_f32_clamp(total, lo, hi);
                    if (++m == mult) ic++, m = 0;
                }
                if (stage) memcpy(out + (((size_t)b * out_h + oy) * out_w + ox) * out_c, staged, sizeof(float) * out_c);
            }
        }
    }
}
