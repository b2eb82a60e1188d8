/* Single-core multiply-accumulate peaks of this host, for speed.py's arithmetic limit: long runs of independent
 * multiply-adds held in registers, with the widest instructions the compiler targets (-march=native), no memory
 * traffic. peak_<kind>(rounds) runs `rounds` rounds of peak_macs(kind) multiply-accumulates and returns a value
 * that depends on all of them; an empty asm makes each round's operand opaque, so no round can be folded away.
 * kind: 0 float32 (fused multiply-add), 1 int8 (u8 x s8 products summed into int32), 2 int16 (into int32), 3
 * float32 with each product rounded before its add (two instructions: the order exact float kernels must keep). */
#include <immintrin.h>
#include <stdint.h>

#define ACC 12 /* independent accumulators: enough to cover the multiply-add latency on two pipes */
#define OPAQUE(v) __asm__ volatile("" : "+v"(v))

#if defined(__AVX512F__)
#define F32_LANES 16
#elif defined(__AVX2__) && defined(__FMA__)
#define F32_LANES 8
#else
#define F32_LANES 1
#endif
#if defined(__AVX512VNNI__) || defined(__AVX512BW__)
#define I8_LANES 64
#define I16_LANES 32
#elif defined(__AVX2__)
#define I8_LANES 32
#define I16_LANES 16
#else
#define I8_LANES 1
#define I16_LANES 1
#endif

long peak_macs(int kind) {
    const long lanes[4] = {F32_LANES, I8_LANES, I16_LANES, F32_LANES};
    return 0 <= kind && kind < 4 ? ACC * lanes[kind] : 0;
}

/* names the instructions each kind runs, for the benchmark's printout */
const char *peak_isa(int kind) {
    switch (kind) {
#if defined(__AVX512F__)
    case 0: return "AVX-512 FMA";
    case 3: return "AVX-512 mul, add";
#elif defined(__AVX2__) && defined(__FMA__)
    case 0: return "AVX2 FMA";
    case 3: return "AVX2 mul, add";
#endif
#if defined(__AVX512VNNI__)
    case 1: return "AVX-512 VNNI vpdpbusd";
    case 2: return "AVX-512 VNNI vpdpwssd";
#elif defined(__AVX512BW__)
    case 1: return "AVX-512BW vpmaddubsw+vpmaddwd";
    case 2: return "AVX-512BW vpmaddwd";
#elif defined(__AVX2__)
    case 1: return "AVX2 vpmaddubsw+vpmaddwd";
    case 2: return "AVX2 vpmaddwd";
#endif
    default: return "scalar";
    }
}

static inline float peak_f32_as(long rounds, int fused);
float peak_f32(long rounds) { return peak_f32_as(rounds, 1); }
float peak_f32_unfused(long rounds) { return peak_f32_as(rounds, 0); }

/* fused: one FMA per multiply-accumulate; else a multiply, then an add */
static inline float peak_f32_as(long rounds, int fused) {
#if F32_LANES == 16
    __m512 acc[ACC], m = _mm512_set1_ps(0.999f), a = _mm512_set1_ps(1e-3f);
    for (int i = 0; i < ACC; i++) acc[i] = _mm512_set1_ps((float)i);
    for (long r = 0; r < rounds; r++) {
        OPAQUE(m);
        for (int i = 0; i < ACC; i++)
            acc[i] = fused ? _mm512_fmadd_ps(acc[i], m, a) : _mm512_add_ps(_mm512_mul_ps(acc[i], m), a);
    }
    __m512 s = acc[0];
    for (int i = 1; i < ACC; i++) s = _mm512_add_ps(s, acc[i]);
    return _mm512_reduce_add_ps(s);
#elif F32_LANES == 8
    __m256 acc[ACC], m = _mm256_set1_ps(0.999f), a = _mm256_set1_ps(1e-3f);
    for (int i = 0; i < ACC; i++) acc[i] = _mm256_set1_ps((float)i);
    for (long r = 0; r < rounds; r++) {
        OPAQUE(m);
        for (int i = 0; i < ACC; i++)
            acc[i] = fused ? _mm256_fmadd_ps(acc[i], m, a) : _mm256_add_ps(_mm256_mul_ps(acc[i], m), a);
    }
    float out[8], s = 0.0f;
    for (int i = 1; i < ACC; i++) acc[0] = _mm256_add_ps(acc[0], acc[i]);
    _mm256_storeu_ps(out, acc[0]);
    for (int i = 0; i < 8; i++) s += out[i];
    return s;
#else
    float acc[ACC], m = 0.999f;
    for (int i = 0; i < ACC; i++) acc[i] = (float)i;
    for (long r = 0; r < rounds; r++) {
        __asm__ volatile("" : "+m"(m));
        for (int i = 0; i < ACC; i++) acc[i] = acc[i] * m + 1e-3f; /* fused or not as the compiler's flags say */
    }
    float s = 0.0f;
    for (int i = 0; i < ACC; i++) s += acc[i];
    return s;
#endif
}

#if I8_LANES == 64
static inline int32_t sum512(__m512i v) { return _mm512_reduce_add_epi32(v); }
#endif
#if I8_LANES == 32
static inline int32_t sum256(__m256i v) {
    int32_t out[8], s = 0;
    _mm256_storeu_si256((__m256i *)out, v);
    for (int i = 0; i < 8; i++) s += out[i];
    return s;
}
#endif

int32_t peak_i8(long rounds) {
#if I8_LANES == 64
    __m512i acc[ACC], a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-5);
    for (int i = 0; i < ACC; i++) acc[i] = _mm512_set1_epi32(i);
#if !defined(__AVX512VNNI__)
    const __m512i ones = _mm512_set1_epi16(1);
#endif
    for (long r = 0; r < rounds; r++) {
        OPAQUE(b);
        for (int i = 0; i < ACC; i++)
#if defined(__AVX512VNNI__)
            acc[i] = _mm512_dpbusd_epi32(acc[i], a, b);
#else
            acc[i] = _mm512_add_epi32(acc[i], _mm512_madd_epi16(_mm512_maddubs_epi16(a, b), ones));
#endif
    }
    for (int i = 1; i < ACC; i++) acc[0] = _mm512_add_epi32(acc[0], acc[i]);
    return sum512(acc[0]);
#elif I8_LANES == 32
    __m256i acc[ACC], a = _mm256_set1_epi8(3), b = _mm256_set1_epi8(-5);
    const __m256i ones = _mm256_set1_epi16(1);
    for (int i = 0; i < ACC; i++) acc[i] = _mm256_set1_epi32(i);
    for (long r = 0; r < rounds; r++) {
        OPAQUE(b);
        for (int i = 0; i < ACC; i++)
            acc[i] = _mm256_add_epi32(acc[i], _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), ones));
    }
    for (int i = 1; i < ACC; i++) acc[0] = _mm256_add_epi32(acc[0], acc[i]);
    return sum256(acc[0]);
#else
    int32_t acc[ACC];
    int8_t b = -5;
    for (int i = 0; i < ACC; i++) acc[i] = i;
    for (long r = 0; r < rounds; r++) {
        __asm__ volatile("" : "+m"(b));
        for (int i = 0; i < ACC; i++) acc[i] += 3 * b;
    }
    int32_t s = 0;
    for (int i = 0; i < ACC; i++) s += acc[i];
    return s;
#endif
}

int32_t peak_i16(long rounds) {
#if I16_LANES == 32
    __m512i acc[ACC], a = _mm512_set1_epi16(3), b = _mm512_set1_epi16(-5);
    for (int i = 0; i < ACC; i++) acc[i] = _mm512_set1_epi32(i);
    for (long r = 0; r < rounds; r++) {
        OPAQUE(b);
        for (int i = 0; i < ACC; i++)
#if defined(__AVX512VNNI__)
            acc[i] = _mm512_dpwssd_epi32(acc[i], a, b);
#else
            acc[i] = _mm512_add_epi32(acc[i], _mm512_madd_epi16(a, b));
#endif
    }
    for (int i = 1; i < ACC; i++) acc[0] = _mm512_add_epi32(acc[0], acc[i]);
    return sum512(acc[0]);
#elif I16_LANES == 16
    __m256i acc[ACC], a = _mm256_set1_epi16(3), b = _mm256_set1_epi16(-5);
    for (int i = 0; i < ACC; i++) acc[i] = _mm256_set1_epi32(i);
    for (long r = 0; r < rounds; r++) {
        OPAQUE(b);
        for (int i = 0; i < ACC; i++) acc[i] = _mm256_add_epi32(acc[i], _mm256_madd_epi16(a, b));
    }
    for (int i = 1; i < ACC; i++) acc[0] = _mm256_add_epi32(acc[0], acc[i]);
    return sum256(acc[0]);
#else
    int32_t acc[ACC];
    int16_t b = -5;
    for (int i = 0; i < ACC; i++) acc[i] = i;
    for (long r = 0; r < rounds; r++) {
        __asm__ volatile("" : "+m"(b));
        for (int i = 0; i < ACC; i++) acc[i] += 3 * b;
    }
    int32_t s = 0;
    for (int i = 0; i < ACC; i++) s += acc[i];
    return s;
#endif
}
