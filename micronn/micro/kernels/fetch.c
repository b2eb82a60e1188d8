/* Fetch (TinySeg): a concatenation whose parts are arena tensors or tensors spilled to storage.
 *
 * The output is `outer` rows, each holding every part's block in order. Arguments after COUNT are (kind, source,
 * bytes per row) triples: kind 0 an arena tensor at address `source`, kind 1 the object stored under id `source`.
 * A spilled part lands straight in the output when the output is one row; otherwise `line` rows at a time go
 * through the scratch buffer prepare requested (one read per `line` rows, not per row) and are spread out from
 * there. The first failed storage read stops the kernel, its code left in mn_status: the output is then
 * incomplete. */
#include "mn_kernels.h"

enum { OUT, SCRATCH, STORAGE, OUTER, LINE, COUNT, PARTS };
enum { PART_RAM = 0, PART_VICTIM = 1 };

/* The error channel of the kernels that reach storage: the first failing call's code, read and cleared by the
 * caller (the generated model_invoke, the host-driven runtime). Weak: every such kernel defines it. */
__attribute__((weak)) int32_t mn_status;

void mn_fetch(const mn_word *args) {
    uint8_t *out = MN_P(uint8_t, OUT), *scratch = MN_P(uint8_t, SCRATCH);
    mn_storage_fn storage = MN_STORAGE(STORAGE);
    const uint32_t outer = (uint32_t)args[OUTER], line = (uint32_t)args[LINE], count = (uint32_t)args[COUNT];
    size_t row = 0;
    for (uint32_t i = 0; i < count; i++) row += (size_t)args[PARTS + 3 * i + 2];
    size_t col = 0;
    for (uint32_t i = 0; i < count; i++) {
        const mn_word *part = args + PARTS + 3 * i;
        const size_t bytes = (size_t)part[2];
        if (part[0] == PART_RAM) {
            const uint8_t *src = (const uint8_t *)part[1];
            for (uint32_t r = 0; r < outer; r++) memcpy(out + r * row + col, src + r * bytes, bytes);
        } else if (outer == 1) {
            const int e = storage((uint32_t)part[1], 0, out + col, (uint32_t)bytes, 0);
            if (e != 0) { mn_status = e; return; }
        } else {
            const uint32_t step = (uint32_t)(line * bytes);
            for (uint32_t r = 0, j = 0; r < outer; r += line, j++) {
                const int e = storage((uint32_t)part[1], j * step, scratch, step, 0);
                if (e != 0) { mn_status = e; return; }
                for (uint32_t k = 0; k < line; k++) memcpy(out + (r + k) * row + col, scratch + k * bytes, bytes);
            }
        }
        col += bytes;
    }
}
