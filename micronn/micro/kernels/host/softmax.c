/* SOFTMAX, int8 input: the host port of kernels/softmax.c, same symbol, same argument words (plain C).
 *
 * An int8 row's differences from its maximum lie in [-255, 0], so every exponential the portable kernel computes
 * (row_exp, and its Q12.19 rescaling for the sum) is one of 256 values of the call's constants: they are
 * tabulated once per call site and looked up, with the portable kernel's reciprocal and output steps around them.
 */
#define mn_softmax_s8 mn_softmax_s8_portable
#include "softmax.portable.inc"
#undef mn_softmax_s8
#include "mn_host.h"

#if defined(MNH_AVX2)
typedef struct { int32_t e[256], sum[256]; } sm_table; /* index: max - x */

static const sm_table *sm_prepare(const mn_word *args) {
    mnh_slot *slot;
    sm_table *p = (sm_table *)mnh_lookup(args, &slot);
    if (p) return p;
    p = (sm_table *)mnh_alloc(sizeof(sm_table));
    if (!p) return NULL;
    for (int k = 0; k < 256; k++) {
        p->e[k] = row_exp(-k, MN_I(MULT), MN_I(LEFT_SHIFT));
        p->sum[k] = mn_rescale(p->e[k], 0, 12);
    }
    mnh_keep(slot, args, p);
    return p;
}

void mn_softmax_s8(const mn_word *args) {
    const sm_table *p = sm_prepare(args);
    if (!p) {
        mn_softmax_s8_portable(args);
        return;
    }
    const int8_t *in = MN_P(const int8_t, IN);
    const int rows = MN_I(ROWS), depth = MN_I(DEPTH), out_bits = MN_I(OUT_BITS);
    const int32_t diff_min = MN_I(DIFF_MIN);
    const int32_t lo = out_bits == 16 ? -32768 : -128, hi = out_bits == 16 ? 32767 : 127;
    for (int r = 0; r < rows; r++) {
        const int8_t *x = in + (size_t)r * depth;
        int32_t max = -128;
        for (int i = 0; i < depth; i++) max = mn_max(max, x[i]);
        uint32_t sum = 0;
        for (int i = 0; i < depth; i++)
            if (x[i] - max >= diff_min) sum += (uint32_t)p->sum[max - x[i]];
        const int headroom = mn_clz32(sum);
        const int32_t scale = mn_one_over_one_plus_x((int32_t)((headroom < 32 ? sum << headroom : 0u) - 0x80000000u));
        const int exponent = 12 - headroom + 31 - out_bits;
        for (int i = 0; i < depth; i++) {
            int32_t y = lo;
            if (x[i] - max >= diff_min && exponent <= 31)
                y = mn_clamp(mn_rdbpot(mn_srdhm(scale, p->e[max - x[i]]), exponent) + lo, lo, hi);
            if (out_bits == 16) MN_P(int16_t, OUT)[(size_t)r * depth + i] = (int16_t)y;
            else MN_P(int8_t, OUT)[(size_t)r * depth + i] = (int8_t)y;
        }
    }
}
#else
void mn_softmax_s8(const mn_word *args) { mn_softmax_s8_portable(args); }
#endif
