/* WHILE: the cond and body subgraphs as lists of kernel calls, the loop state copied between the operator's
 * tensors and the subgraphs' as the interpreter (and TFLM) copy it.
 *
 * COND and BODY point at lists `n, fn_0, args_0, ...` (lower.TaskList). Per state tensor i, STATE holds six
 * words: the operator's input and output, the cond's and the body's input, the body's output, and the byte
 * count they share. Order: inputs to cond and to outputs, cond; then while cond's first output byte is non-zero:
 * outputs to body, body, body outputs to outputs, outputs to cond, cond. Copies may overlap (mn_move), as the
 * arena plan may place these tensors over one another; the same order over the same bytes gives the same result.
 * Like TFLM, a condition that never turns false loops forever (the emulators stop at their time limit). A call
 * that fails (a non-zero mn_status, see spill.c) ends the loop at once; the caller reports it. */
#include "mn_kernels.h"

__attribute__((weak)) int32_t mn_status; /* the kernels' error channel (see spill.c) */

enum { COND_FLAG, COND, BODY, COUNT, STATE };
enum { IN, OUT, COND_IN, BODY_IN, BODY_OUT, BYTES, FIELDS };

typedef void (*mn_kernel_fn)(const mn_word *args);

/* 0 when every call of the list ran, else the failing call's code. */
static int32_t run(const mn_word *list) {
    for (mn_word i = 0; i < list[0]; i++) {
        ((mn_kernel_fn)list[1 + 2 * i])((const mn_word *)list[2 + 2 * i]);
        if (mn_status != 0) return mn_status;
    }
    return 0;
}

static void copy(const mn_word *args, int dst, int src) {
    for (mn_word i = 0; i < args[COUNT]; i++) {
        const mn_word *s = args + STATE + FIELDS * i;
        mn_move((void *)s[dst], (const void *)s[src], (size_t)s[BYTES]);
    }
}

void mn_while(const mn_word *args) {
    const uint8_t *flag = MN_P(const uint8_t, COND_FLAG);
    const mn_word *cond = MN_P(const mn_word, COND), *body = MN_P(const mn_word, BODY);
    copy(args, COND_IN, IN);
    copy(args, OUT, IN);
    if (run(cond) != 0) return;
    while (*flag) {
        copy(args, BODY_IN, OUT);
        if (run(body) != 0) return;
        copy(args, OUT, BODY_OUT);
        copy(args, COND_IN, OUT);
        if (run(cond) != 0) return;
    }
}
