/* CAST between the integer types and bool, value by value like C's conversions on TFLM's host: a value is read
 * sign- or zero-extended to 32 bits (uint32 is read as its int32 bits, bool as the byte 0 or 1) and stored as its
 * low bits; to bool stores x != 0.
 *
 * The planner may place the output over the input, shifted (the element sizes may differ). Each element is read
 * before it is written, and the lowering picks the direction in which no write reaches an input still unread:
 * first to last, or last to first (BACKWARD), or refuses the plan.
 */
#include "mn_kernels.h"

enum { OUT, IN, COUNT, IN_TYPE, OUT_TYPE, BACKWARD };
enum { MN_BOOL = 4 }; /* an output type beside mn_kernels.h's integer codes */

void mn_cast(const mn_word *args) {
    void *out = MN_P(void, OUT);
    const void *x = MN_P(const void, IN);
    const int32_t count = MN_I(COUNT), in_type = MN_I(IN_TYPE), out_type = MN_I(OUT_TYPE);
    const int32_t backward = MN_I(BACKWARD), step = backward ? -1 : 1;
    for (int32_t k = 0, i = backward ? count - 1 : 0; k < count; k++, i += step) {
        const int32_t v = mn_load(x, in_type, (size_t)i);
        if (out_type == MN_BOOL) ((uint8_t *)out)[i] = v != 0;
        else mn_store(out, out_type, (size_t)i, v);
    }
}
