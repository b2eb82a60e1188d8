/* An application around the model: initialise once, then run an inference each time an input is ready.
 * mn_input_ready and mn_output_ready are where a debugger (GDB with OpenOCD, pyOCD or QEMU) puts breakpoints to
 * drive the board from a host: write model_input(i) at the first, read model_output(i) at the second. In an
 * application of your own, call model_init() and model_invoke() and drop this file. */
#include "model.h"

__attribute__((noinline)) void mn_input_ready(void) { __asm__ volatile("" ::: "memory"); }
__attribute__((noinline)) void mn_output_ready(void) { __asm__ volatile("" ::: "memory"); }

int main(void) {
    if (model_init() != 0) return 1;
    for (;;) {
        mn_input_ready();
        if (model_invoke() != 0) return 1;
        mn_output_ready();
    }
}
