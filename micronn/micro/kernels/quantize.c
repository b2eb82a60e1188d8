/* QUANTIZE between integer types (int8, uint8, int16, int32): requantize x - in_zp by the Python kernel's
 * multiplier and shift, add out_zp (wrapping like int32), clamp to the output type. Element by element in
 * order, so the output may sit on its input (the planner's in-place elementwise sharing). */
#include "mn_kernels.h"

enum { OUT, IN, COUNT, IN_TYPE, OUT_TYPE, IN_ZP, OUT_ZP, MULT, SHIFT, OUT_MIN, OUT_MAX };

/* int16 -> int8 with a multiplier that mn_rq folds into one multiply-accumulate: the sum y + out_zp cannot wrap
 * there (|y| <= 2^29), so the exact clamp of mn_rq is the wrapping add's. */
static inline int32_t folded(const mn_rq *r, int32_t a) {
    const uint32_t s = (uint32_t)(a >> 31);
    const int64_t v = (int64_t)((((uint64_t)(r->hi + s) << 32) | (0x40000000u | (s << 31))) +
                                (uint64_t)((int64_t)a * r->mult));
    return (int32_t)(v >> 32) >> (r->e - 1);
}

__attribute__((noinline)) static void s16_to_s8(int8_t *out, const int16_t *in, size_t count, int32_t in_zp,
                                                const mn_rq *q, int32_t lo, int32_t hi) {
    const mn_rq r = *q;
#if defined(__ARM_FEATURE_DSP)
    if (lo == -128 && hi == 127) { /* the whole int8 range: one SSAT */
        for (size_t i = 0; i < count; i++) out[i] = (int8_t)__builtin_arm_ssat(folded(&r, in[i] - in_zp), 8);
        return;
    }
#endif
    for (size_t i = 0; i < count; i++) out[i] = (int8_t)mn_clamp(folded(&r, in[i] - in_zp), lo, hi);
}

void mn_quantize(const mn_word *args) {
    void *out = MN_P(void, OUT);
    const void *in = MN_P(const void, IN);
    const size_t count = (size_t)args[COUNT];
    const int in_type = MN_I(IN_TYPE), out_type = MN_I(OUT_TYPE);
    const int32_t in_zp = MN_I(IN_ZP), out_zp = MN_I(OUT_ZP), mult = MN_I(MULT), shift = MN_I(SHIFT);
    const int32_t lo = MN_I(OUT_MIN), hi = MN_I(OUT_MAX);
    const mn_rq q = mn_rq_init(mult, shift, out_zp);
    if (in_type == MN_INT16 && out_type == MN_INT8 && q.kind == MN_RQ_FOLDED && in_zp >= -65536 && in_zp <= 65535) {
        s16_to_s8((int8_t *)out, (const int16_t *)in, count, in_zp, &q, lo, hi);
        return;
    }
    for (size_t i = 0; i < count; i++) {
        const int32_t centred = (int32_t)((uint32_t)mn_load(in, in_type, i) - (uint32_t)in_zp);
        mn_store(out, out_type, i, mn_clamp(mn_wrap_add(mn_mbqm(centred, mult, shift), out_zp), lo, hi));
    }
}
