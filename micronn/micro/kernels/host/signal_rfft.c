/* SignalRfft, the host port (x86-64 with AVX2) of kernels/signal_rfft.c, same symbols, same argument words.
 *
 * int16 frames: the radix-2 and radix-4 stages of span m >= 4 run eight butterflies at a time, one complex value
 * (re, im as int16) per 32-bit lane: eight consecutive positions of a group (m a multiple of 8) or four of two
 * neighbouring groups (m = 4, an even count of groups); a first radix-4 stage (m = 1) takes two groups per vector
 * and does each butterfly within a 128-bit half. The portable kernel's arithmetic maps onto exact instructions:
 * its rounded Q15 product (x * c + 2^14) >> 15 wrapped to int16 is mulhrs; a complex product's two exact products
 * summed before the rounding are one madd against the twiddle pairs (re, -im) and (im, re), which this port lays
 * out per stage and position once per call site; sums and differences wrap as int16 lanes do. The other stages
 * (radix 3 and 5, span 2, odd group counts, a twiddle of -32768 whose negation does not fit), the digit-reversed
 * copy and the split step are the portable kernel's code; the int32 (Q31) kernel is the portable one.
 */
#define mn_signal_rfft_s16 mn_signal_rfft_s16_portable
#define mn_signal_rfft_s32 mn_signal_rfft_s32_portable
#include "signal_rfft.portable.inc"
#undef mn_signal_rfft_s16
#undef mn_signal_rfft_s32
#include "mn_host.h"

void mn_signal_rfft_s32(const mn_word *args) { mn_signal_rfft_s32_portable(args); }

#if defined(MNH_AVX2)
enum { RF_MAX_STAGES = 32 };

typedef struct {
    int32_t *ta[RF_MAX_STAGES]; /* per vector stage, per input q = 1 .. p-1 and position u: (re, -im) as int16 */
    int32_t *tb[RF_MAX_STAGES]; /* (im, re) */
} rf_pack;

static int rf_vector_stage(const int32_t *st) {
    return ((st[0] == 2 || st[0] == 4) && (st[1] % 8 == 0 || (st[1] == 4 && st[2] % 2 == 0))) ||
           (st[0] == 4 && st[1] == 1 && st[2] % 2 == 0);
}

static const rf_pack *rf_prepare(const mn_word *args) {
    mnh_slot *slot;
    rf_pack *p = (rf_pack *)mnh_lookup(args, &slot);
    if (p) return p;
    const int32_t stages = MN_I(STAGES), *plan = MN_P(const int32_t, PLAN);
    const int16_t *tw = MN_P(const int16_t, TW);
    if (stages > RF_MAX_STAGES) return NULL;
    p = (rf_pack *)mnh_alloc(sizeof(rf_pack));
    if (!p) return NULL;
    for (int32_t s = 0; s < stages; s++) {
        const int32_t *st = plan + PLAN_WORDS * s, radix = st[0], m = st[1];
        if (!rf_vector_stage(st)) continue;
        int32_t *ta = (int32_t *)mnh_alloc((size_t)(radix - 1) * m * sizeof(int32_t));
        int32_t *tb = (int32_t *)mnh_alloc((size_t)(radix - 1) * m * sizeof(int32_t));
        if (!ta || !tb) return NULL;
        int ok = 1;
        for (int32_t q = 1; q < radix; q++)
            for (int32_t u = 0; u < m; u++) {
                const int16_t *t = tw + st[3] + 2 * (radix - 1) * u + 2 * (q - 1);
                const int16_t re = t[0], im = t[1];
                if (im == INT16_MIN) ok = 0;
                ta[(q - 1) * m + u] = (int32_t)((uint32_t)(uint16_t)re | (uint32_t)(uint16_t)(int16_t)-im << 16);
                tb[(q - 1) * m + u] = (int32_t)((uint32_t)(uint16_t)im | (uint32_t)(uint16_t)re << 16);
            }
        if (ok) p->ta[s] = ta, p->tb[s] = tb;
        else free(ta), free(tb);
    }
    mnh_keep(slot, args, p);
    return p;
}

/* Eight complex values times their twiddles: ((re * tr - im * ti + 2^14) >> 15, (re * ti + im * tr + 2^14) >> 15)
 * wrapped to int16. */
static inline __m256i rf_cmul(__m256i v, __m256i ta, __m256i tb) {
    const __m256i round = _mm256_set1_epi32(1 << 14);
    const __m256i re = _mm256_srai_epi32(_mm256_add_epi32(_mm256_madd_epi16(v, ta), round), 15);
    const __m256i im = _mm256_srai_epi32(_mm256_add_epi32(_mm256_madd_epi16(v, tb), round), 15);
    return _mm256_blend_epi16(re, _mm256_slli_epi32(im, 16), 0xAA);
}

/* Eight lanes of complex values: at a[0..3] (m a multiple of 8), or four at a and four at b (m = 4). */
static inline __m256i rf_load(const int16_t *a, const int16_t *b, int split) {
    if (!split) return _mm256_loadu_si256((const __m256i *)a);
    return _mm256_set_m128i(_mm_loadu_si128((const __m128i *)b), _mm_loadu_si128((const __m128i *)a));
}

static inline void rf_store(int16_t *a, int16_t *b, int split, __m256i v) {
    if (!split) { _mm256_storeu_si256((__m256i *)a, v); return; }
    _mm_storeu_si128((__m128i *)a, _mm256_castsi256_si128(v));
    _mm_storeu_si128((__m128i *)b, _mm256_extracti128_si256(v, 1));
}

/* The first stage of radix 4 (span 1): two groups of 4 values per vector, the butterflies within each 128-bit
 * half (the twiddles of inputs 1-3 at position 0, input 0 unmultiplied). */
static void rf_stage_m1(int16_t *y, const int32_t *st, const int32_t *ta, const int32_t *tb) {
    const int32_t groups = st[2];
    const __m256i div = _mm256_set1_epi16((int16_t)st[4]);
    const __m256i va = _mm256_setr_epi32(0, ta[0], ta[1], ta[2], 0, ta[0], ta[1], ta[2]);
    const __m256i vb = _mm256_setr_epi32(0, tb[0], tb[1], tb[2], 0, tb[0], tb[1], tb[2]);
    for (int32_t g = 0; g < groups; g += 2) {
        int16_t *a = y + 8 * (size_t)g;
        const __m256i v = _mm256_mulhrs_epi16(_mm256_loadu_si256((const __m256i *)a), div);
        const __m256i f = _mm256_blend_epi32(rf_cmul(v, va, vb), v, 0x11);           /* f0 f1 f2 f3 per half */
        const __m256i b = _mm256_shuffle_epi32(f, _MM_SHUFFLE(1, 0, 3, 2));           /* f2 f3 f0 f1 */
        const __m256i s = _mm256_add_epi16(f, b), d = _mm256_sub_epi16(f, b);        /* (e g e g), (d h . .) */
        const __m256i s2 = _mm256_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1));          /* (g e g e) */
        const __m256i sum = _mm256_add_epi16(s, s2), dif = _mm256_sub_epi16(s, s2);  /* e + g at 0, e - g at 2 */
        const __m256i dd = _mm256_shuffle_epi32(d, 0x00), hh = _mm256_shuffle_epi32(d, 0x55);
        const __m256i hs = _mm256_or_si256(_mm256_slli_epi32(hh, 16), _mm256_srli_epi32(hh, 16));
        const __m256i plus = _mm256_add_epi16(dd, hs), minus = _mm256_sub_epi16(dd, hs);
        __m256i out = _mm256_blend_epi32(sum, _mm256_blend_epi16(plus, minus, 0xAA), 0x22);
        out = _mm256_blend_epi32(out, dif, 0x44);
        out = _mm256_blend_epi32(out, _mm256_blend_epi16(minus, plus, 0xAA), 0x88);
        _mm256_storeu_si256((__m256i *)a, out);
    }
}

/* One stage of radix 2 or 4 over the frame y, eight butterflies at a time. */
static void rf_stage(int16_t *y, const int32_t *st, const int32_t *ta, const int32_t *tb) {
    const int32_t radix = st[0], m = st[1], groups = st[2];
    if (m == 1) { rf_stage_m1(y, st, ta, tb); return; }
    const __m256i div = _mm256_set1_epi16((int16_t)st[4]);
    const int split = m == 4;
    const int32_t gstep = split ? 2 : 1, ustep = split ? 4 : 8;
    for (int32_t g = 0; g < groups; g += gstep)
        for (int32_t u = 0; u < m; u += ustep) {
            int16_t *a = y + 2 * ((size_t)g * radix * m + u), *b = a + 2 * (size_t)radix * m; /* b: group g + 1 */
            __m256i f[4];
            for (int32_t q = 0; q < radix; q++) {
                const __m256i v = _mm256_mulhrs_epi16(rf_load(a + 2 * q * m, b + 2 * q * m, split), div);
                if (q == 0) { f[0] = v; continue; }
                const int32_t *wa = ta + (q - 1) * m + u, *wb = tb + (q - 1) * m + u;
                const __m256i va = split ? _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)wa))
                                         : _mm256_loadu_si256((const __m256i *)wa);
                const __m256i vb = split ? _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)wb))
                                         : _mm256_loadu_si256((const __m256i *)wb);
                f[q] = rf_cmul(v, va, vb);
            }
            if (radix == 2) {
                rf_store(a, b, split, _mm256_add_epi16(f[0], f[1]));
                rf_store(a + 2 * m, b + 2 * m, split, _mm256_sub_epi16(f[0], f[1]));
                continue;
            }
            const __m256i d = _mm256_sub_epi16(f[0], f[2]), e = _mm256_add_epi16(f[0], f[2]);
            const __m256i g1 = _mm256_add_epi16(f[1], f[3]), h = _mm256_sub_epi16(f[1], f[3]);
            const __m256i hs = _mm256_or_si256(_mm256_slli_epi32(h, 16), _mm256_srli_epi32(h, 16)); /* (h.i, h.r) */
            const __m256i plus = _mm256_add_epi16(d, hs), minus = _mm256_sub_epi16(d, hs);
            rf_store(a, b, split, _mm256_add_epi16(e, g1));
            rf_store(a + 2 * m, b + 2 * m, split, _mm256_blend_epi16(plus, minus, 0xAA));   /* (d.r + h.i, d.i - h.r) */
            rf_store(a + 4 * m, b + 4 * m, split, _mm256_sub_epi16(e, g1));
            rf_store(a + 6 * m, b + 6 * m, split, _mm256_blend_epi16(minus, plus, 0xAA));   /* (d.r - h.i, d.i + h.r) */
        }
}

void mn_signal_rfft_s16(const mn_word *args) {
    const rf_pack *pk = rf_prepare(args);
    if (!pk) { mn_signal_rfft_s16_portable(args); return; }
    const int wide = 0;
    const int32_t frames = MN_I(FRAMES), in_len = MN_I(IN_LEN), n = MN_I(HALF), stages = MN_I(STAGES);
    const int32_t *order = MN_P(const int32_t, ORDER), *plan = MN_P(const int32_t, PLAN);
    const void *twiddles = MN_P(const void, TW), *split = MN_P(const void, SPLIT);
    const int32_t half = MN_I(DIV2);
    for (int32_t frame = 0; frame < frames; frame++) {
        int16_t *y = MN_P(int16_t, OUT) + (size_t)frame * (size_t)(2 * n + 2);
        const int16_t *x = MN_P(const int16_t, IN) + (size_t)frame * (size_t)in_len;
        for (int32_t j = 0; j < n; j++) {
            const int32_t s = 2 * order[j];
            y[2 * j] = s < in_len ? x[s] : 0;
            y[2 * j + 1] = s + 1 < in_len ? x[s + 1] : 0;
        }
        for (int32_t s = 0; s < stages; s++) {
            const int32_t *st = plan + PLAN_WORDS * s;
            if (pk->ta[s]) { rf_stage(y, st, pk->ta[s], pk->tb[s]); continue; }
            const int32_t p = st[0], m = st[1], groups = st[2];
            const int16_t *tw = (const int16_t *)twiddles + st[3];
            for (int32_t g = 0; g < groups; g++)
                for (int32_t u = 0; u < m; u++) butterfly(y, g * p * m + u, st, tw + 2 * (p - 1) * u, wide);
        }
        const cpx z = get(y, 0, half, wide);
        put(y, 0, (cpx){add(z.r, z.i, wide), 0}, wide);
        put(y, n, (cpx){sub(z.r, z.i, wide), 0}, wide);
        for (int32_t k = 1; k <= n / 2; k++) {
            const cpx pk2 = get(y, k, half, wide);
            const cpx qk = {smul(load(y, 2 * (n - k), wide), half, wide),
                            smul(sub(0, load(y, 2 * (n - k) + 1, wide), wide), half, wide)};
            const cpx f1 = {add(pk2.r, qk.r, wide), add(pk2.i, qk.i, wide)};
            const cpx f2 = {sub(pk2.r, qk.r, wide), sub(pk2.i, qk.i, wide)};
            const cpx w = cmul(f2, load(split, 2 * (k - 1), wide), load(split, 2 * (k - 1) + 1, wide), wide);
            put(y, k, (cpx){half_sum(f1.r, w.r, wide), half_sum(f1.i, w.i, wide)}, wide);
            put(y, n - k, (cpx){half_diff(f1.r, w.r, wide), half_diff(w.i, f1.i, wide)}, wide);
        }
    }
}
#else
void mn_signal_rfft_s16(const mn_word *args) { mn_signal_rfft_s16_portable(args); }
#endif
