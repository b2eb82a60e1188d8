/* ADD and SUB int32, the host port (x86-64 with AVX2) of kernels/add_s16_s32.c, same symbols, same argument words.
 *
 * Contiguous rows (the second operand contiguous or broadcast) go eight lanes at a time: lane adds and subtracts
 * wrap as the portable kernel's uint32 arithmetic does, then the same clamp. Other rows, a row's last few
 * elements and the int16 kernels are the portable code.
 */
#define mn_add_s32 mn_add_s32_portable
#define mn_sub_s32 mn_sub_s32_portable
#include "add_s16_s32.portable.inc"
#undef mn_add_s32
#undef mn_sub_s32
#include "mn_host.h"

#if defined(MNH_AVX2)
static inline __m256i add_vec(__m256i a, __m256i b, const mn_word *args) {
    return mnh_clamp32(_mm256_add_epi32(a, b), MN_I(ACT_MIN), MN_I(ACT_MAX));
}
static inline __m256i sub_vec(__m256i a, __m256i b, const mn_word *args) {
    return mnh_clamp32(_mm256_sub_epi32(a, b), MN_I(ACT_MIN), MN_I(ACT_MAX));
}
MNH_ROWS_S32(add_fast, add_rows_s32, add_vec)
MNH_ROWS_S32(sub_fast, sub_rows_s32, sub_vec)

void mn_add_s32(const mn_word *args) {
    mnh_walk(args, GEO, MN_P(uint8_t, OUT), MN_P(const uint8_t, IN1), MN_P(const uint8_t, IN2), add_fast);
}

void mn_sub_s32(const mn_word *args) {
    mnh_walk(args, GEO, MN_P(uint8_t, OUT), MN_P(const uint8_t, IN1), MN_P(const uint8_t, IN2), sub_fast);
}
#else
void mn_add_s32(const mn_word *args) { mn_add_s32_portable(args); }
void mn_sub_s32(const mn_word *args) { mn_sub_s32_portable(args); }
#endif
