/* CONCATENATION (and PACK, a concatenation along a new axis): for each of `outer` rows, every input's row of
 * bytes in turn. Arguments after COUNT are (input address, bytes per row) pairs. */
#include "mn_kernels.h"

enum { OUT, OUTER, COUNT, INPUTS };

void mn_concatenation(const mn_word *args) {
    uint8_t *o = MN_P(uint8_t, OUT);
    const int outer = MN_I(OUTER), count = MN_I(COUNT);
    for (int r = 0; r < outer; r++)
        for (int i = 0; i < count; i++) {
            const size_t bytes = (size_t)args[INPUTS + 2 * i + 1];
            const uint8_t *x = (const uint8_t *)args[INPUTS + 2 * i] + r * bytes;
            if (x != o) memcpy(o, x, bytes);
            o += bytes;
        }
}
