/* DEPTHWISE_CONV_2D, int8 with per-channel requantization: output channel c * depth_multiplier + m filters input
 * channel c.
 *
 * Output pixels in raster order; the sum runs over the window's valid taps, four channels at a time where the
 * depth multiplier is one (each tap then reads four adjacent input and filter bytes). Windows wholly
 * inside the input start from `bias_full` = bias + input_offset * sum(filter taps), so they multiply raw int8
 * values; cut windows add (x + input_offset) * w, as TFLM does, from the plain bias, derived once per call
 * into a stack array as bias_full - input_offset * sum(filter taps) (the same bits in wrapping int32 arithmetic).
 * The BIAS word is never read: it stays for the generated kernels, which take the same words, and an exported
 * program leaves it 0 (lower.UNREAD), so its flash holds one bias array per layer. `stage` finishes each pixel in
 * a stack buffer before storing it (for outputs the planner streams over the input).
 */
#include "mn_kernels.h"

enum { OUT, IN, FILTER, BIAS, BIAS_FULL, MULT, SHIFT, N, IN_H, IN_W, IN_C, OUT_H, OUT_W, DEPTH_MULT, F_H, F_W,
       S_H, S_W, D_H, D_W, PAD_T, PAD_L, IN_OFF, OUT_ZP, ACT_MIN, ACT_MAX, STAGE };

/* Four adjacent channels summed over rows x cols taps; inlined with offset 0 for whole windows. */
static inline void taps4(const int8_t *x, const int8_t *w, int rows, int cols, int x_step, int x_row, int w_step,
                         int w_row, int32_t off, uint32_t *acc) {
    uint32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
#if defined(__ARM_FEATURE_DSP) /* one word of four channels per tap; SMLAxy multiply-accumulate one lane each */
    const uint32_t off2 = ((uint32_t)off & 0xFFFFu) * 0x10001u; /* x + off fits an int16 lane */
    for (int r = 0; r < rows; r++, x += x_row, w += w_row) {
        const int8_t *xp = x, *wp = w;
        for (int k = 0; k < cols; k++, xp += x_step, wp += w_step) {
            const uint32_t v = mn_word4(xp), f = mn_word4(wp), fe = MN_EVEN(f), fo = MN_ODD(f);
            uint32_t ve = MN_EVEN(v), vo = MN_ODD(v);
            if (off) ve = (uint32_t)__builtin_arm_sadd16((int32_t)ve, (int32_t)off2),
                     vo = (uint32_t)__builtin_arm_sadd16((int32_t)vo, (int32_t)off2);
            a0 = (uint32_t)__builtin_arm_smlabb((int32_t)ve, (int32_t)fe, (int32_t)a0);
            a1 = (uint32_t)__builtin_arm_smlabb((int32_t)vo, (int32_t)fo, (int32_t)a1);
            a2 = (uint32_t)__builtin_arm_smlatt((int32_t)ve, (int32_t)fe, (int32_t)a2);
            a3 = (uint32_t)__builtin_arm_smlatt((int32_t)vo, (int32_t)fo, (int32_t)a3);
        }
    }
#else
    for (int r = 0; r < rows; r++, x += x_row, w += w_row) {
        const int8_t *xp = x, *wp = w;
        for (int k = 0; k < cols; k++, xp += x_step, wp += w_step) {
            a0 += (uint32_t)((xp[0] + off) * wp[0]);
            a1 += (uint32_t)((xp[1] + off) * wp[1]);
            a2 += (uint32_t)((xp[2] + off) * wp[2]);
            a3 += (uint32_t)((xp[3] + off) * wp[3]);
        }
    }
#endif
    acc[0] = a0, acc[1] = a1, acc[2] = a2, acc[3] = a3;
}

/* bias[c] = bias_full[c] - in_off * the sum of channel c's taps (filter: taps rows of out_c channels). */
__attribute__((noinline)) static void plain_bias(int32_t *bias, const int32_t *bias_full, const int8_t *filter,
                                                 int taps, int out_c, int32_t in_off) {
    for (int c = 0; c < out_c; c++) {
        uint32_t a = (uint32_t)bias_full[c];
        for (int t = 0; t < taps; t++) a -= (uint32_t)(in_off * filter[t * out_c + c]);
        bias[c] = (int32_t)a;
    }
}

void mn_depthwise_conv_2d_s8(const mn_word *args) {
    int8_t *out = MN_P(int8_t, OUT);
    const int8_t *in = MN_P(const int8_t, IN), *filter = MN_P(const int8_t, FILTER);
    const int32_t *bias_full = MN_P(const int32_t, BIAS_FULL);
    const int32_t *mult = MN_P(const int32_t, MULT);
    const int8_t *shift = MN_P(const int8_t, SHIFT); /* int8 per channel (lower._requant_args) */
    const int n = MN_I(N), in_h = MN_I(IN_H), in_w = MN_I(IN_W), in_c = MN_I(IN_C);
    const int out_h = MN_I(OUT_H), out_w = MN_I(OUT_W), depth_mult = MN_DW_TAIL ? MN_I(DEPTH_MULT) : 1;
    const int fh = MN_I(F_H), fw = MN_I(F_W), sh = MN_I(S_H), sw = MN_I(S_W), dh = MN_DILATION ? MN_I(D_H) : 1;
    const int dw = MN_DILATION ? MN_I(D_W) : 1, pad_t = MN_I(PAD_T), pad_l = MN_I(PAD_L);
    const int stage = MN_STAGE ? MN_I(STAGE) : 0;
    const int32_t in_off = MN_I(IN_OFF), out_zp = MN_I(OUT_ZP), lo = MN_I(ACT_MIN), hi = MN_I(ACT_MAX);
    const int out_c = in_c * depth_mult;
    const int x_step = dw * in_c, x_row = dh * in_w * in_c, w_step = out_c, w_row = fw * out_c;
    int8_t staged[stage ? out_c : 1];
    /* the plain bias, needed only where the border cuts some window */
    const int cut = pad_t > 0 || pad_l > 0 || (out_h - 1) * sh - pad_t + (fh - 1) * dh >= in_h ||
                    (out_w - 1) * sw - pad_l + (fw - 1) * dw >= in_w;
    int32_t bias[cut ? out_c : 1];
    if (cut) plain_bias(bias, bias_full, filter, fh * fw, out_c, in_off);

    for (int b = 0; b < n; b++) {
        const int8_t *image = in + (size_t)b * in_h * in_w * in_c;
        for (int oy = 0; oy < out_h; oy++) {
            const int iy0 = oy * sh - pad_t;
            int fy0, fy1;
            mn_valid_taps(iy0, dh, in_h, fh, &fy0, &fy1);
            for (int ox = 0; ox < out_w; ox++) {
                const int ix0 = ox * sw - pad_l;
                int fx0, fx1;
                mn_valid_taps(ix0, dw, in_w, fw, &fx0, &fx1);
                const int full = fy0 == 0 && fy1 == fh && fx0 == 0 && fx1 == fw, cols = fx1 - fx0;
                const int8_t *x_first = image + ((size_t)(iy0 + fy0 * dh) * in_w + ix0 + fx0 * dw) * in_c;
                const int8_t *w_first = filter + (fy0 * fw + fx0) * out_c;
                int8_t *o = stage ? staged : out + (((size_t)b * out_h + oy) * out_w + ox) * out_c;
                int oc = 0;
                for (; depth_mult == 1 && oc + 4 <= out_c; oc += 4) {
                    const int32_t *b4 = (full ? bias_full : bias) + oc;
                    uint32_t acc[4] = {(uint32_t)b4[0], (uint32_t)b4[1], (uint32_t)b4[2], (uint32_t)b4[3]};
                    if (full) taps4(x_first + oc, w_first + oc, fh, fw, x_step, x_row, w_step, w_row, 0, acc);
                    else taps4(x_first + oc, w_first + oc, fy1 - fy0, cols, x_step, x_row, w_step, w_row, in_off, acc);
                    for (int i = 0; i < 4; i++)
                        o[oc + i] = mn_requant_s8((int32_t)acc[i], mult[oc + i], shift[oc + i], out_zp, lo, hi);
                }
                for (; MN_DW_TAIL && oc < out_c; oc++) {
                    const int8_t *xr = x_first + oc / depth_mult, *wr = w_first + oc;
                    uint32_t acc = (uint32_t)(full ? bias_full[oc] : bias[oc]);
                    const int32_t off = full ? 0 : in_off;
                    for (int fy = fy0; fy < fy1; fy++, xr += x_row, wr += w_row) {
                        const int8_t *x = xr, *w = wr;
                        for (int k = 0; k < cols; k++, x += x_step, w += w_step) acc += (uint32_t)((*x + off) * *w);
                    }
                    o[oc] = mn_requant_s8((int32_t)acc, mult[oc], shift[oc], out_zp, lo, hi);
                }
                if (stage) memcpy(out + (((size_t)b * out_h + oy) * out_w + ox) * out_c, staged, (size_t)out_c);
            }
        }
    }
}
