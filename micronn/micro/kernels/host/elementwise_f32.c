/* LOGISTIC and TANH, float32: the host port (x86-64 with AVX2) of kernels/elementwise_f32.c's two unary kernels,
 * same symbols, same argument words (ADD, SUB and MUL stay the portable file's).
 *
 * Whole vectors of 8 through mn_host_libm.h's sigmoid and tanhf (the scalar functions' bits on every input, two
 * vectors side by side), the last size % 8 elements through the scalar functions. Every element is read before it
 * is written, so an output exactly over its input is fine.
 */
#define mn_logistic_f32 mn_logistic_f32_portable
#define mn_tanh_f32 mn_tanh_f32_portable
#include "elementwise_f32.portable.inc"
#undef mn_logistic_f32
#undef mn_tanh_f32
#include "mn_host.h"
#include "mn_host_libm.h"

#if defined(MNH_AVX2)
void mn_logistic_f32(const mn_word *args) {
    float *out = MN_P(float, UN_OUT);
    const float *in = MN_P(const float, UN_IN);
    const int32_t size = MN_I(UN_SIZE), whole = size / 8 * 8;
    mnh_sigmoid_n(out, in, whole);
    for (int32_t i = whole; i < size; i++) out[i] = mn_libm_sigmoid(in[i]);
}

void mn_tanh_f32(const mn_word *args) {
    float *out = MN_P(float, UN_OUT);
    const float *in = MN_P(const float, UN_IN);
    const int32_t size = MN_I(UN_SIZE), whole = size / 8 * 8;
    mnh_tanhf_n(out, in, whole);
    for (int32_t i = whole; i < size; i++) out[i] = mn_libm_tanhf(in[i]);
}
#else
void mn_logistic_f32(const mn_word *args) { mn_logistic_f32_portable(args); }
void mn_tanh_f32(const mn_word *args) { mn_tanh_f32_portable(args); }
#endif
