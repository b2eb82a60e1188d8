/* ADD and SUB, int8: the host port (x86-64 with AVX2) of kernels/add.c, same symbols, same argument words.
 *
 * Rows whose three operands are contiguous (no broadcast) go 8 elements at a time: each operand offset, shifted
 * and rescaled, the sum (or difference) with wrap-around, then the output rescaling, zero point and clamp, each
 * step the portable kernel's arithmetic (its multiplier-below-one MultiplyByQuantizedMultiplier is
 * mnh_requant8r's with no left shift). Other rows, and a row's last few elements, run the portable code.
 */
#define mn_add_s8 mn_add_s8_portable
#define mn_sub_s8 mn_sub_s8_portable
#include "add.portable.inc"
#undef mn_add_s8
#undef mn_sub_s8
#include "mn_host.h"

#if defined(MNH_AVX2)
/* the rescaling of mnh_requant8r for a multiplier and right shift shared by all lanes, no clamp */
static inline mnh_rq8 rescaler(int32_t mult, int32_t shift) {
    mnh_rq8 r;
    r.mult = _mm256_set1_epi32(mult), r.left = _mm256_setzero_si256(), r.right = _mm256_set1_epi32(-shift);
    r.zp = _mm256_setzero_si256(), r.lo_zp = _mm256_set1_epi32(INT32_MIN), r.hi_zp = _mm256_set1_epi32(INT32_MAX);
    return r;
}

static inline void fast_row(uint8_t *p0, const uint8_t *p1, const uint8_t *p2, int32_t n, int32_t s0, int32_t s1,
                            int32_t s2, const mn_word *args, const int subtract) {
    /* prepare keeps every multiplier >= 0 and shift <= 0 (the lowering checks); the vector path needs shifts >= -31 */
    if (s0 != 1 || s1 != 1 || s2 != 1 || n < 8 || MN_I(SHIFT1) < -31 || MN_I(SHIFT2) < -31 || MN_I(SHIFT_OUT) < -31) {
        add_row(p0, p1, p2, n, s0, s1, s2, args, subtract);
        return;
    }
    const __m128i left = _mm_cvtsi32_si128(MN_I(LEFT_SHIFT));
    const __m256i off1 = _mm256_set1_epi32(MN_I(OFF1)), off2 = _mm256_set1_epi32(MN_I(OFF2));
    const mnh_rq8 r1 = rescaler(MN_I(MULT1), MN_I(SHIFT1)), r2 = rescaler(MN_I(MULT2), MN_I(SHIFT2));
    mnh_rq8 ro = rescaler(MN_I(MULT_OUT), MN_I(SHIFT_OUT));
    const int32_t zp = MN_I(OUT_ZP);
    ro.zp = _mm256_set1_epi32(zp);
    ro.lo_zp = _mm256_set1_epi32(MN_I(ACT_MIN) - zp), ro.hi_zp = _mm256_set1_epi32(MN_I(ACT_MAX) - zp);
    int32_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256i x1 = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(p1 + i)));
        const __m256i x2 = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(p2 + i)));
        const __m256i a = mnh_requant8r(_mm256_sll_epi32(_mm256_add_epi32(x1, off1), left), &r1);
        const __m256i b = mnh_requant8r(_mm256_sll_epi32(_mm256_add_epi32(x2, off2), left), &r2);
        const __m256i raw = subtract ? _mm256_sub_epi32(a, b) : _mm256_add_epi32(a, b);
        _mm_storel_epi64((__m128i *)(p0 + i), mnh_bytes8(mnh_requant8r(raw, &ro)));
    }
    if (i < n) add_row(p0 + i, p1 + i, p2 + i, n - i, 1, 1, 1, args, subtract);
}

static void fast_add_rows(uint8_t *p0, const uint8_t *p1, const uint8_t *p2, int32_t n, int32_t s0, int32_t s1,
                          int32_t s2, const mn_word *args) {
    fast_row(p0, p1, p2, n, s0, s1, s2, args, 0);
}

static void fast_sub_rows(uint8_t *p0, const uint8_t *p1, const uint8_t *p2, int32_t n, int32_t s0, int32_t s1,
                          int32_t s2, const mn_word *args) {
    fast_row(p0, p1, p2, n, s0, s1, s2, args, 1);
}

void mn_add_s8(const mn_word *args) {
    mn_walk(args, GEO, MN_P(uint8_t, OUT), MN_P(const uint8_t, IN1), MN_P(const uint8_t, IN2), fast_add_rows);
}

void mn_sub_s8(const mn_word *args) {
    mn_walk(args, GEO, MN_P(uint8_t, OUT), MN_P(const uint8_t, IN1), MN_P(const uint8_t, IN2), fast_sub_rows);
}
#else
void mn_add_s8(const mn_word *args) { mn_add_s8_portable(args); }
void mn_sub_s8(const mn_word *args) { mn_sub_s8_portable(args); }
#endif
