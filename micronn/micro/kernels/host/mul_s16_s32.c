/* MUL int32, the host port (x86-64 with AVX2) of kernels/mul_s16_s32.c, same symbols, same argument words.
 *
 * Contiguous rows (the second operand contiguous or broadcast) go eight lanes at a time: mullo keeps the low 32
 * bits of the product, which is the portable kernel's wrapping uint32 product, then the same clamp. Other rows,
 * a row's last few elements and the int16 kernel are the portable code.
 */
#define mn_mul_s32 mn_mul_s32_portable
#include "mul_s16_s32.portable.inc"
#undef mn_mul_s32
#include "mn_host.h"

#if defined(MNH_AVX2)
static inline __m256i mul_vec(__m256i a, __m256i b, const mn_word *args) {
    return mnh_clamp32(_mm256_mullo_epi32(a, b), MN_I(ACT_MIN), MN_I(ACT_MAX));
}
MNH_ROWS_S32(mul_fast, mul_rows_s32, mul_vec)

void mn_mul_s32(const mn_word *args) {
    mnh_walk(args, GEO, MN_P(uint8_t, OUT), MN_P(const uint8_t, IN1), MN_P(const uint8_t, IN2), mul_fast);
}
#else
void mn_mul_s32(const mn_word *args) { mn_mul_s32_portable(args); }
#endif
