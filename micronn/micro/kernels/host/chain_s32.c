/* A fused int32 elementwise chain, the host port (x86-64 with AVX2) of kernels/chain_s32.c, same symbol, same argument
 * words.
 *
 * Blocks of up to 16 groups of eight elements, step by step (one dispatch per step and block): the input sign- or
 * zero-extended to int32 lanes (as mn_load reads it), ADD/SUB/MUL as wrapping lane arithmetic (add, sub, mullo: C's
 * int32 results on TFLM's host), DIV by the magic multiply of mn_host.h (exact C quotients; the lowering fuses no
 * divisor 0 or -1), each clamped to its range (where that is not all of int32), MINIMUM/MAXIMUM as lane min/max; the
 * output keeps each lane's low bits (a byte shuffle and a lane permute for int8/uint8/int16, as the CAST port). Each
 * block is read whole before it is written, which the lowering's placement (output apart from the input, or at or
 * below it with elements no wider) keeps safe; the last count % 8 elements run the portable loop. The steps' vectors
 * (constants, bounds, magic numbers) are built once per call site: they are words of the call's argument array.
 */
#define mn_chain_s32 mn_chain_s32_portable
#include "chain_s32.portable.inc"
#undef mn_chain_s32
#include "mn_host.h"

#if defined(MNH_AVX2)
enum { CHAIN_MAX_STEPS = 16, CHAIN_BLOCK = 16 }; /* CHAIN_BLOCK groups of eight in registers (or L1) at once */

typedef struct {
    int32_t steps;
    int32_t code[CHAIN_MAX_STEPS], clamp[CHAIN_MAX_STEPS]; /* clamp: the step's range is not all of int32 */
    __m256i c[CHAIN_MAX_STEPS], lo[CHAIN_MAX_STEPS], hi[CHAIN_MAX_STEPS];
    mnh_div_magic div[CHAIN_MAX_STEPS];
} chain_plan;

static const chain_plan *chain_prepare(const mn_word *args) {
    mnh_slot *slot;
    chain_plan *p = (chain_plan *)mnh_lookup(args, &slot);
    if (p) return p;
    p = (chain_plan *)aligned_alloc(32, (sizeof(chain_plan) + 31) / 32 * 32);
    if (!p) return NULL;
    p->steps = MN_I(STEPS);
    for (int32_t s = 0; s < p->steps; s++) {
        const mn_word *st = args + STEP0 + 4 * s;
        p->code[s] = (int32_t)st[0];
        p->c[s] = _mm256_set1_epi32((int32_t)st[1]);
        p->lo[s] = _mm256_set1_epi32((int32_t)st[2]), p->hi[s] = _mm256_set1_epi32((int32_t)st[3]);
        p->clamp[s] = (int32_t)st[2] != INT32_MIN || (int32_t)st[3] != INT32_MAX;
        if (p->code[s] == CHAIN_DIV) p->div[s] = mnh_magic_of((int32_t)st[1]);
    }
    mnh_keep(slot, args, p);
    return p;
}

static inline __m256i chain_load(const void *x, int32_t type, int32_t i) {
    switch (type) {
    case MN_INT8: return _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)((const int8_t *)x + i)));
    case MN_UINT8: return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)((const uint8_t *)x + i)));
    case MN_INT16: return _mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i *)((const int16_t *)x + i)));
    default: return _mm256_loadu_si256((const __m256i *)((const int32_t *)x + i));
    }
}

static inline void chain_store(void *out, int32_t type, int32_t i, __m256i v) {
    const __m256i low8 = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 4, 8, 12,
                                          -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    const __m256i low16 = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1, 0, 1, 4, 5, 8, 9,
                                           12, 13, -1, -1, -1, -1, -1, -1, -1, -1);
    switch (type) {
    case MN_INT8:
    case MN_UINT8: {
        const __m256i y = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(v, low8), _mm256_setr_epi32(0, 4, 1, 5, 2,
                                                                                                        6, 3, 7));
        _mm_storel_epi64((__m128i *)((int8_t *)out + i), _mm256_castsi256_si128(y));
        break;
    }
    case MN_INT16: {
        const __m256i y = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(v, low16), _mm256_setr_epi32(0, 1, 4, 5, 2,
                                                                                                         3, 6, 7));
        _mm_storeu_si128((__m128i *)((int16_t *)out + i), _mm256_castsi256_si128(y));
        break;
    }
    default: _mm256_storeu_si256((__m256i *)((int32_t *)out + i), v);
    }
}

static inline void chain_apply(const chain_plan *p, int32_t s, __m256i *v, int32_t groups) {
    const __m256i c = p->c[s];
    switch (p->code[s]) {
    case CHAIN_ADD: for (int32_t g = 0; g < groups; g++) v[g] = _mm256_add_epi32(v[g], c); break;
    case CHAIN_SUB: for (int32_t g = 0; g < groups; g++) v[g] = _mm256_sub_epi32(v[g], c); break;
    case CHAIN_MUL: for (int32_t g = 0; g < groups; g++) v[g] = _mm256_mullo_epi32(v[g], c); break;
    case CHAIN_DIV: for (int32_t g = 0; g < groups; g++) v[g] = mnh_div_magic8(v[g], &p->div[s]); break;
    case CHAIN_MIN: for (int32_t g = 0; g < groups; g++) v[g] = _mm256_min_epi32(v[g], c); return;
    default: for (int32_t g = 0; g < groups; g++) v[g] = _mm256_max_epi32(v[g], c); return;
    }
    if (p->clamp[s])
        for (int32_t g = 0; g < groups; g++) v[g] = _mm256_min_epi32(_mm256_max_epi32(v[g], p->lo[s]), p->hi[s]);
}

void mn_chain_s32(const mn_word *args) {
    const int32_t count = MN_I(COUNT), in_type = MN_I(IN_TYPE), out_type = MN_I(OUT_TYPE);
    const chain_plan *p = count >= 8 && MN_I(STEPS) <= CHAIN_MAX_STEPS ? chain_prepare(args) : NULL;
    if (!p) {
        mn_chain_s32_portable(args);
        return;
    }
    void *out = MN_P(void, OUT);
    const void *x = MN_P(const void, IN);
    int32_t i = 0;
    __m256i v[CHAIN_BLOCK];
    while (i + 8 <= count) { /* a block of up to CHAIN_BLOCK groups, step by step */
        const int32_t groups = (count - i) / 8 < CHAIN_BLOCK ? (count - i) / 8 : CHAIN_BLOCK;
        for (int32_t g = 0; g < groups; g++) v[g] = chain_load(x, in_type, i + 8 * g);
        for (int32_t s = 0; s < p->steps; s++) chain_apply(p, s, v, groups);
        for (int32_t g = 0; g < groups; g++) chain_store(out, out_type, i + 8 * g, v[g]);
        i += 8 * groups;
    }
    if (i < count) { /* the rest, as a chain of its own over the last elements */
        mn_word sub[STEP0 + 4 * CHAIN_MAX_STEPS];
        for (int32_t k = 0; k < STEP0 + 4 * p->steps; k++) sub[k] = args[k];
        const size_t in_size = in_type == MN_INT16 ? 2 : in_type == MN_INT32 ? 4 : 1;
        const size_t out_size = out_type == MN_INT16 ? 2 : out_type == MN_INT32 ? 4 : 1;
        sub[OUT] = (mn_word)((uint8_t *)out + (size_t)i * out_size);
        sub[IN] = (mn_word)((const uint8_t *)x + (size_t)i * in_size);
        sub[COUNT] = (mn_word)(count - i);
        mn_chain_s32_portable(sub);
    }
}
#else
void mn_chain_s32(const mn_word *args) { mn_chain_s32_portable(args); }
#endif
