/* SignalPCAN, the host port (x86-64 with AVX2) of kernels/signal_pcan.c, same symbol, same argument words.
 *
 * Eight channels a vector, in 32-bit lanes. The noise estimate's leading one (mnh_leading_one): e >> 8 when e >= 2^24,
 * else e, is below 2^24 and so converts to float exactly; its exponent field less 127 (plus 8 for the shifted case) is
 * the position p = b - 1. The top 10 bits of that float's mantissa (the bits below the leading one, at least 16 of them
 * when e >= 2^24) are the portable kernel's f for every b (its left shift fills zeros, its right shift drops bits, as
 * the exact conversion and the >> 8 do). The three table entries of a bit length, lut[k], lut[k+1], lut[k+2] at k =
 * 4p - 2, come from 32-entry int16 tables per p, two entries a 32-bit word (two vectors each: vpermd of word p >> 1
 * from both, a blend on bit 4 of p, a shift by 16 that puts an even p's entry in the upper half), made per call site
 * from the table's first 125 entries (all that the kernel reads: prepare checked they exist) and made again whenever
 * those entries differ from the copy kept (the table may be a model input). The entry sits in the upper half over the
 * other one of its pair: c2 is that >> 16, c1 * 32 the upper half alone >> 11, and c0 is added as it is to r << 16
 * (nothing added below, so no carry reaches the upper half) before the >> 16 that truncates the gain to int16. e = 2 is
 * the quadratic at f = 0, which adds 0 to lut[2]; e = 1 is entry p = 0, (lut[1], 0, 0) at f = 0; e = 0 takes lut[0] by
 * a blend. The quadratic is the portable int32 arithmetic (mullo, arithmetic shifts: no product overflows, as there).
 * The uint64 product x * gain (gain sign-extended to 32 bits) is mnh_mul_shift_epu32 (_mm256_mul_epu32 on even and odd
 * lanes), shifted right by snr_shift (0..63, as the portable kernel), its low 32 bits the SNR; the output's two
 * branches are computed for every lane and chosen by snr >> 13 == 0 (snr < 8192, where snr * snr < 2^26 fits a 32-bit
 * product). A count's last partial vector runs through zero-padded copies. Without AVX2 the portable kernel runs.
 */
#define mn_signal_pcan_u32 mn_signal_pcan_u32_portable
#include "signal_pcan.portable.inc"
#undef mn_signal_pcan_u32
#include "mn_host.h"

#if defined(MNH_AVX2)
enum { PCAN_LUT_USED = 125 }; /* entries 0 .. 4 * 32 - 4 */

/* Per call site: the table's first 125 entries as last seen, and per leading-one position p (0..31) c0, c1, c2 =
 * lut[4p-2], lut[4p-1], lut[4p] (for p = 0, e = 1: lut[1], 0, 0) as int16, two positions a 32-bit word. */
typedef struct {
    int16_t seen[PCAN_LUT_USED];
    int16_t c[3][32];
} pcan_table;

/* whether the 125 entries (250 bytes) at a and b are the same: eight 32-byte compares, the last overlapping */
static inline int pcan_same(const int16_t *a, const int16_t *b) {
    __m256i diff = _mm256_setzero_si256();
    for (int i = 0; i < 7; i++)
        diff = _mm256_or_si256(diff, _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(a + 16 * i)),
                                                      _mm256_loadu_si256((const __m256i *)(b + 16 * i))));
    diff = _mm256_or_si256(diff, _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(a + PCAN_LUT_USED - 16)),
                                                  _mm256_loadu_si256((const __m256i *)(b + PCAN_LUT_USED - 16))));
    return _mm256_testz_si256(diff, diff);
}

static const pcan_table *pcan_prepare(const mn_word *args, const int16_t *lut) {
    mnh_slot *slot;
    pcan_table *t = (pcan_table *)mnh_lookup(args, &slot);
    if (t && pcan_same(t->seen, lut)) return t;
    if (!t) {
        if (!slot || !(t = (pcan_table *)mnh_alloc(sizeof *t))) return NULL;
        mnh_keep(slot, args, t);
    }
    memcpy(t->seen, lut, sizeof t->seen);
    for (int p = 0; p < 32; p++)
        for (int k = 0; k < 3; k++) t->c[k][p] = p ? lut[4 * p - 2 + k] : k ? 0 : lut[1];
    return t;
}

/* entry p (0..31) of a 32-entry int16 table in the upper half of each lane (the lower half: the other entry of
 * its pair): vpermd of word p >> 1 (q) from the two vectors, chosen by p's bit 4 (bit4), shifted up by 16 when p is
 * even (up) */
static inline __m256i pcan_lookup(const int16_t *tab, __m256i q, __m256i bit4, __m256i up) {
    const __m256i lo = _mm256_permutevar8x32_epi32(_mm256_loadu_si256((const __m256i *)tab), q);
    const __m256i hi = _mm256_permutevar8x32_epi32(_mm256_loadu_si256((const __m256i *)(tab + 16)), q);
    return _mm256_sllv_epi32(_mm256_blendv_epi8(lo, hi, bit4), up);
}

/* out[0..8) for x[0..8), noise[0..8); lut0: lut[0] in every lane */
static inline void pcan8(uint32_t *out, const uint32_t *x, const uint32_t *noise, const pcan_table *tab, __m256i lut0,
                         __m128i shift) {
    const __m256i e = _mm256_loadu_si256((const __m256i *)noise), v = _mm256_loadu_si256((const __m256i *)x);
    __m256i fbits;
    const __m256i p = mnh_leading_one(e, &fbits);
    const __m256i f = _mm256_and_si256(_mm256_srli_epi32(fbits, 13), _mm256_set1_epi32(0x3FF));
    const __m256i q = _mm256_srli_epi32(p, 1), bit4 = _mm256_cmpgt_epi32(p, _mm256_set1_epi32(15));
    const __m256i up = _mm256_slli_epi32(_mm256_andnot_si256(p, _mm256_set1_epi32(1)), 4);
    /* c0 in the upper half over garbage: r << 16 adds nothing below, so no carry reaches it */
    const __m256i c0_hi = _mm256_blendv_epi8(pcan_lookup(tab->c[0], q, bit4, up), lut0,
                                             _mm256_cmpeq_epi32(e, _mm256_setzero_si256()));
    const __m256i c1x32 = _mm256_srai_epi32(_mm256_and_si256(pcan_lookup(tab->c[1], q, bit4, up),
                                                             _mm256_set1_epi32((int32_t)0xFFFF0000)), 11);
    const __m256i c2 = _mm256_srai_epi32(pcan_lookup(tab->c[2], q, bit4, up), 16);
    const __m256i inner = _mm256_add_epi32(_mm256_srai_epi32(_mm256_mullo_epi32(c2, f), 5), c1x32);
    const __m256i r = _mm256_srai_epi32(_mm256_add_epi32(_mm256_mullo_epi32(inner, f), _mm256_set1_epi32(1 << 14)),
                                        15);
    const __m256i g = _mm256_srai_epi32(_mm256_add_epi32(_mm256_slli_epi32(r, 16), c0_hi), 16);
    const __m256i snr = mnh_mul_shift_epu32(v, g, shift);
    const __m256i low = _mm256_srli_epi32(_mm256_mullo_epi32(snr, snr), 20);
    const __m256i high = _mm256_sub_epi32(_mm256_srli_epi32(snr, 6), _mm256_set1_epi32(64));
    const __m256i is_low = _mm256_cmpeq_epi32(_mm256_srli_epi32(snr, 13), _mm256_setzero_si256());
    _mm256_storeu_si256((__m256i *)out, _mm256_blendv_epi8(high, low, is_low));
}

void mn_signal_pcan_u32(const mn_word *args) {
    uint32_t *out = MN_P(uint32_t, OUT);
    const uint32_t *x = MN_P(const uint32_t, IN), *noise = MN_P(const uint32_t, NOISE);
    const int16_t *lut = MN_P(const int16_t, LUT);
    const int32_t count = MN_I(COUNT), shift = MN_I(SNR_SHIFT);
    const pcan_table *t = shift < 0 || shift > 63 ? NULL : pcan_prepare(args, lut);
    if (!t) {
        mn_signal_pcan_u32_portable(args);
        return;
    }
    const __m256i lut0 = _mm256_set1_epi32((int32_t)((uint32_t)(uint16_t)lut[0] << 16));
    const __m128i sh = _mm_cvtsi32_si128(shift);
    int32_t i = 0;
    for (; i + 8 <= count; i += 8) pcan8(out + i, x + i, noise + i, t, lut0, sh);
    if (i < count) {
        uint32_t xs[8] = {0}, ns[8] = {0}, os[8];
        const int32_t n = count - i;
        memcpy(xs, x + i, (size_t)n * 4), memcpy(ns, noise + i, (size_t)n * 4);
        pcan8(os, xs, ns, t, lut0, sh);
        memcpy(out + i, os, (size_t)n * 4);
    }
}
#else
void mn_signal_pcan_u32(const mn_word *args) { mn_signal_pcan_u32_portable(args); }
#endif
