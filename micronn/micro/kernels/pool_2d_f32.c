/* AVERAGE_POOL_2D and MAX_POOL_2D, float32: one window walk over the taps inside the input, in the reference's
 * order (row by row).
 *
 * Average: the float32 sum from +0.0, divided in float32 by the number of taps inside the input. Max: the running
 * maximum from -FLT_MAX, replaced only when it is less than the tap (NaN taps never win, the first of equal zeros
 * stays). Both clamp to the activation range. `stage` finishes each output pixel in a stack buffer before it is
 * stored (for outputs the planner streams over the input).
 */
#include "mn_f32.h"

enum { OUT, IN, N, IN_H, IN_W, C, OUT_H, OUT_W, F_H, F_W, S_H, S_W, PAD_T, PAD_L, ACT_MIN, ACT_MAX, STAGE };

/* `average` is a constant at each call site, so the compiler keeps one specialised loop per op. */
static inline void pool(const mn_word *args, const int average) {
    float *out = MN_P(float, OUT);
    const float *in = MN_P(const float, IN);
    const int n = MN_I(N), in_h = MN_I(IN_H), in_w = MN_I(IN_W), c = MN_I(C), out_h = MN_I(OUT_H);
    const int out_w = MN_I(OUT_W), fh = MN_I(F_H), fw = MN_I(F_W), sh = MN_I(S_H), sw = MN_I(S_W);
    const int pad_t = MN_I(PAD_T), pad_l = MN_I(PAD_L), stage = MN_I(STAGE);
    const float lo = mn_f32_arg(args, ACT_MIN), hi = mn_f32_arg(args, ACT_MAX);
    float staged[stage ? c : 1];

    for (int b = 0; b < n; b++) {
        for (int oy = 0; oy < out_h; oy++) {
            const int iy0 = oy * sh - pad_t;
            int y0, y1;
            mn_f32_taps(iy0, 1, in_h, fh, &y0, &y1);
            for (int ox = 0; ox < out_w; ox++) {
                const int ix0 = ox * sw - pad_l;
                int x0, x1;
                mn_f32_taps(ix0, 1, in_w, fw, &x0, &x1);
                float *o = stage ? staged : out + (((size_t)b * out_h + oy) * out_w + ox) * c;
                for (int ch = 0; ch < c; ch++) {
                    float acc = average ? 0.0f : MN_F32_LOWEST;
                    for (int y = y0; y < y1; y++) {
                        const float *x = in + (((size_t)b * in_h + iy0 + y) * in_w + ix0 + x0) * c + ch;
                        for (int k = 0; k < x1 - x0; k++) {
                            const float v = x[(size_t)k * c];
                            if (average) acc = acc + v;
                            else if (acc < v) acc = v;
                        }
                    }
                    if (average) {
                        const float count = (float)((y1 - y0) * (x1 - x0));
                        acc = acc / count;
                    }
                    o[ch] = mn_f32_clamp(acc, lo, hi);
                }
                if (stage) memcpy(out + (((size_t)b * out_h + oy) * out_w + ox) * c, staged, sizeof(float) * c);
            }
        }
    }
}

void mn_average_pool_2d_f32(const mn_word *args) { pool(args, 1); }

void mn_max_pool_2d_f32(const mn_word *args) { pool(args, 0); }
