/* GATHER, any element type: per batch b and outer index o, output block (b, o, j) is input block (b, o, pos[b][j])
 * of INNER bytes (the input seen as batch x outer x axis x inner, positions int32).
 *
 * A position outside [0, AXIS) fails the invoke, as in TFLM: the kernel stops with MN_GATHER_BAD_POSITION in
 * mn_status (the output then incomplete), and the caller reports it. */
#include "mn_kernels.h"

enum { OUT, IN, POS, BATCH, OUTER, AXIS, INNER, COUNT };
#define MN_GATHER_BAD_POSITION (-1001)

__attribute__((weak)) int32_t mn_status; /* the kernels' error channel (see spill.c) */

void mn_gather(const mn_word *args) {
    uint8_t *out = MN_P(uint8_t, OUT);
    const uint8_t *in = MN_P(const uint8_t, IN);
    const int32_t *pos = MN_P(const int32_t, POS);
    const int32_t batch = MN_I(BATCH), outer = MN_I(OUTER), axis = MN_I(AXIS), count = MN_I(COUNT);
    const size_t inner = (size_t)args[INNER];
    for (int32_t b = 0; b < batch; b++)
        for (int32_t i = 0; i < count; i++)
            if (pos[(size_t)b * count + i] < 0 || pos[(size_t)b * count + i] >= axis) {
                mn_status = MN_GATHER_BAD_POSITION;
                return;
            }
    for (int32_t b = 0; b < batch; b++)
        for (int32_t o = 0; o < outer; o++) {
            const uint8_t *block = in + ((size_t)b * outer + o) * axis * inner;
            for (int32_t i = 0; i < count; i++, out += inner)
                memcpy(out, block + (size_t)pos[(size_t)b * count + i] * inner, inner);
        }
}

/* SPLIT and SPLIT_V, any element type: the input as OUTER rows of ROW bytes; output k takes bytes [offset_k,
 * offset_k + size_k) of every row. Arguments after COUNT: (output, offset, size) per output. */
enum { S_IN, S_OUTER, S_ROW, S_COUNT, S_PARTS };

void mn_split(const mn_word *args) {
    const uint8_t *in = MN_P(const uint8_t, S_IN);
    const int32_t outer = MN_I(S_OUTER), count = MN_I(S_COUNT);
    const size_t row = (size_t)args[S_ROW];
    for (int32_t k = 0; k < count; k++) {
        const mn_word *part = args + S_PARTS + 3 * k;
        uint8_t *out = (uint8_t *)part[0];
        const size_t offset = (size_t)part[1], size = (size_t)part[2];
        for (int32_t r = 0; r < outer; r++) memcpy(out + (size_t)r * size, in + (size_t)r * row + offset, size);
    }
}
