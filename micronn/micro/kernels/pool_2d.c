/* AVERAGE_POOL_2D and MAX_POOL_2D, int8: one window walk, two reductions over the taps inside the input.
 *
 * Average: the mean rounded half away from zero; max: the largest tap. Both clamp to the activation range.
 * Output pixels in raster order; `stage` finishes each pixel in a stack buffer before storing it (for outputs
 * the planner streams over the input).
 */
#include "mn_kernels.h"

enum { OUT, IN, N, IN_H, IN_W, C, OUT_H, OUT_W, F_H, F_W, S_H, S_W, PAD_T, PAD_L, ACT_MIN, ACT_MAX, STAGE };

/* `average` is a constant at each call site, so the compiler keeps one specialised loop per op. */
static inline void pool(const mn_word *args, const int average) {
    int8_t *out = MN_P(int8_t, OUT);
    const int8_t *in = MN_P(const int8_t, IN);
    const int n = MN_I(N), in_h = MN_I(IN_H), in_w = MN_I(IN_W), c = MN_I(C), out_h = MN_I(OUT_H);
    const int out_w = MN_I(OUT_W), fh = MN_I(F_H), fw = MN_I(F_W), sh = MN_I(S_H), sw = MN_I(S_W);
    const int pad_t = MN_I(PAD_T), pad_l = MN_I(PAD_L), stage = MN_I(STAGE);
    const int32_t lo = MN_I(ACT_MIN), hi = MN_I(ACT_MAX);
    int8_t staged[stage ? c : 1];

    for (int b = 0; b < n; b++) {
        for (int oy = 0; oy < out_h; oy++) {
            const int y0 = mn_max(oy * sh - pad_t, 0), y1 = mn_min(oy * sh - pad_t + fh, in_h);
            for (int ox = 0; ox < out_w; ox++) {
                const int x0 = mn_max(ox * sw - pad_l, 0), x1 = mn_min(ox * sw - pad_l + fw, in_w);
                const int32_t count = (y1 - y0) * (x1 - x0), half = count / 2;
                const int8_t *window = in + (((size_t)b * in_h + y0) * in_w + x0) * c;
                int8_t *o = stage ? staged : out + (((size_t)b * out_h + oy) * out_w + ox) * c;
                for (int ch = 0; ch < c; ch++) {
                    int32_t acc = average ? 0 : -128;
                    for (int y = 0; y < y1 - y0; y++) {
                        const int8_t *x = window + (size_t)y * in_w * c + ch;
                        if (average) {
                            for (int k = 0; k < x1 - x0; k++) acc += x[k * c];
                        } else {
                            for (int k = 0; k < x1 - x0; k++) acc = mn_max(acc, x[k * c]);
                        }
                    }
                    if (average) acc = acc > 0 ? (acc + half) / count : (acc - half) / count;
                    o[ch] = (int8_t)mn_clamp(acc, lo, hi);
                }
                if (stage) memcpy(out + (((size_t)b * out_h + oy) * out_w + ox) * c, staged, (size_t)c);
            }
        }
    }
}

void mn_average_pool_2d_s8(const mn_word *args) { pool(args, 1); }

void mn_max_pool_2d_s8(const mn_word *args) { pool(args, 0); }
