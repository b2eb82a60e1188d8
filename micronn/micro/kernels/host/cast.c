/* CAST, the host port (x86-64) of kernels/cast.c, same symbol, same argument words.
 *
 * The portable kernel converts value by value through mn_load / mn_store, which switch on the types per element.
 * Here the types are dispatched once: a cast to the same integer type (audio_preprocessor's int32 -> int32) is a
 * memmove, which gives the element-by-element copy's bytes in either direction the lowering chose (every element
 * is read before its slot is written over, so reading all before writing is the same); other pairs run one loop
 * per pair in the lowering's direction, the same conversions as the portable kernel's (sign- or zero-extend to
 * 32 bits, keep the low bits; to bool x != 0). With AVX2, int16 -> int32 (sign extension) and int32 -> int16, int8
 * or uint8 (the low bits, picked by a byte shuffle: no saturation) go eight elements at a time in the lowering's
 * direction, each group read whole before any of it is written; that is safe wherever the element-by-element order
 * is, since the lowering's check covers the first element of every later group (forward) or every earlier one
 * (backward). The elements left over run the scalar loop, last (forward: the end; backward: the start).
 */
#define mn_cast mn_cast_portable
#include <string.h>
#include "cast.portable.inc"
#undef mn_cast
#include "mn_host.h"

#define CAST_LOOP(TI, TO, CONV)                                                                                    \
    do {                                                                                                       \
        const TI *s = (const TI *)x;                                                                           \
        TO *d = (TO *)out;                                                                                     \
        if (backward)                                                                                          \
            for (int32_t i = count - 1; i >= 0; i--) { const int32_t v = s[i]; d[i] = (TO)(CONV); }           \
        else                                                                                                   \
            for (int32_t i = 0; i < count; i++) { const int32_t v = s[i]; d[i] = (TO)(CONV); }                \
        return;                                                                                                \
    } while (0)

#define CAST_TO(TI)                                                                                                \
    switch (out_type) {                                                                                            \
    case MN_INT8: CAST_LOOP(TI, int8_t, v);                                                                        \
    case MN_UINT8: CAST_LOOP(TI, uint8_t, v);                                                                      \
    case MN_INT16: CAST_LOOP(TI, int16_t, v);                                                                      \
    case MN_INT32: CAST_LOOP(TI, int32_t, v);                                                                      \
    case MN_BOOL: CAST_LOOP(TI, uint8_t, v != 0);                                                                  \
    default: break;                                                                                                \
    }

void mn_cast(const mn_word *args) {
    void *out = MN_P(void, OUT);
    const void *x = MN_P(const void, IN);
    const int32_t count = MN_I(COUNT), in_type = MN_I(IN_TYPE), out_type = MN_I(OUT_TYPE);
    const int32_t backward = MN_I(BACKWARD);
    static const size_t size[4] = {1, 1, 2, 4};
    if (count <= 0) return;
    if (in_type == out_type && in_type >= MN_INT8 && in_type <= MN_INT32) {
        if (out != x) memmove(out, x, (size_t)count * size[in_type]);
        return;
    }
#if defined(MNH_AVX2)
    if (count >= 8 && ((in_type == MN_INT16 && out_type == MN_INT32) ||
                       (in_type == MN_INT32 && out_type <= MN_INT16))) {
        const int32_t groups = count / 8, rest = count - 8 * groups;
        const int32_t first = backward ? rest : 0; /* the grouped elements: [first, first + 8 * groups) */
        /* per 128-bit lane, the low byte (int8) or low two bytes (int16) of each int32, then the two lanes joined */
        const __m256i low8 = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 4, 8,
                                              12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
        const __m256i low16 = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1, 0, 1, 4, 5,
                                               8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1);
        const __m256i join8 = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
        const __m256i join16 = _mm256_setr_epi32(0, 1, 4, 5, 2, 3, 6, 7);
        for (int32_t g = 0; g < groups; g++) {
            const int32_t i = first + 8 * (backward ? groups - 1 - g : g);
            if (in_type == MN_INT16) {
                const __m256i v = _mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i *)((const int16_t *)x + i)));
                _mm256_storeu_si256((__m256i *)((int32_t *)out + i), v);
            } else {
                const __m256i v = _mm256_loadu_si256((const __m256i *)((const int32_t *)x + i));
                const int wide = out_type == MN_INT16;
                const __m256i y = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(v, wide ? low16 : low8),
                                                              wide ? join16 : join8);
                if (out_type == MN_INT16) _mm_storeu_si128((__m128i *)((int16_t *)out + i), _mm256_castsi256_si128(y));
                else _mm_storel_epi64((__m128i *)((int8_t *)out + i), _mm256_castsi256_si128(y));
            }
        }
        if (!rest) return;
        const int32_t at = backward ? 0 : 8 * groups; /* the rest, as a cast of its own in the same direction */
        mn_word sub[6] = {(mn_word)((uint8_t *)out + (size_t)at * size[out_type]),
                          (mn_word)((const uint8_t *)x + (size_t)at * size[in_type]), (mn_word)rest,
                          (mn_word)in_type, (mn_word)out_type, (mn_word)backward};
        mn_cast_portable(sub);
        return;
    }
#endif
    switch (in_type) {
    case MN_INT8: CAST_TO(int8_t) break;
    case MN_UINT8: CAST_TO(uint8_t) break;
    case MN_INT16: CAST_TO(int16_t) break;
    case MN_INT32: CAST_TO(int32_t) break;
    default: break;
    }
    mn_cast_portable(args);
}
