/* PAD / PADV2: the host port of kernels/pad.c, same symbol, same argument words (plain C: no vectors needed).
 *
 * The portable kernel copies one innermost row at a time, so an unpadded innermost axis of a few elements costs a
 * call per pixel. Here, while the innermost axis has no padding, it is merged into the next one (an unpadded row
 * of width w is w elements of that axis: shape, input shape and padding before all scale by w), then the portable
 * kernel runs on the merged shapes: the same bytes in the same order, in longer rows.
 */
#define mn_pad mn_pad_portable
#include "pad.portable.inc"
#undef mn_pad

void mn_pad(const mn_word *args) {
    mn_word a[BEFORE + 5];
    memcpy(a, args, sizeof a);
    for (int merged = 0; merged < 4 && a[OUT_SHAPE + 4] == a[IN_SHAPE + 4] && a[BEFORE + 4] == 0; merged++) {
        const mn_word w = a[OUT_SHAPE + 4];
        a[OUT_SHAPE + 4] = a[OUT_SHAPE + 3] * w, a[IN_SHAPE + 4] = a[IN_SHAPE + 3] * w;
        a[BEFORE + 4] = a[BEFORE + 3] * w;
        for (int d = 3; d > 0; d--)
            a[OUT_SHAPE + d] = a[OUT_SHAPE + d - 1], a[IN_SHAPE + d] = a[IN_SHAPE + d - 1], a[BEFORE + d] = a[BEFORE + d - 1];
        a[OUT_SHAPE] = 1, a[IN_SHAPE] = 1, a[BEFORE] = 0;
    }
    mn_pad_portable(a);
}
