/* SignalWindow, int16 (TFLM signal library): consecutive frames of `frame` samples, each multiplied element-wise by
 * the int16 window, the int32 product shifted right arithmetically by `shift` (a floor, no rounding) and saturated
 * to int16. Each element is read before it is written, so an output placed exactly over the input is fine.
 */
#include "mn_kernels.h"

enum { OUT, IN, WEIGHTS, COUNT, FRAME, SHIFT };

void mn_signal_window_s16(const mn_word *args) {
    int16_t *out = MN_P(int16_t, OUT);
    const int16_t *x = MN_P(const int16_t, IN), *w = MN_P(const int16_t, WEIGHTS);
    const int32_t count = MN_I(COUNT), frame = MN_I(FRAME);
    const int shift = (int)MN_I(SHIFT);
    for (int32_t start = 0; start < count; start += frame)
        for (int32_t i = 0; i < frame; i++) {
            const int32_t product = (int32_t)x[start + i] * w[i]; /* exact: |product| <= 2^30 */
            out[start + i] = (int16_t)mn_clamp(product >> shift, -32768, 32767);
        }
}
