"""The LowLevelDevice interface, DeviceFault and Cost; the C test kernels the other micro tests share."""

from __future__ import annotations

from pathlib import Path

import pytest

from micronn.errors import MicronnError
from micronn.micro.device import Cost, DeviceFault, LowLevelDevice

# destination-passing test kernels (freestanding: no libc headers), plus misbehaving ones for fault tests
KERNELS_C = r"""
#include <stddef.h>
#include <stdint.h>
typedef uintptr_t mn_word;
void *memmove(void *, const void *, size_t);
void t_scale(const mn_word *a) {  /* o[i] = x[i] * m / d (int8, C division) */
    int8_t *o = (int8_t *)a[0]; const int8_t *x = (const int8_t *)a[1];
    for (int32_t i = 0; i < (int32_t)a[2]; i++) o[i] = (int8_t)(x[i] * (int32_t)a[3] / (int32_t)a[4]);
}
void t_add1(const mn_word *a) { int32_t *p = (int32_t *)a[0]; p[0] += 1; }
void t_move(const mn_word *a) { memmove((void *)a[0], (const void *)a[1], a[2]); }
void t_poke(const mn_word *a) { *(volatile int32_t *)a[0] = 7; }
void t_spin(const mn_word *a) { for (;;) __asm__ volatile(""); }
"""
ARM_FAULTS_C = r"""
void t_bkpt(const void *a) { __asm__ volatile("bkpt #1"); }
void t_udf(const void *a) { __asm__ volatile("udf #0"); }
"""
# the same two faults on RISC-V: a breakpoint (EBREAK) and an illegal instruction (UNIMP)
RISCV_FAULTS_C = r"""
void t_bkpt(const void *a) { __asm__ volatile("ebreak"); }
void t_udf(const void *a) { __asm__ volatile("unimp"); }
"""
FAULTS_C = {"arm": ARM_FAULTS_C, "riscv": RISCV_FAULTS_C}


def kernels(tmp: Path, arm: bool | str = True) -> Path:
    """The test kernels, with the faulting ones of an instruction set: ``arm`` True (Arm), an arch name ("arm",
    "riscv") or False (none: the host)."""
    arch = "arm" if arm is True else arm or None
    p = tmp / f"kernels_{arch or 'portable'}.c"
    p.write_text(KERNELS_C + (FAULTS_C[arch] if arch else ""))
    return p


def scale_ref(x, m: int, d: int):
    import numpy as np

    p = x.astype(np.int64) * m
    return (np.sign(p) * (np.abs(p) // abs(d)) * np.sign(d)).astype(np.int8)


def test_fault_names_pc_registers_and_address():
    e = DeviceFault("write to unmapped memory", 0x1234, {"r0": 5, "pc": 0x1234}, 0x60000000)
    assert isinstance(e, MicronnError)
    assert "pc=0x00001234" in str(e) and "address 0x60000000" in str(e) and "r0=0x5" in str(e)
    assert (e.pc, e.address, e.registers["r0"]) == (0x1234, 0x60000000, 5)


def test_cost_difference_and_unknown():
    a, b = Cost(10, {"alu": 6, "load": 4}, 14.0), Cost(25, {"alu": 10, "load": 4, "div": 11}, 91.0)
    d = b - a
    assert (d.instructions, d.counts, d.cycles) == (15, {"alu": 4, "div": 11, "load": 0}, 77.0)
    assert (b - Cost()).instructions is None


def test_interface_is_abstract():
    with pytest.raises(TypeError):
        LowLevelDevice()  # type: ignore[abstract]
