/* RELU, LEAKY_RELU and RELU6, int8: the host port (x86-64) of kernels/relu.c, same symbols, same argument words.
 *
 * RELU and LEAKY_RELU requantize each value on its own, so the output byte is a function of the input byte alone:
 * per call site, the portable kernel is run once over the 256 int8 values (the call's own words, pointed at a table)
 * and every later call looks each byte up in that table, which gives the portable kernel's bytes by construction
 * (in place or not: each byte is read before its slot is written). With AVX-512 VBMI the lookup takes 64 bytes at a
 * time (two 128-entry byte permutes, the input's sign bit choosing between them). RELU6 only clamps: byte max and min
 * with AVX2.
 */
#define mn_relu_s8 mn_relu_s8_portable
#define mn_leaky_relu_s8 mn_leaky_relu_s8_portable
#define mn_relu6_s8 mn_relu6_s8_portable
#include "relu.portable.inc"
#undef mn_relu_s8
#undef mn_leaky_relu_s8
#undef mn_relu6_s8
#include "mn_host.h"

#if defined(MNH_AVX2)
enum { RELU_ARGS = ALPHA_SHIFT + 1 }; /* LEAKY_RELU's words; RELU reads the first ALPHA_MULT of them */

/* the call site's table: out byte for each input byte, indexed by (uint8_t)input; NULL when out of memory */
static const int8_t *relu_table(const mn_word *args, int words, void (*portable)(const mn_word *)) {
    mnh_slot *slot;
    int8_t *t = (int8_t *)mnh_lookup(args, &slot);
    if (t) return t;
    t = (int8_t *)aligned_alloc(64, 2 * 256);
    if (!t) return NULL;
    int8_t *in = t + 256;
    for (int v = 0; v < 256; v++) in[v] = (int8_t)v; /* in[v] has the bits v: the table's own index */
    mn_word a[RELU_ARGS];
    for (int i = 0; i < words; i++) a[i] = args[i];
    a[OUT] = (mn_word)t, a[IN] = (mn_word)in, a[COUNT] = 256;
    portable(a);
    mnh_keep(slot, args, t);
    return t;
}

static void relu_lookup(int8_t *out, const int8_t *in, int32_t n, const int8_t *t) {
    int32_t i = 0;
#if defined(__AVX512VBMI__) && defined(__AVX512BW__)
    const __m512i lo = _mm512_load_si512((const void *)t), hi = _mm512_load_si512((const void *)(t + 64));
    const __m512i lo2 = _mm512_load_si512((const void *)(t + 128)), hi2 = _mm512_load_si512((const void *)(t + 192));
    for (; i + 64 <= n; i += 64) {
        const __m512i x = _mm512_loadu_si512((const void *)(in + i));
        const __m512i below = _mm512_permutex2var_epi8(lo, x, hi);   /* table[x & 127] */
        const __m512i above = _mm512_permutex2var_epi8(lo2, x, hi2); /* table[128 + (x & 127)] */
        _mm512_storeu_si512((void *)(out + i), _mm512_mask_blend_epi8(_mm512_movepi8_mask(x), below, above));
    }
#endif
    for (; i < n; i++) out[i] = t[(uint8_t)in[i]];
}

/* the call through its table (out of memory: the portable kernel) */
static void by_table(const mn_word *args, int words, void (*portable)(const mn_word *)) {
    const int8_t *t = relu_table(args, words, portable);
    if (t) relu_lookup(MN_P(int8_t, OUT), MN_P(const int8_t, IN), MN_I(COUNT), t);
    else portable(args);
}

void mn_relu_s8(const mn_word *args) { by_table(args, ALPHA_MULT, mn_relu_s8_portable); }
void mn_leaky_relu_s8(const mn_word *args) { by_table(args, RELU_ARGS, mn_leaky_relu_s8_portable); }

void mn_relu6_s8(const mn_word *args) {
    int8_t *out = MN_P(int8_t, R6_OUT);
    const int8_t *in = MN_P(const int8_t, R6_IN);
    const int32_t n = MN_I(R6_COUNT), lower = MN_I(R6_LOWER), upper = MN_I(R6_UPPER);
    if (lower < -128 || upper > 127 || lower > upper) { /* bounds outside int8: the portable kernel's own clamps */
        mn_relu6_s8_portable(args);
        return;
    }
    const __m256i lo = _mm256_set1_epi8((char)lower), hi = _mm256_set1_epi8((char)upper);
    int32_t i = 0;
    for (; i + 32 <= n; i += 32) {
        const __m256i x = _mm256_loadu_si256((const __m256i *)(in + i));
        _mm256_storeu_si256((__m256i *)(out + i), _mm256_min_epi8(_mm256_max_epi8(x, lo), hi));
    }
    for (; i < n; i++) out[i] = (int8_t)(in[i] > upper ? upper : in[i] < lower ? lower : in[i]);
}
#else
void mn_relu_s8(const mn_word *args) { mn_relu_s8_portable(args); }
void mn_leaky_relu_s8(const mn_word *args) { mn_leaky_relu_s8_portable(args); }
void mn_relu6_s8(const mn_word *args) { mn_relu6_s8_portable(args); }
#endif
