/* A run of int32 elementwise operators fused by the lowering (micronn.micro.lower.fuse_chains), element by element:
 * the first operator's input read as int32 (sign- or zero-extended, as CAST reads it), then each step exactly as
 * its own kernel computes it against its constant: ADD, SUB and MUL wrap like C's int32 arithmetic on TFLM's host,
 * DIV truncates toward zero (the lowering fuses no divisor 0 or -1, so no step can fail), each clamped to its range;
 * MINIMUM and MAXIMUM pick. The last operator's output type keeps the low bits (CAST). Arguments after STEPS are
 * (code, constant, lo, hi) per step.
 *
 * Element i is read before it is written, and the lowering fuses a run only where the output lies apart from the
 * input or at or below it with elements no wider: writing element i then never reaches an element still unread.
 */
#include "mn_kernels.h"

enum { OUT, IN, COUNT, IN_TYPE, OUT_TYPE, STEPS, STEP0 };
enum { CHAIN_ADD, CHAIN_SUB, CHAIN_MUL, CHAIN_DIV, CHAIN_MIN, CHAIN_MAX };

static inline int32_t chain_step(int32_t v, int32_t code, int32_t c, int32_t lo, int32_t hi) {
    switch (code) {
    case CHAIN_ADD: return mn_clamp((int32_t)((uint32_t)v + (uint32_t)c), lo, hi);
    case CHAIN_SUB: return mn_clamp((int32_t)((uint32_t)v - (uint32_t)c), lo, hi);
    case CHAIN_MUL: return mn_clamp((int32_t)((uint32_t)v * (uint32_t)c), lo, hi);
    case CHAIN_DIV: return mn_clamp(v / c, lo, hi);
    case CHAIN_MIN: return v < c ? v : c;
    default: return v > c ? v : c;
    }
}

void mn_chain_s32(const mn_word *args) {
    void *out = MN_P(void, OUT);
    const void *x = MN_P(const void, IN);
    const int32_t count = MN_I(COUNT), in_type = MN_I(IN_TYPE), out_type = MN_I(OUT_TYPE), steps = MN_I(STEPS);
    for (int32_t i = 0; i < count; i++) {
        int32_t v = mn_load(x, in_type, (size_t)i);
        for (int32_t s = 0; s < steps; s++) {
            const mn_word *st = args + STEP0 + 4 * s;
            v = chain_step(v, (int32_t)st[0], (int32_t)st[1], (int32_t)st[2], (int32_t)st[3]);
        }
        mn_store(out, out_type, (size_t)i, v);
    }
}
