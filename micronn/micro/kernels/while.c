/* WHILE: the cond and body subgraphs as lists of kernel calls, the loop state copied between the operator's
 * tensors and the subgraphs' as the interpreter (and TFLM) copy it, less the copies the lowering found needless.
 *
 * COND and BODY point at lists `n, fn_0, args_0, ...` (lower.TaskList). Per state tensor i, STATE holds nine
 * words: the operator's input and output, the cond's and the body's input, the body's output, the byte count
 * they share, and what may be left out (lower._while_elisions): SKIP_COND, no copy into the cond's input (the cond
 * never reads it); SKIP_PASSED, a state the body passes through unchanged whose copy back is the bytes already
 * there, and whose copy in, after the first iteration, needs only bytes [LO, HI) (where the loop wrote over the
 * body's input since). Order: inputs to cond and to outputs, cond; then while cond's first output byte is non-zero:
 * outputs to body, body, body outputs to outputs, outputs to cond, cond. Copies may overlap (mn_move), as the
 * arena plan may place these tensors over one another; the same order over the same bytes gives the same result.
 * Like TFLM, a condition that never turns false loops forever (the emulators stop at their time limit). A call
 * that fails (a non-zero mn_status, see spill.c) ends the loop at once; the caller reports it. */
#include "mn_kernels.h"

__attribute__((weak)) int32_t mn_status; /* the kernels' error channel (see spill.c) */

enum { COND_FLAG, COND, BODY, COUNT, STATE };
enum { IN, OUT, COND_IN, BODY_IN, BODY_OUT, BYTES, SKIP, LO, HI, FIELDS };
enum { SKIP_COND = 1, SKIP_PASSED = 2 };

typedef void (*mn_kernel_fn)(const mn_word *args);

/* 0 when every call of the list ran, else the failing call's code. */
static int32_t run(const mn_word *list) {
    for (mn_word i = 0; i < list[0]; i++) {
        ((mn_kernel_fn)list[1 + 2 * i])((const mn_word *)list[2 + 2 * i]);
        if (mn_status != 0) return mn_status;
    }
    return 0;
}

/* every state's bytes from field src to field dst, but those whose SKIP has a bit of `skip`; with `part`, a
 * SKIP_PASSED state's bytes [LO, HI) only */
static void copy(const mn_word *args, int dst, int src, mn_word skip, int part) {
    for (mn_word i = 0; i < args[COUNT]; i++) {
        const mn_word *s = args + STATE + FIELDS * i;
        if (s[SKIP] & skip) continue;
        if (part && (s[SKIP] & SKIP_PASSED))
            mn_move((uint8_t *)s[dst] + s[LO], (const uint8_t *)s[src] + s[LO], (size_t)(s[HI] - s[LO]));
        else
            mn_move((void *)s[dst], (const void *)s[src], (size_t)s[BYTES]);
    }
}

void mn_while(const mn_word *args) {
    const uint8_t *flag = MN_P(const uint8_t, COND_FLAG);
    const mn_word *cond = MN_P(const mn_word, COND), *body = MN_P(const mn_word, BODY);
    copy(args, COND_IN, IN, SKIP_COND, 0);
    copy(args, OUT, IN, 0, 0);
    if (run(cond) != 0) return;
    for (int first = 1; *flag; first = 0) {
        copy(args, BODY_IN, OUT, 0, !first);
        if (run(body) != 0) return;
        copy(args, OUT, BODY_OUT, SKIP_PASSED, 0);
        copy(args, COND_IN, OUT, SKIP_COND, 0);
        if (run(cond) != 0) return;
    }
}
