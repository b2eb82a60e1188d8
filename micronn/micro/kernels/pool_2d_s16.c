/* AVERAGE_POOL_2D and MAX_POOL_2D, int16: one window walk, two reductions over the taps inside the input.
 *
 * Average: the exact sum (int32 while a window of int16 values cannot overflow it, int64 beyond), then the mean
 * rounded half away from zero with C's truncating division; max: the largest tap. Both clamp to the activation
 * range. `stage` finishes each pixel in a stack buffer before storing it (for outputs the planner streams over
 * the input).
 */
#include "mn_kernels.h"

enum { OUT, IN, N, IN_H, IN_W, C, OUT_H, OUT_W, F_H, F_W, S_H, S_W, PAD_T, PAD_L, ACT_MIN, ACT_MAX, STAGE };

/* The rounded mean of a window's `count` taps summed in int64 (for windows too large for int32 sums); the mean of
 * int16 values is one. */
static int32_t mean64(const int16_t *window, int rows, int cols, int row_step, int c, int32_t count) {
    int64_t acc = 0;
    for (int y = 0; y < rows; y++)
        for (int k = 0; k < cols; k++) acc += window[(size_t)y * row_step + (size_t)k * c];
    const int64_t half = count / 2;
    return (int32_t)(acc > 0 ? (acc + half) / count : (acc - half) / count);
}

/* `average` is a constant at each call site, so the compiler keeps one specialised loop per op. */
static inline void pool(const mn_word *args, const int average) {
    int16_t *out = MN_P(int16_t, OUT);
    const int16_t *in = MN_P(const int16_t, IN);
    const int n = MN_I(N), in_h = MN_I(IN_H), in_w = MN_I(IN_W), c = MN_I(C), out_h = MN_I(OUT_H);
    const int out_w = MN_I(OUT_W), fh = MN_I(F_H), fw = MN_I(F_W), sh = MN_I(S_H), sw = MN_I(S_W);
    const int pad_t = MN_I(PAD_T), pad_l = MN_I(PAD_L), stage = MN_I(STAGE);
    const int32_t lo = MN_I(ACT_MIN), hi = MN_I(ACT_MAX);
    /* |sum| + count / 2 of up to 32768 taps of int16 values stays within int32 */
    const int narrow = (int64_t)fh * fw <= 32768;
    int16_t staged[stage ? c : 1];

    for (int b = 0; b < n; b++) {
        for (int oy = 0; oy < out_h; oy++) {
            const int y0 = mn_max(oy * sh - pad_t, 0), y1 = mn_min(oy * sh - pad_t + fh, in_h);
            for (int ox = 0; ox < out_w; ox++) {
                const int x0 = mn_max(ox * sw - pad_l, 0), x1 = mn_min(ox * sw - pad_l + fw, in_w);
                const int32_t count = (y1 - y0) * (x1 - x0), half = count / 2;
                const int16_t *window = in + (((size_t)b * in_h + y0) * in_w + x0) * c;
                int16_t *o = stage ? staged : out + (((size_t)b * out_h + oy) * out_w + ox) * c;
                for (int ch = 0; ch < c; ch++) {
                    int32_t acc = average ? 0 : -32768;
                    if (average && !narrow) {
                        acc = mean64(window + ch, y1 - y0, x1 - x0, in_w * c, c, count);
                    } else {
                        for (int y = 0; y < y1 - y0; y++) {
                            const int16_t *x = window + (size_t)y * in_w * c + ch;
                            if (average) {
                                for (int k = 0; k < x1 - x0; k++) acc += x[k * c];
                            } else {
                                for (int k = 0; k < x1 - x0; k++) acc = mn_max(acc, x[k * c]);
                            }
                        }
                        if (average) acc = acc > 0 ? (acc + half) / count : (acc - half) / count;
                    }
                    o[ch] = (int16_t)mn_clamp(acc, lo, hi);
                }
                if (stage) memcpy(out + (((size_t)b * out_h + oy) * out_w + ox) * c, staged, sizeof(int16_t) * c);
            }
        }
    }
}

void mn_average_pool_2d_s16(const mn_word *args) { pool(args, 1); }

void mn_max_pool_2d_s16(const mn_word *args) { pool(args, 0); }
