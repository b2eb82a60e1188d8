/* FULLY_CONNECTED, int16x8: the host port (x86-64 with AVX2) of kernels/fully_connected_s16.c, same symbol, same
 * argument words.
 *
 * Sums proven to fit int32 (`wide` = 0): the weight rows repacked once per call site as int16 pairs, 8 units per
 * vector (mn_host.h); each broadcast pair of int16 inputs feeds up to 32 units' sums with madds (exact: |x * w| <=
 * 2^22), then the 64-bit Q15 output stage 8 units at a time (mn_host_q15.h) with the output zero point. Else, or
 * where a sum plus `bias_full` may leave int32, the portable kernel.
 */
#define mn_fully_connected_s16 mn_fully_connected_s16_portable
#include "fully_connected_s16.portable.inc"
#undef mn_fully_connected_s16
#include "mn_host_q15.h"

#if defined(MNH_AVX2)
typedef struct {
    int kp, blocks;
    int16_t *w;   /* mnh_pack_rows8 of the rows */
    mnh_q15 q15;
    int16_t *x;   /* one input row, padded to whole pairs */
    int16_t *o;   /* one output row, padded to whole blocks */
} fc16_pack;

static fc16_pack *fc16_prepare(const mn_word *args) {
    mnh_slot *slot;
    fc16_pack *p = (fc16_pack *)mnh_lookup(args, &slot);
    if (p) return p;
    const int depth = MN_I(DEPTH), units = MN_I(UNITS), kp = mnh_pairs(depth), blocks = mnh_blocks8(units);
    const int8_t *w = MN_P(const int8_t, WEIGHTS);
    p = (fc16_pack *)mnh_alloc(sizeof(fc16_pack));
    int64_t *bound = (int64_t *)mnh_alloc((size_t)units * sizeof(int64_t));
    if (!p || !bound) return NULL;
    p->kp = kp, p->blocks = blocks;
    p->w = (int16_t *)mnh_alloc((size_t)blocks * kp * 16 * sizeof(int16_t));
    p->x = (int16_t *)mnh_alloc(((size_t)2 * kp + 16) * sizeof(int16_t));
    p->o = (int16_t *)mnh_alloc((size_t)blocks * 8 * sizeof(int16_t));
    if (!p->w || !p->x || !p->o) return NULL;
    mnh_pack_rows8(p->w, w, units, depth, (size_t)depth);
    for (int u = 0; u < units; u++) {
        int64_t s = 0;
        for (int d = 0; d < depth; d++) s += abs(w[(size_t)u * depth + d]);
        bound[u] = 32768 * s;
    }
    if (!mnh_q15_init(&p->q15, MN_P(const int64_t, BIAS_FULL), MN_P(const int32_t, MULT), MN_P(const int32_t, SHIFT),
                      bound, units))
        return NULL;
    free(bound);
    mnh_keep(slot, args, p);
    return p;
}


void mn_fully_connected_s16(const mn_word *args) {
    fc16_pack *p = MN_I(WIDE) ? NULL : fc16_prepare(args);
    if (!p || !p->q15.vec) {
        mn_fully_connected_s16_portable(args);
        return;
    }
    int16_t *out = MN_P(int16_t, OUT);
    const int16_t *in = MN_P(const int16_t, IN);
    const int batches = MN_I(BATCHES), depth = MN_I(DEPTH), units = MN_I(UNITS), kp = p->kp;
    const int32_t zp = MN_I(OUT_ZP), lo = MN_I(ACT_MIN), hi = MN_I(ACT_MAX);
    const __m256i vzp = _mm256_set1_epi32(zp), vlo = _mm256_set1_epi32(lo - zp), vhi = _mm256_set1_epi32(hi - zp);

    for (int b = 0; b < batches; b++) {
        memcpy(p->x, in + (size_t)b * depth, (size_t)depth * sizeof(int16_t));
        if (depth & 1) p->x[depth] = 0;
        for (int b0 = 0; b0 < p->blocks; b0 += 4) {
            const int m = p->blocks - b0 < 4 ? p->blocks - b0 : 4;
            __m256i acc[4];
            const int16_t *w = p->w + (size_t)b0 * kp * 16;
            switch (m) {
            case 1: mnh_dots16(acc, p->x, w, kp, 1); break;
            case 2: mnh_dots16(acc, p->x, w, kp, 2); break;
            case 3: mnh_dots16(acc, p->x, w, kp, 3); break;
            default: mnh_dots16(acc, p->x, w, kp, 4); break;
            }
            for (int k = 0; k < m; k++)
                mnh_store16(p->o + 8 * (b0 + k), mnh_q15_8(&p->q15, 8 * (b0 + k), acc[k], vzp, vlo, vhi), 8);
        }
        memcpy(out + (size_t)b * units, p->o, (size_t)units * sizeof(int16_t));
    }
}
#else
void mn_fully_connected_s16(const mn_word *args) { mn_fully_connected_s16_portable(args); }
#endif
