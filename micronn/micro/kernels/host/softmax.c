/* SOFTMAX, int8 input: the host port of kernels/softmax.c, same symbol, same argument words (plain C).
 *
 * An int8 row's differences from its maximum lie in [-255, 0], so every exponential the portable kernel computes
 * (row_exp, and its Q12.19 rescaling for the sum) is one of 256 values of the call's constants: they are
 * tabulated once per call site and looked up, with the portable kernel's reciprocal and output steps around them.
 * A row of two values is a function of their difference alone (the maximum at 0, the other at -d, 0 <= d <= 255):
 * both outputs are tabulated by d with the same steps, so such a row is two lookups.
 */
#define mn_softmax_s8 mn_softmax_s8_portable
#include "softmax.portable.inc"
#undef mn_softmax_s8
#include "mn_host.h"

#if defined(MNH_AVX2)
typedef struct {
    int32_t e[256], sum[256]; /* index: max - x */
    int16_t pair[256][2];     /* depth 2: the outputs of the maximum and of the other value, by their difference */
} sm_table;

/* The portable kernel's output for a value at `diff` from its row's maximum, the row's sum of rescaled
 * exponentials being `sum` (the same steps, from the tables). */
static int32_t sm_out(const sm_table *p, uint32_t sum, int32_t diff, int32_t diff_min, int out_bits) {
    const int32_t lo = out_bits == 16 ? -32768 : -128, hi = out_bits == 16 ? 32767 : 127;
    const int headroom = mn_clz32(sum);
    const int32_t scale = mn_one_over_one_plus_x((int32_t)((headroom < 32 ? sum << headroom : 0u) - 0x80000000u));
    const int exponent = 12 - headroom + 31 - out_bits;
    if (diff < diff_min || exponent > 31) return lo;
    return mn_clamp(mn_rdbpot(mn_srdhm(scale, p->e[-diff]), exponent) + lo, lo, hi);
}

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
    if (MN_I(DEPTH) == 2) { /* a row of two is its maximum and a value d <= 255 below it (d = 0: two maxima) */
        const int32_t diff_min = MN_I(DIFF_MIN);
        for (int d = 0; d < 256; d++) {
            const uint32_t sum = (uint32_t)p->sum[0] + (-d >= diff_min ? (uint32_t)p->sum[d] : 0u);
            p->pair[d][0] = (int16_t)sm_out(p, sum, 0, diff_min, MN_I(OUT_BITS));
            p->pair[d][1] = (int16_t)sm_out(p, sum, -d, diff_min, MN_I(OUT_BITS));
        }
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
    if (depth == 2) { /* the pair table: each output by the row's difference */
        for (int r = 0; r < rows; r++) {
            const int32_t a = in[2 * r], b = in[2 * r + 1];
            const int16_t *t = p->pair[a >= b ? a - b : b - a];
            const int32_t ya = a >= b ? t[0] : t[1], yb = a >= b ? t[1] : t[0];
            if (out_bits == 16) {
                MN_P(int16_t, OUT)[2 * r] = (int16_t)ya, MN_P(int16_t, OUT)[2 * r + 1] = (int16_t)yb;
            } else {
                MN_P(int8_t, OUT)[2 * r] = (int8_t)ya, MN_P(int8_t, OUT)[2 * r + 1] = (int8_t)yb;
            }
        }
        return;
    }
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
