/* QUANTIZE between integer types, the host port (x86-64 with AVX2) of kernels/quantize.c, same symbol, same
 * argument words.
 *
 * Eight elements at a time: widened to int32, less the input zero point (wrapping), then MultiplyByQuantizedMultiplier
 * as the portable kernel's mn_mbqm (a wrapping left shift, the doubling high multiply with its nudge taken from the
 * 64-bit products of even and odd lanes, the rounding right shift), plus the output zero point (wrapping) and the
 * clamp, narrowed with saturating packs (exact: the clamp bounds lie in the output type). The last count % 8
 * elements, multipliers below 0 (never QuantizeMultiplier's), shifts beyond +-31, bounds outside the output type
 * and an output that overlaps its input other than exactly on it (narrower or equal elements, so each group is
 * read before it is overwritten) go to the portable kernel.
 */
#define mn_quantize mn_quantize_portable
#include "quantize.portable.inc"
#undef mn_quantize
#include "mn_host.h"

#if defined(MNH_AVX2)
static const int q_size[4] = {1, 1, 2, 4};             /* bytes of MN_INT8, MN_UINT8, MN_INT16, MN_INT32 */
static const int32_t q_min[4] = {-128, 0, -32768, INT32_MIN}, q_max[4] = {127, 255, 32767, INT32_MAX};

static inline __m256i q_load8(const void *in, int type, size_t i) {
    switch (type) {
    case MN_INT8: return _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)((const int8_t *)in + i)));
    case MN_UINT8: return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)((const uint8_t *)in + i)));
    case MN_INT16: return _mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i *)((const int16_t *)in + i)));
    default: return _mm256_loadu_si256((const __m256i *)((const int32_t *)in + i));
    }
}

/* y's lanes (already within the output type's range) stored as that type */
static inline void q_store8(void *out, int type, size_t i, __m256i y) {
    const __m128i lo = _mm256_castsi256_si128(y), hi = _mm256_extracti128_si256(y, 1);
    switch (type) {
    case MN_INT8: {
        const __m128i w = _mm_packs_epi32(lo, hi);
        _mm_storel_epi64((__m128i *)((int8_t *)out + i), _mm_packs_epi16(w, w));
        break;
    }
    case MN_UINT8: {
        const __m128i w = _mm_packs_epi32(lo, hi); /* 0..255: exact as int16 */
        _mm_storel_epi64((__m128i *)((uint8_t *)out + i), _mm_packus_epi16(w, w));
        break;
    }
    case MN_INT16: _mm_storeu_si128((__m128i *)((int16_t *)out + i), _mm_packs_epi32(lo, hi)); break;
    default: _mm256_storeu_si256((__m256i *)((int32_t *)out + i), y);
    }
}

void mn_quantize(const mn_word *args) {
    const int in_type = MN_I(IN_TYPE), out_type = MN_I(OUT_TYPE);
    const int32_t mult = MN_I(MULT), shift = MN_I(SHIFT), lo = MN_I(OUT_MIN), hi = MN_I(OUT_MAX);
    const size_t count = (size_t)args[COUNT];
    if (in_type < MN_INT8 || in_type > MN_INT32 || out_type < MN_INT8 || out_type > MN_INT32 || count < 8 ||
        mult < 0 || shift > 31 || shift < -31 || lo < q_min[out_type] || hi > q_max[out_type] || lo > hi) {
        mn_quantize_portable(args);
        return;
    }
    const uint8_t *in = MN_P(const uint8_t, IN);
    uint8_t *out = MN_P(uint8_t, OUT);
    const size_t si = (size_t)q_size[in_type], so = (size_t)q_size[out_type];
    const int apart = out + count * so <= in || in + count * si <= out;
    if (!apart && !(out == in && so <= si)) {
        mn_quantize_portable(args);
        return;
    }
    const __m256i in_zp = _mm256_set1_epi32(MN_I(IN_ZP)), out_zp = _mm256_set1_epi32(MN_I(OUT_ZP));
    const __m256i m = _mm256_set1_epi32(mult), m_odd = _mm256_srli_epi64(m, 32);
    const __m256i left = _mm256_set1_epi32(shift > 0 ? shift : 0), e = _mm256_set1_epi32(shift > 0 ? 0 : -shift);
    const __m256i nudge = _mm256_set1_epi64x((int64_t)1 << 30), one = _mm256_set1_epi32(1);
    const __m256i mask = _mm256_sub_epi32(_mm256_sllv_epi32(one, e), one), half = _mm256_srai_epi32(mask, 1);
    const __m256i vlo = _mm256_set1_epi32(lo), vhi = _mm256_set1_epi32(hi);
    size_t i = 0;
    for (; i + 8 <= count; i += 8) {
        const __m256i x = _mm256_sllv_epi32(_mm256_sub_epi32(q_load8(in, in_type, i), in_zp), left);
        const __m256i even = _mm256_add_epi64(_mm256_mul_epi32(x, m), nudge);
        const __m256i odd = _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(x, 32), m_odd), nudge);
        const __m256i h = _mm256_blend_epi32(_mm256_srli_epi64(even, 31), _mm256_slli_epi64(odd, 1), 0xAA);
        const __m256i threshold = _mm256_sub_epi32(half, _mm256_srai_epi32(h, 31));
        const __m256i y = _mm256_sub_epi32(_mm256_srav_epi32(h, e), _mm256_cmpgt_epi32(_mm256_and_si256(h, mask),
                                                                                       threshold));
        q_store8(out, out_type, i, _mm256_min_epi32(_mm256_max_epi32(_mm256_add_epi32(y, out_zp), vlo), vhi));
    }
    const int32_t izp = MN_I(IN_ZP), ozp = MN_I(OUT_ZP);
    for (; i < count; i++) {
        const int32_t centred = (int32_t)((uint32_t)mn_load(in, in_type, i) - (uint32_t)izp);
        mn_store(out, out_type, i, mn_clamp(mn_wrap_add(mn_mbqm(centred, mult, shift), ozp), lo, hi));
    }
}
#else
void mn_quantize(const mn_word *args) { mn_quantize_portable(args); }
#endif
