/* float32 elementwise: ADD, SUB and MUL with broadcasting and the fused activation (mn_elementwise.h's walk), and
 * LOGISTIC and TANH with the C library's expf and tanhf (mn_libm.h), bit for bit with micronn's reference.
 *
 * ADD/SUB/MUL: the float32 result of the two operands, then std::min(std::max(x, lo), hi) with the activation's
 * range (+-FLT_MAX without one, so an infinity saturates). Where both operands of ADD or MUL are NaN, the result is
 * the first's NaN, quieted, or the second's where SWAP says: the NaN x86 gives in the order TFLM's compiled loops
 * use (see micronn/kernels/_elementwise.py, nan_from_second), chosen explicitly because a compiler may put either
 * operand of a sum or product first. Each element is read before it is written, so an output exactly over an
 * input is fine. */
#include "mn_elementwise.h"
#include "mn_libm.h"

enum { OUT, IN1, IN2, LO, HI, SWAP, GEO };
enum { UN_OUT, UN_IN, UN_SIZE };

static inline float load_f32(const uint8_t *p) { float x; memcpy(&x, p, 4); return x; }
static inline float act(float x, const mn_word *args) {
    return mn_f32_clamp(x, mn_f32_arg(args, LO), mn_f32_arg(args, HI));
}

/* y = a + b or a * b, unless both are NaN: then the first input's NaN, or the second's where SWAP says, quieted. (x86
 * returns its instruction's first source's NaN, but the compiler may put either operand of a sum or product first.) */
static inline float both_nan(float y, float a, float b, int swap) {
    if (a != a && b != b) {
        uint32_t u;
        memcpy(&u, swap ? &b : &a, 4);
        u |= 0x00400000u;
        memcpy(&y, &u, 4);
    }
    return y;
}

static void add_row(uint8_t *p0, const uint8_t *p1, const uint8_t *p2, int32_t n, int32_t s0, int32_t s1, int32_t s2,
                    const mn_word *args) {
    const int swap = MN_I(SWAP);
    for (int32_t i = 0; i < n; i++, p0 += s0, p1 += s1, p2 += s2) {
        const float a = load_f32(p1), b = load_f32(p2);
        const float y = act(both_nan(a + b, a, b, swap), args);
        memcpy(p0, &y, 4);
    }
}

static void sub_row(uint8_t *p0, const uint8_t *p1, const uint8_t *p2, int32_t n, int32_t s0, int32_t s1, int32_t s2,
                    const mn_word *args) {
    for (int32_t i = 0; i < n; i++, p0 += s0, p1 += s1, p2 += s2) {
        const float y = act(load_f32(p1) - load_f32(p2), args);
        memcpy(p0, &y, 4);
    }
}

static void mul_row(uint8_t *p0, const uint8_t *p1, const uint8_t *p2, int32_t n, int32_t s0, int32_t s1, int32_t s2,
                    const mn_word *args) {
    const int swap = MN_I(SWAP);
    for (int32_t i = 0; i < n; i++, p0 += s0, p1 += s1, p2 += s2) {
        const float a = load_f32(p1), b = load_f32(p2);
        const float y = act(both_nan(a * b, a, b, swap), args);
        memcpy(p0, &y, 4);
    }
}

void mn_add_f32(const mn_word *args) {
    mn_walk(args, GEO, MN_P(uint8_t, OUT), MN_P(const uint8_t, IN1), MN_P(const uint8_t, IN2), add_row);
}

void mn_sub_f32(const mn_word *args) {
    mn_walk(args, GEO, MN_P(uint8_t, OUT), MN_P(const uint8_t, IN1), MN_P(const uint8_t, IN2), sub_row);
}

void mn_mul_f32(const mn_word *args) {
    mn_walk(args, GEO, MN_P(uint8_t, OUT), MN_P(const uint8_t, IN1), MN_P(const uint8_t, IN2), mul_row);
}

void mn_logistic_f32(const mn_word *args) {
    float *out = MN_P(float, UN_OUT);
    const float *in = MN_P(const float, UN_IN);
    const int32_t size = MN_I(UN_SIZE);
    for (int32_t i = 0; i < size; i++) out[i] = mn_libm_sigmoid(in[i]);
}

void mn_tanh_f32(const mn_word *args) {
    float *out = MN_P(float, UN_OUT);
    const float *in = MN_P(const float, UN_IN);
    const int32_t size = MN_I(UN_SIZE);
    for (int32_t i = 0; i < size; i++) out[i] = mn_libm_tanhf(in[i]);
}
