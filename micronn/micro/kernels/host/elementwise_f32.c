/* ADD, SUB, MUL, LOGISTIC and TANH, float32: the host port (x86-64 with AVX2) of kernels/elementwise_f32.c, same
 * symbols, same argument words.
 *
 * LOGISTIC and TANH: mn_host_libm.h's sigmoid and tanhf over the whole tensor (the scalar functions' bits on every
 * input, 16 or 8 lanes at a time, the tail as one more masked or buffered vector).
 * ADD, SUB, MUL: the walk's rows whose operands are contiguous, or whose one input is broadcast, 8 elements at a time:
 * the same float operation, where both operands are NaN the portable row's choice (both_nan), then its clamp
 * `if (x < lo) x = lo; if (hi < x) x = hi` as max(lo, x) and min(hi, x) (each keeps x where the comparison fails, as
 * a NaN x); a row's last n % 8 elements as one masked vector with AVX-512 VL, else the portable row's, as are
 * other rows (and rows of fewer than 8). Every element is read before it is written, so an output exactly over its
 * input is fine.
 */
#define mn_add_f32 mn_add_f32_portable
#define mn_sub_f32 mn_sub_f32_portable
#define mn_mul_f32 mn_mul_f32_portable
#define mn_logistic_f32 mn_logistic_f32_portable
#define mn_tanh_f32 mn_tanh_f32_portable
#include "elementwise_f32.portable.inc"
#undef mn_add_f32
#undef mn_sub_f32
#undef mn_mul_f32
#undef mn_logistic_f32
#undef mn_tanh_f32
#include "mn_host.h"
#include "mn_host_libm.h"

#if defined(MNH_AVX2)
enum { ADD_OP, SUB_OP, MUL_OP };

/* `op` and `swap` are constants at each call (the compiler keeps one loop per case) */
__attribute__((always_inline)) static inline __m256 binary8(__m256 a, __m256 b, int op, int swap, __m256 lo,
                                                            __m256 hi) {
    __m256 y = op == SUB_OP ? _mm256_sub_ps(a, b) : op == ADD_OP ? _mm256_add_ps(a, b) : _mm256_mul_ps(a, b);
    if (op != SUB_OP) { /* both NaN: the portable row's both_nan */
        const __m256 two = _mm256_and_ps(_mm256_cmp_ps(a, a, _CMP_UNORD_Q), _mm256_cmp_ps(b, b, _CMP_UNORD_Q));
        const __m256 quiet = _mm256_castsi256_ps(_mm256_set1_epi32(0x00400000));
        y = _mm256_blendv_ps(y, _mm256_or_ps(swap ? b : a, quiet), two);
    }
    return _mm256_min_ps(hi, _mm256_max_ps(lo, y));
}

__attribute__((always_inline)) static inline void binary_row(uint8_t *p0, const uint8_t *p1, const uint8_t *p2,
                                                             int32_t n, int32_t s0, int32_t s1, int32_t s2,
                                                             const mn_word *args, int op, int swap, mn_row_fn *rest) {
    int32_t i = 0;
    if (s0 == 4 && (s1 == 4 || s1 == 0) && (s2 == 4 || s2 == 0) && n >= 8) {
        const __m256 lo = _mm256_set1_ps(mn_f32_arg(args, LO)), hi = _mm256_set1_ps(mn_f32_arg(args, HI));
        float *o = (float *)(void *)p0;
        const float *x1 = (const float *)(const void *)p1, *x2 = (const float *)(const void *)p2;
        if (s1 == 4 && s2 == 4) {
            for (; i + 8 <= n; i += 8)
                _mm256_storeu_ps(o + i, binary8(_mm256_loadu_ps(x1 + i), _mm256_loadu_ps(x2 + i), op, swap, lo, hi));
        } else if (s1 == 4) {
            const __m256 b = _mm256_set1_ps(*x2);
            for (; i + 8 <= n; i += 8) _mm256_storeu_ps(o + i, binary8(_mm256_loadu_ps(x1 + i), b, op, swap, lo, hi));
        } else if (s2 == 4) {
            const __m256 a = _mm256_set1_ps(*x1);
            for (; i + 8 <= n; i += 8) _mm256_storeu_ps(o + i, binary8(a, _mm256_loadu_ps(x2 + i), op, swap, lo, hi));
        }
#if defined(__AVX512VL__)
        if (i < n) { /* the last n % 8 as one masked vector (a broadcast operand read once, as above) */
            const __mmask8 m = (__mmask8)((1u << (n - i)) - 1);
            const __m256 a = s1 ? _mm256_maskz_loadu_ps(m, x1 + i) : _mm256_set1_ps(*x1);
            const __m256 b = s2 ? _mm256_maskz_loadu_ps(m, x2 + i) : _mm256_set1_ps(*x2);
            _mm256_mask_storeu_ps(o + i, m, binary8(a, b, op, swap, lo, hi));
            return;
        }
#endif
    }
    if (i < n) rest(p0 + (size_t)s0 * i, p1 + (size_t)s1 * i, p2 + (size_t)s2 * i, n - i, s0, s1, s2, args);
}

static void fast_add_rows(uint8_t *p0, const uint8_t *p1, const uint8_t *p2, int32_t n, int32_t s0, int32_t s1,
                          int32_t s2, const mn_word *args) {
    if (MN_I(SWAP)) binary_row(p0, p1, p2, n, s0, s1, s2, args, ADD_OP, 1, add_row);
    else binary_row(p0, p1, p2, n, s0, s1, s2, args, ADD_OP, 0, add_row);
}

static void fast_sub_rows(uint8_t *p0, const uint8_t *p1, const uint8_t *p2, int32_t n, int32_t s0, int32_t s1,
                          int32_t s2, const mn_word *args) {
    binary_row(p0, p1, p2, n, s0, s1, s2, args, SUB_OP, 0, sub_row);
}

static void fast_mul_rows(uint8_t *p0, const uint8_t *p1, const uint8_t *p2, int32_t n, int32_t s0, int32_t s1,
                          int32_t s2, const mn_word *args) {
    if (MN_I(SWAP)) binary_row(p0, p1, p2, n, s0, s1, s2, args, MUL_OP, 1, mul_row);
    else binary_row(p0, p1, p2, n, s0, s1, s2, args, MUL_OP, 0, mul_row);
}

void mn_add_f32(const mn_word *args) {
    mn_walk(args, GEO, MN_P(uint8_t, OUT), MN_P(const uint8_t, IN1), MN_P(const uint8_t, IN2), fast_add_rows);
}

void mn_sub_f32(const mn_word *args) {
    mn_walk(args, GEO, MN_P(uint8_t, OUT), MN_P(const uint8_t, IN1), MN_P(const uint8_t, IN2), fast_sub_rows);
}

void mn_mul_f32(const mn_word *args) {
    mn_walk(args, GEO, MN_P(uint8_t, OUT), MN_P(const uint8_t, IN1), MN_P(const uint8_t, IN2), fast_mul_rows);
}

/* out[0..size) = f(in[0..size)) */
#define UNARY(name, map)                                                                                           \
    void name(const mn_word *args) { map(MN_P(float, UN_OUT), MN_P(const float, UN_IN), MN_I(UN_SIZE)); }
UNARY(mn_logistic_f32, mnh_sigmoid_n)
UNARY(mn_tanh_f32, mnh_tanhf_n)
#undef UNARY
#else
void mn_add_f32(const mn_word *args) { mn_add_f32_portable(args); }
void mn_sub_f32(const mn_word *args) { mn_sub_f32_portable(args); }
void mn_mul_f32(const mn_word *args) { mn_mul_f32_portable(args); }
void mn_logistic_f32(const mn_word *args) { mn_logistic_f32_portable(args); }
void mn_tanh_f32(const mn_word *args) { mn_tanh_f32_portable(args); }
#endif
