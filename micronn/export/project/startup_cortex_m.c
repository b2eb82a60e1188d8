/* Start-up for a Cortex-M: the vector table, then a reset handler that copies initialised data from flash to RAM,
 * zeroes .bss and calls main(). Every fault and interrupt lands in mn_fault, which spins so that a debugger sees
 * where the program stopped. The symbols come from the project's linker script. */
#include <stdint.h>

extern uint32_t __data_load[], __data_start[], __data_end[], __bss_start[], __bss_end[];
extern char __stack_top[];
int main(void);

__attribute__((noreturn, noinline, used)) void mn_halt(void) { for (;;) __asm__ volatile(""); }
__attribute__((noreturn)) void mn_fault(void) { for (;;) __asm__ volatile(""); }

__attribute__((noreturn)) void Reset_Handler(void) {
    for (uint32_t *s = __data_load, *d = __data_start; d < __data_end;) *d++ = *s++;
    for (uint32_t *d = __bss_start; d < __bss_end;) *d++ = 0;
    main();
    mn_halt();
}

#define F ((void *)mn_fault)
__attribute__((section(".vectors"), used)) void *const mn_vectors[48] = {
    __stack_top, (void *)Reset_Handler, F, F, F, F, F, F, F, F, F, F, F, F, F, F,
    F, F, F, F, F, F, F, F, F, F, F, F, F, F, F, F, F, F, F, F, F, F, F, F, F, F, F, F, F, F, F, F,
};
