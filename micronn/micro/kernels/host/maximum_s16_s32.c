/* MAXIMUM and MINIMUM int32, the host port (x86-64 with AVX2) of kernels/maximum_s16_s32.c, same symbols, same
 * argument words.
 *
 * Contiguous rows (the second operand contiguous or broadcast) go eight lanes at a time: max_epi32 / min_epi32
 * give the value the portable kernel picks (when the two are equal either is the same bits). Other rows, a row's
 * last few elements and the int16 kernels are the portable code.
 */
#define mn_maximum_s32 mn_maximum_s32_portable
#define mn_minimum_s32 mn_minimum_s32_portable
#include "maximum_s16_s32.portable.inc"
#undef mn_maximum_s32
#undef mn_minimum_s32
#include "mn_host.h"

#if defined(MNH_AVX2)
static inline __m256i max_vec(__m256i a, __m256i b, const mn_word *args) { (void)args; return _mm256_max_epi32(a, b); }
static inline __m256i min_vec(__m256i a, __m256i b, const mn_word *args) { (void)args; return _mm256_min_epi32(a, b); }
MNH_ROWS_S32(max_fast, max_rows_s32, max_vec)
MNH_ROWS_S32(min_fast, min_rows_s32, min_vec)

void mn_maximum_s32(const mn_word *args) {
    mnh_walk(args, GEO, MN_P(uint8_t, OUT), MN_P(const uint8_t, IN1), MN_P(const uint8_t, IN2), max_fast);
}

void mn_minimum_s32(const mn_word *args) {
    mnh_walk(args, GEO, MN_P(uint8_t, OUT), MN_P(const uint8_t, IN1), MN_P(const uint8_t, IN2), min_fast);
}
#else
void mn_maximum_s32(const mn_word *args) { mn_maximum_s32_portable(args); }
void mn_minimum_s32(const mn_word *args) { mn_minimum_s32_portable(args); }
#endif
