/* RESHAPE (and SHAPE, whose dimensions are a constant): a byte copy, nothing when the plan aliases the output
 * onto the input. */
#include "mn_kernels.h"

enum { DST, SRC, NBYTES };

void mn_copy(const mn_word *args) {
    if (MN_P(void, DST) != MN_P(const void, SRC)) mn_move(MN_P(void, DST), MN_P(const void, SRC), (size_t)args[NBYTES]);
}
