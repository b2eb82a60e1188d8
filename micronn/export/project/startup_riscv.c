/* Start-up for a 32-bit RISC-V core in machine mode: set the stack pointer and the trap vector (every trap lands
 * in mn_fault, which spins so that a debugger sees where the program stopped), copy initialised data from flash
 * to RAM, zero .bss and call main(). The symbols come from the project's linker script. */
#include <stdint.h>

extern uint32_t __data_load[], __data_start[], __data_end[], __bss_start[], __bss_end[];
int main(void);

__attribute__((naked, noreturn, noinline, used)) void mn_halt(void) { __asm__ volatile("1: j 1b"); }
__attribute__((naked, noreturn, aligned(4), used)) void mn_fault(void) { __asm__ volatile("1: j 1b"); }

/* Point the trap vector at mn_fault (direct mode: mn_fault is 4-byte aligned). */
void mn_trap_init(void) { __asm__ volatile("csrw mtvec, %0" ::"r"(mn_fault)); }

__attribute__((noreturn, used)) void mn_start(void) {
    mn_trap_init();
    for (uint32_t *s = __data_load, *d = __data_start; d < __data_end;) *d++ = *s++;
    for (uint32_t *d = __bss_start; d < __bss_end;) *d++ = 0;
    main();
    mn_halt();
}

__attribute__((naked, noreturn, section(".text.entry"))) void Reset_Handler(void) {
    __asm__ volatile("la sp, __stack_top\n j mn_start");
}
