/* FULLY_CONNECTED, float32: the host port (x86-64 with AVX2) of kernels/fully_connected_f32.c, same symbol, same
 * argument words.
 *
 * Vectorized across units, never across a sum: each lane is one unit's total over the depth in order, each
 * product rounded before its addition (no FMA), then bias + total and the clamp, as the portable kernel does.
 * The weights are repacked once per call site as [unit block][depth][8 units] (mn_host.h's cache).
 */
#define mn_fully_connected_f32 mn_fully_connected_f32_portable
#include "fully_connected_f32.portable.inc"
#undef mn_fully_connected_f32
#include "mn_host.h"

#if defined(MNH_AVX2)
typedef struct {
    float *w;    /* [units / 8 blocks][depth][8] */
    float *bias; /* padded (0 without a bias) */
} ffc_pack;

static const ffc_pack *ffc_prepare(const mn_word *args) {
    mnh_slot *slot;
    ffc_pack *p = (ffc_pack *)mnh_lookup(args, &slot);
    if (p) return p;
    const int depth = MN_I(DEPTH), units = MN_I(UNITS), blocks = mnh_blocks8(units);
    const float *weights = MN_P(const float, WEIGHTS), *bias = MN_P(const float, BIAS);
    p = (ffc_pack *)mnh_alloc(sizeof(ffc_pack));
    if (!p) return NULL;
    p->w = (float *)mnh_alloc((size_t)blocks * depth * 8 * sizeof(float) + 1);
    p->bias = (float *)mnh_alloc((size_t)blocks * 8 * sizeof(float));
    if (!p->w || !p->bias) return NULL;
    for (int u = 0; u < units; u++) {
        for (int d = 0; d < depth; d++) p->w[((size_t)(u / 8) * depth + d) * 8 + u % 8] = weights[(size_t)u * depth + d];
        if (bias) p->bias[u] = bias[u];
    }
    mnh_keep(slot, args, p);
    return p;
}

static inline __m256 ffc_clamp(__m256 x, __m256 lo, __m256 hi) {
    x = _mm256_blendv_ps(x, lo, _mm256_cmp_ps(x, lo, _CMP_LT_OQ));
    return _mm256_blendv_ps(x, hi, _mm256_cmp_ps(hi, x, _CMP_LT_OQ));
}

void mn_fully_connected_f32(const mn_word *args) {
    const ffc_pack *p = ffc_prepare(args);
    if (!p) { mn_fully_connected_f32_portable(args); return; }
    float *out = MN_P(float, OUT);
    const float *in = MN_P(const float, IN);
    const int has_bias = MN_P(const float, BIAS) != NULL;
    const int batches = MN_I(BATCHES), depth = MN_I(DEPTH), units = MN_I(UNITS), blocks = mnh_blocks8(units);
    const __m256 lo = _mm256_set1_ps(mn_f32_arg(args, ACT_MIN)), hi = _mm256_set1_ps(mn_f32_arg(args, ACT_MAX));
    const size_t step = (size_t)depth * 8;
    float tail[8];

    for (int b = 0; b < batches; b++) {
        const float *x = in + (size_t)b * depth;
        float *o = out + (size_t)b * units;
        for (int bl = 0; bl < blocks;) {
            const int four = bl + 4 <= blocks;
            const float *w0 = p->w + (size_t)bl * step, *w1 = w0 + step, *w2 = w1 + step, *w3 = w2 + step;
            __m256 a0, a1, a2, a3;
            /* a compiler may swap the operands of the vector adds and multiplies, which decides which NaN a sum of
             * two NaNs keeps: sums with a NaN are computed again with the order fixed (the total's, then the input's) */
            for (int exact = 0; exact < 2; exact++) {
                a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
#define MAC(a, v, w) a = exact ? mnh_add_ps(a, mnh_mul_ps(v, w)) : _mm256_add_ps(a, _mm256_mul_ps(v, w))
                if (four) {
                    for (int d = 0; d < depth; d++) {
                        const __m256 v = _mm256_broadcast_ss(x + d);
                        MAC(a0, v, _mm256_loadu_ps(w0 + (size_t)d * 8));
                        MAC(a1, v, _mm256_loadu_ps(w1 + (size_t)d * 8));
                        MAC(a2, v, _mm256_loadu_ps(w2 + (size_t)d * 8));
                        MAC(a3, v, _mm256_loadu_ps(w3 + (size_t)d * 8));
                    }
                } else {
                    for (int d = 0; d < depth; d++)
                        MAC(a0, _mm256_broadcast_ss(x + d), _mm256_loadu_ps(w0 + (size_t)d * 8));
                }
#undef MAC
                const __m256 nan01 = _mm256_or_ps(_mm256_cmp_ps(a0, a0, _CMP_UNORD_Q), _mm256_cmp_ps(a1, a1, _CMP_UNORD_Q));
                const __m256 nan23 = _mm256_or_ps(_mm256_cmp_ps(a2, a2, _CMP_UNORD_Q), _mm256_cmp_ps(a3, a3, _CMP_UNORD_Q));
                const __m256 nan = _mm256_or_ps(nan01, nan23);
                if (!_mm256_movemask_ps(nan)) break;
            }
            __m256 acc[4] = {a0, a1, a2, a3};
            for (int j = 0; j < (four ? 4 : 1); j++, bl++) {
                __m256 y = acc[j];
                if (has_bias) y = mnh_add_ps(_mm256_loadu_ps(p->bias + bl * 8), y); /* a NaN bias wins */
                y = ffc_clamp(y, lo, hi);
                const int c = bl * 8;
                if (c + 8 <= units) {
                    _mm256_storeu_ps(o + c, y);
                } else {
                    _mm256_storeu_ps(tail, y);
                    for (int i = 0; c + i < units; i++) o[c + i] = tail[i];
                }
            }
        }
    }
}
#else
void mn_fully_connected_f32(const mn_word *args) { mn_fully_connected_f32_portable(args); }
#endif
