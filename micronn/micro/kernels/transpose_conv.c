/* TRANSPOSE_CONV, int8 with per-channel requantization, one band of output rows at a time.
 *
 * The int32 scratch holds `band_rows` output rows (all batches): whatever the Python kernel asked for (the whole
 * output when the plan must be TFLM's, one row otherwise). For each output row of the band, every filter row fy
 * that lands on it names one input row; each input pixel of that row scatters W[:, fy, fx, :] . (x + offset)
 * into the output pixels its taps fx reach. The band is then requantized with the bias, as TFLM does with its
 * whole-output scratch: the integer sums are the same whatever the order.
 */
#include "mn_kernels.h"

enum { OUT, IN, FILTER, BIAS, MULT, SHIFT, SCRATCH, BAND_ROWS, N, IN_H, IN_W, IN_C, OUT_H, OUT_W, OUT_C, F_H, F_W,
       S_H, S_W, PAD_T, PAD_L, IN_OFF, OUT_ZP, ACT_MIN, ACT_MAX };

void mn_transpose_conv_s8(const mn_word *args) {
    int8_t *out = MN_P(int8_t, OUT);
    const int8_t *in = MN_P(const int8_t, IN), *filter = MN_P(const int8_t, FILTER);
    const int32_t *bias = MN_P(const int32_t, BIAS), *mult = MN_P(const int32_t, MULT);
    const int32_t *shift = MN_P(const int32_t, SHIFT);
    int32_t *scratch = MN_P(int32_t, SCRATCH);
    const int band_rows = MN_I(BAND_ROWS), n = MN_I(N), in_h = MN_I(IN_H), in_w = MN_I(IN_W), in_c = MN_I(IN_C);
    const int out_h = MN_I(OUT_H), out_w = MN_I(OUT_W), out_c = MN_I(OUT_C), fh = MN_I(F_H), fw = MN_I(F_W);
    const int sh = MN_I(S_H), sw = MN_I(S_W), pad_t = MN_I(PAD_T), pad_l = MN_I(PAD_L);
    const int32_t in_off = MN_I(IN_OFF), out_zp = MN_I(OUT_ZP), lo = MN_I(ACT_MIN), hi = MN_I(ACT_MAX);
    const size_t row = (size_t)out_w * out_c, f_size = (size_t)fh * fw * in_c;

    for (int y0 = 0; y0 < out_h; y0 += band_rows) {
        const int rows = mn_min(band_rows, out_h - y0);
        memset(scratch, 0, (size_t)n * rows * row * sizeof(int32_t));
        for (int b = 0; b < n; b++) {
            for (int r = 0; r < rows; r++) {
                int32_t *acc_row = scratch + ((size_t)b * rows + r) * row;
                for (int fy = 0; fy < fh; fy++) {
                    const int t = y0 + r + pad_t - fy; /* = iy * stride_h for the input row iy feeding this tap */
                    if (t < 0 || t % sh || t / sh >= in_h) continue;
                    const int8_t *x_row = in + (((size_t)b * in_h + t / sh) * in_w) * in_c;
                    for (int ix = 0; ix < in_w; ix++) {
                        for (int fx = 0; fx < fw; fx++) {
                            const int ox = ix * sw - pad_l + fx;
                            if (ox < 0 || ox >= out_w) continue;
                            const int8_t *x = x_row + (size_t)ix * in_c, *w = filter + ((size_t)fy * fw + fx) * in_c;
                            int32_t *acc = acc_row + (size_t)ox * out_c;
                            for (int oc = 0; oc < out_c; oc++, w += f_size)
                                acc[oc] = mn_dot_off_s8(x, w, in_c, in_off, acc[oc]);
                        }
                    }
                }
            }
        }
        for (int b = 0; b < n; b++) {
            const int32_t *acc = scratch + (size_t)b * rows * row;
            int8_t *o = out + ((size_t)b * out_h + y0) * row;
            for (int p = 0; p < rows * out_w; p++, acc += out_c, o += out_c)
                for (int oc = 0; oc < out_c; oc++)
                    o[oc] = mn_requant_s8(mn_wrap_add(acc[oc], bias[oc]), mult[oc], shift[oc], out_zp, lo, hi);
        }
    }
}
