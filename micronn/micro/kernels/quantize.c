/* QUANTIZE between integer types (int8, uint8, int16, int32): requantize x - in_zp by the Python kernel's
 * multiplier and shift, add out_zp (wrapping like int32), clamp to the output type. Element by element in
 * order, so the output may sit on its input (the planner's in-place elementwise sharing). */
#include "mn_kernels.h"

enum { OUT, IN, COUNT, IN_TYPE, OUT_TYPE, IN_ZP, OUT_ZP, MULT, SHIFT, OUT_MIN, OUT_MAX };

void mn_quantize(const mn_word *args) {
    void *out = MN_P(void, OUT);
    const void *in = MN_P(const void, IN);
    const size_t count = (size_t)args[COUNT];
    const int in_type = MN_I(IN_TYPE), out_type = MN_I(OUT_TYPE);
    const int32_t in_zp = MN_I(IN_ZP), out_zp = MN_I(OUT_ZP), mult = MN_I(MULT), shift = MN_I(SHIFT);
    const int32_t lo = MN_I(OUT_MIN), hi = MN_I(OUT_MAX);
    for (size_t i = 0; i < count; i++) {
        const int32_t centred = (int32_t)((uint32_t)mn_load(in, in_type, i) - (uint32_t)in_zp);
        mn_store(out, out_type, i, mn_clamp(mn_wrap_add(mn_mbqm(centred, mult, shift), out_zp), lo, hi));
    }
}
