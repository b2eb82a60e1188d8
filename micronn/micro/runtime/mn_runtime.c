/* micronn's device runtime: a task loop the host fills and starts (the C helpers a freestanding toolchain
 * expects are in mn_runtime_libc.c). Start-up, stop and fault code differs per architecture (Cortex-M: a vector
 * table; RISC-V: mn_init points the trap vector at mn_fault); the rest is C.
 *
 * The host writes up to MN_MAX_TASKS {function, argument words} pairs into mn_tasks and their count into
 * mn_num_tasks, points the stack pointer at the top of RAM, the link register at mn_done and the program
 * counter at mn_run. mn_done is the stop breakpoint; mn_fault catches every exception. mn_boundary runs
 * before each task and after the last one so an emulator can split the cost per task. */
#include <stddef.h>
#include <stdint.h>

#ifndef MN_MAX_TASKS
#define MN_MAX_TASKS 256
#endif

typedef uintptr_t mn_word;
typedef void (*mn_kernel)(const mn_word *args);
typedef struct { mn_word fn; mn_word args; } mn_task;

volatile mn_task mn_tasks[MN_MAX_TASKS];
volatile mn_word mn_num_tasks;
volatile mn_word mn_max_tasks = MN_MAX_TASKS;  /* the host reads this to size its queue */

__attribute__((noinline)) void mn_boundary(void) { __asm__ volatile("" ::: "memory"); }

void mn_run(void) {
    mn_word n = mn_num_tasks;
    for (mn_word i = 0; i < n; i++) {
        mn_boundary();
        ((mn_kernel)mn_tasks[i].fn)((const mn_word *)mn_tasks[i].args);
    }
    mn_boundary();
}

#if defined(__arm__)
/* Both spin, so a missed breakpoint is a runaway program the host's limits catch, not a jump into nowhere. */
__attribute__((naked, noreturn)) void mn_done(void) { __asm__ volatile("1: b 1b"); }
__attribute__((naked, noreturn)) void mn_fault(void) { __asm__ volatile("1: b 1b"); }
__attribute__((naked, noreturn)) void mn_reset(void) { __asm__ volatile("bl mn_run\n1: b 1b"); }

extern char __stack_top[];
/* Cortex-M vector table: initial SP, reset, then every fault and interrupt lands in mn_fault. */
__attribute__((section(".vectors"), used)) void *const mn_vectors[48] = {
    __stack_top, (void *)mn_reset,
    (void *)mn_fault, (void *)mn_fault, (void *)mn_fault, (void *)mn_fault, (void *)mn_fault, (void *)mn_fault,
    (void *)mn_fault, (void *)mn_fault, (void *)mn_fault, (void *)mn_fault, (void *)mn_fault, (void *)mn_fault,
    (void *)mn_fault, (void *)mn_fault, (void *)mn_fault, (void *)mn_fault, (void *)mn_fault, (void *)mn_fault,
    (void *)mn_fault, (void *)mn_fault, (void *)mn_fault, (void *)mn_fault, (void *)mn_fault, (void *)mn_fault,
    (void *)mn_fault, (void *)mn_fault, (void *)mn_fault, (void *)mn_fault, (void *)mn_fault, (void *)mn_fault,
    (void *)mn_fault, (void *)mn_fault, (void *)mn_fault, (void *)mn_fault, (void *)mn_fault, (void *)mn_fault,
    (void *)mn_fault, (void *)mn_fault, (void *)mn_fault, (void *)mn_fault, (void *)mn_fault, (void *)mn_fault,
    (void *)mn_fault, (void *)mn_fault, (void *)mn_fault, (void *)mn_fault,
};
#elif defined(__riscv)
/* RISC-V has no vector table: every trap enters at the address in the mtvec CSR (direct mode: its low two bits
 * 0, so mn_fault is 4-byte aligned). The host runs mn_init once after loading and after every reset. */
__attribute__((naked, noreturn)) void mn_done(void) { __asm__ volatile("1: j 1b"); }
__attribute__((naked, noreturn, aligned(4))) void mn_fault(void) { __asm__ volatile("1: j 1b"); }
void mn_init(void) { __asm__ volatile("csrw mtvec, %0" ::"r"(mn_fault)); }
/* The ELF entry, for a board that boots the image by itself: stack, trap vector, one (empty) task run, stop. */
__attribute__((naked, noreturn)) void mn_reset(void) {
    __asm__ volatile("la sp, __stack_top\n call mn_init\n call mn_run\n1: j 1b");
}
#else
void mn_done(void) {}
void mn_fault(void) {}
#endif
