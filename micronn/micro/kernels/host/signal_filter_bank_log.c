/* SignalFilterBankLog, the host port (x86-64 with AVX2) of kernels/signal_filter_bank_log.c, same symbol, same
 * argument words.
 *
 * Eight channels a vector, in 32-bit lanes. The leading one's position p of v = x << bits (mnh_leading_one): v >> 8
 * when v >= 2^24, else v, is below 2^24 and converts to float exactly; its exponent field less 127 (plus 8 for the
 * shifted case) is p. That float's mantissa holds the bits below the leading one (at least 16 of them when v >= 2^24;
 * v's own, shifted up, when smaller): its top 16 are the portable kernel's t for every p (its left shift fills zeros,
 * its right shift drops bits, as the conversion and the >> 8 do); j = t >> 9 <= 127. c[j] and c[j+1] - c[j] come from
 * one gather of a 128-entry table of (uint16, int16) pairs made once per call site (the lowering's table is a constant,
 * 0..5641; when some entry or step does not fit, two gathers of c[j] and c[j+1], inside the 129). log2 is the portable
 * int32 arithmetic (c[j+1] - c[j] wraps alike, mullo, an arithmetic shift). The 64-bit (45426 * log2 + 2^15) >> 16
 * splits at log2's bit 16: 45426 * (log2 >> 16) + ((45426 * (log2 & 0xFFFF) + 2^15) >> 16), the second product below
 * 2^32 (unsigned shift), both sums modulo 2^32 as the uint32 truncation keeps. The scaling wraps in uint32 lanes as
 * there; min(scaled, 32767) unsigned, v <= 1 gives 0, packed to int16 (values 0..32767 pack exactly). A count's last
 * partial vector runs through zero-padded copies. Without AVX2 the portable kernel runs.
 */
#define mn_signal_filter_bank_log_u32 mn_signal_filter_bank_log_u32_portable
#include "signal_filter_bank_log.portable.inc"
#undef mn_signal_filter_bank_log_u32
#include <string.h>
#include "mn_host.h"

#if defined(MNH_AVX2)
/* Per call site (the table is the lowering's constant): per j < 128, c[j] | (c[j+1] - c[j]) << 16, when every
 * such c[j] fits uint16 and every difference int16 (ok); one gather then reads both. */
typedef struct {
    const int32_t *c;
    int ok;
    int32_t packed[128];
} log_table;

static const log_table *log_prepare(const mn_word *args, const int32_t *c) {
    mnh_slot *slot;
    log_table *t = (log_table *)mnh_lookup(args, &slot);
    if (t && t->c == c) return t;
    if (!t) {
        if (!slot || !(t = (log_table *)mnh_alloc(sizeof *t))) return NULL;
        mnh_keep(slot, args, t);
    }
    t->c = c, t->ok = 1;
    for (int j = 0; j < 128; j++) {
        const int64_t d = (int64_t)c[j + 1] - c[j];
        if (c[j] < 0 || c[j] > 65535 || d < -32768 || d > 32767) t->ok = 0;
        t->packed[j] = (int32_t)((uint32_t)(uint16_t)c[j] | (uint32_t)(uint16_t)d << 16);
    }
    return t;
}

/* out[0..8) for x[0..8); c: the table, or packed (when not NULL) */
static inline void log8(int16_t *out, const uint32_t *x, const int32_t *c, const int32_t *packed, __m128i bits,
                        __m256i scale) {
    const __m256i v = _mm256_sll_epi32(_mm256_loadu_si256((const __m256i *)x), bits);
    __m256i fw;
    const __m256i p = mnh_leading_one(v, &fw);
    const __m256i t = _mm256_and_si256(_mm256_srli_epi32(fw, 7), _mm256_set1_epi32(0xFFFF));
    const __m256i j = _mm256_srli_epi32(t, 9);
    __m256i c0, d;
    if (packed) {
        const __m256i both = _mm256_i32gather_epi32(packed, j, 4);
        c0 = _mm256_and_si256(both, _mm256_set1_epi32(0xFFFF)), d = _mm256_srai_epi32(both, 16);
    } else {
        c0 = _mm256_i32gather_epi32(c, j, 4), d = _mm256_sub_epi32(_mm256_i32gather_epi32(c + 1, j, 4), c0);
    }
    const __m256i step = _mm256_srai_epi32(_mm256_mullo_epi32(d, _mm256_and_si256(t, _mm256_set1_epi32(511))), 16);
    const __m256i log2 = _mm256_add_epi32(_mm256_add_epi32(_mm256_slli_epi32(p, 16), t), _mm256_add_epi32(c0, step));
    const __m256i ln2 = _mm256_set1_epi32(45426);
    const __m256i lo = _mm256_srli_epi32(
        _mm256_add_epi32(_mm256_mullo_epi32(_mm256_and_si256(log2, _mm256_set1_epi32(0xFFFF)), ln2),
                         _mm256_set1_epi32(1 << 15)), 16);
    const __m256i ln = _mm256_add_epi32(_mm256_mullo_epi32(_mm256_srai_epi32(log2, 16), ln2), lo);
    const __m256i scaled = _mm256_srli_epi32(
        _mm256_add_epi32(_mm256_mullo_epi32(ln, scale), _mm256_set1_epi32(1 << 15)), 16);
    const __m256i small = _mm256_cmpgt_epi32(_mm256_set1_epi32(2), _mm256_min_epu32(v, _mm256_set1_epi32(2)));
    const __m256i y = _mm256_andnot_si256(small, _mm256_min_epu32(scaled, _mm256_set1_epi32(32767)));
    const __m256i packed16 = _mm256_permute4x64_epi64(_mm256_packus_epi32(y, y), 0x08);
    _mm_storeu_si128((__m128i *)out, _mm256_castsi256_si128(packed16));
}

void mn_signal_filter_bank_log_u32(const mn_word *args) {
    int16_t *out = MN_P(int16_t, OUT);
    const uint32_t *x = MN_P(const uint32_t, IN);
    const int32_t *c = MN_P(const int32_t, CORRECTION);
    const int32_t count = MN_I(COUNT), bits = MN_I(BITS);
    const log_table *table = bits < 0 || bits > 31 ? NULL : log_prepare(args, c);
    if (!table) {
        mn_signal_filter_bank_log_u32_portable(args);
        return;
    }
    const int32_t *packed = table->ok ? table->packed : NULL;
    const __m128i sh = _mm_cvtsi32_si128(bits);
    const __m256i scale = _mm256_set1_epi32((int32_t)(uint32_t)args[SCALE]);
    int32_t i = 0;
    for (; i + 8 <= count; i += 8) log8(out + i, x + i, c, packed, sh, scale);
    if (i < count) {
        uint32_t xs[8] = {0};
        int16_t os[8];
        const int32_t n = count - i;
        memcpy(xs, x + i, (size_t)n * 4);
        log8(os, xs, c, packed, sh, scale);
        memcpy(out + i, os, (size_t)n * 2);
    }
}
#else
void mn_signal_filter_bank_log_u32(const mn_word *args) { mn_signal_filter_bank_log_u32_portable(args); }
#endif
