"""Device targets: CPU, memory map, compiler flags and a cycle-cost table per instruction class.

Cycle costs (cycles per instruction of a class; ``reg`` per register an LDM/STM/PUSH/POP moves, ``taken`` the
extra pipeline refill of a taken branch or any write to the PC) come from the instruction timing tables of ARM's
Technical Reference Manuals. They are estimates: wait states, bus contention, load/store pipelining and dual issue
are ignored, and ranges are taken at their middle.

- Cortex-M0: *Cortex-M0 Technical Reference Manual* r0p0 (ARM DDI 0432C), §3.3 Table 3-1: ALU 1, MULS 1 (fast
  multiplier), LDR/STR 2, LDM/STM/PUSH/POP 1+N, B taken 3 / not taken 1, BL 4. No divide, DSP or FPU.
- Cortex-M3: *Cortex-M3 Technical Reference Manual* r2p1 (ARM DDI 0337I), §3.3 Table 3-1: ALU 1, MUL 1,
  MLA/MLS 2, UMULL/SMULL 3-5, UMLAL/SMLAL 4-7, LDR/STR 2, LDM/STM 1+N, branch 1+P (refill P = 1..3, we use 2),
  SDIV/UDIV 2-12.
- Cortex-M4: *Cortex-M4 Technical Reference Manual* r0p1 (ARM DDI 0439B), §3.3.1 Table 3-1: ALU 1, all 32- and
  64-bit multiplies and multiply-accumulates 1, DSP/SIMD (SMLAD, SXTB16, QADD, ...) 1, LDR/STR 2, LDM/STM 1+N,
  branch 1+P (P = 2), SDIV/UDIV 2-12, single-precision VADD/VMUL 1.
- Cortex-M7: the *Cortex-M7 TRM* (ARM DDI 0489F) publishes no per-instruction table; we take 1 cycle per
  instruction (dual issue ignored, so an upper bound for ALU code), loads/stores 1 (TCM), 1 per LDM/STM register,
  taken branches +1 (branch prediction), divide 2-12.
- Cortex-M33: its TRM (Arm 100230) publishes no table either; Armv8-M Mainline with the M4's 3-stage pipeline, so
  the M4's numbers.
- RISC-V (both ``riscv32`` presets): the *SiFive E31 Core Complex Manual* (also chapter 3 of the *SiFive FE310-G000
  Manual*), §3.3 "Execution Pipeline": a single-issue, in-order, fully bypassed 5-stage pipeline, one instruction
  per cycle, except LW 2 cycles of result latency, LB/LBU/LH/LHU 3, MUL/MULH/MULHU/MULHSU 5, DIV/DIVU/REM/REMU
  2-33 (we use the middle, 17.5); §3.2: the branch predictor (BTB, BHT, return-address stack) makes correctly
  predicted control flow free and a misprediction costs 3 cycles. We charge result latencies as if every result
  were used at once (an upper bound), and taken branches nothing (mispredictions are not modelled; a lower bound).
  RISC-V has no multiply-accumulate, DSP, load/store-multiple or (RV32IMC) floating-point instructions: those
  classes stay empty. ``narrow`` is the extra cycle of a byte or halfword load. Espressif's ESP32-C3 Technical
  Reference Manual, whose memory the ``riscv32`` preset copies, publishes no instruction timings.

RISC-V instructions map onto the same classes: ``mul`` is MUL, ``mull`` the high-half multiplies, ``div`` DIV/REM,
``load``/``store`` the loads and stores (compressed forms included), ``branch`` conditional branches and jumps
(JAL/JALR and their compressed forms), ``alu`` everything else.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from micronn.errors import MicronnError

CLASSES = ("alu", "mul", "mla", "mull", "mlal", "dsp", "div", "fp", "load", "store", "ldm", "stm", "branch")
# not instructions: registers moved by load/store multiple, taken branches / PC writes, byte/halfword loads (RISC-V)
EXTRAS = ("reg", "taken", "narrow")
ARCHS = ("arm", "riscv")
# RV32's integer registers by ABI name (x1-x31) and pc, as emulators and GDB name them
RV_REGS = ["ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0", "s1", *[f"a{i}" for i in range(8)],
           *[f"s{i}" for i in range(2, 12)], "t3", "t4", "t5", "t6", "pc"]
# RISC-V exception causes (mcause with the interrupt bit clear), from the privileged specification
RV_CAUSES = {0: "instruction address misaligned", 1: "instruction access fault", 2: "illegal instruction",
             3: "breakpoint (EBREAK)", 4: "load address misaligned", 5: "load access fault",
             6: "store address misaligned", 7: "store access fault", 8: "environment call (ECALL) from U-mode",
             11: "environment call (ECALL) from M-mode", 12: "instruction page fault", 13: "load page fault",
             15: "store page fault"}

_M4 = dict(alu=1, mul=1, mla=1, mull=1, mlal=1, dsp=1, div=7, fp=1, load=2, store=2, ldm=1, stm=1, branch=1,
           reg=1, taken=2, narrow=0)
_E31 = dict(alu=1, mul=5, mla=5, mull=5, mlal=5, dsp=1, div=17.5, fp=1, load=2, store=1, ldm=1, stm=1, branch=1,
            reg=1, taken=0, narrow=1)
COSTS: dict[str, dict[str, float]] = {
    "cortex-m0": dict(_M4, div=1, dsp=1),  # no divide/DSP instructions exist; 1 if an emulator runs them anyway
    "cortex-m3": dict(_M4, mla=2, mull=4, mlal=5.5),
    "cortex-m4": _M4,
    "cortex-m7": dict(_M4, load=1, store=1, taken=1),
    "cortex-m33": _M4,
    "sifive-e31": _E31,
}


@dataclass(frozen=True)
class Region:
    base: int
    size: int

    @property
    def end(self) -> int:
        return self.base + self.size


@dataclass(frozen=True, eq=False)
class Target:
    """What micronn needs to know to build for, load onto and cost a device.

    ``flash`` holds code and constants, ``ram`` data, arguments, the workspace and (at its top) the stack.
    ``cpu`` is the LLVM/zig CPU name (for RISC-V a base CPU plus extensions); ``qemu`` the (machine, cpu) QEMU
    emulates it with, if any; ``arch`` the instruction set ("arm": Thumb/M-class, "riscv": RV32). A preset with a
    QEMU machine but no Unicorn CPU (``riscv32-qemu``) runs on QEMU by default.
    """

    name: str
    cpu: str | None
    flash: Region
    ram: Region
    qemu: tuple[str, str] | None = None
    unicorn_cpu: str | None = None
    cflags: tuple[str, ...] = ("-O2",)
    # a standalone image (micronn export) is built for size: on person_detect and keyword_scrambled (Cortex-M4
    # and RV32, generic and tuned kernels) -Os gave 0.4-6 KB less code and no more instructions than -O2
    firmware_cflags: tuple[str, ...] = ("-Os",)
    word_size: int = 4
    costs: dict[str, float] = field(default_factory=dict)
    stack_size: int = 64 * 1024
    arch: str = "arm"

    @property
    def backend(self) -> str:
        """The backend a session uses for this preset by default: "host", "unicorn" or "qemu"."""
        return "host" if self.native else "unicorn" if self.unicorn_cpu else "qemu" if self.qemu else "none"

    @property
    def qemu_binary(self) -> str:
        """The QEMU system emulator of this instruction set."""
        return "qemu-system-riscv32" if self.arch == "riscv" else "qemu-system-arm"

    @property
    def native(self) -> bool:
        """Code runs on the host itself (HostDevice)."""
        return self.cpu is None

    @property
    def stack_top(self) -> int:
        return self.ram.end

    def cycles(self, counts: dict[str, int]) -> float:
        """Estimated cycles of per-class instruction counts (plus the ``reg`` and ``taken`` extras)."""
        return float(sum(n * self.costs.get(k, 1) for k, n in counts.items()))


_MPS2 = dict(flash=Region(0x0000_0000, 0x40_0000), ram=Region(0x2000_0000, 0x40_0000))  # ZBT SSRAM1, SSRAM2&3
TARGETS: dict[str, Target] = {t.name: t for t in [
    Target("cortex-m4", "cortex_m4", qemu=("mps2-an386", "cortex-m4"), unicorn_cpu="CORTEX_M4",
           costs=COSTS["cortex-m4"], **_MPS2),
    Target("cortex-m7", "cortex_m7", qemu=("mps2-an500", "cortex-m7"), unicorn_cpu="CORTEX_M7",
           costs=COSTS["cortex-m7"], **_MPS2),
    # AN505 boots in the Secure state: the secure aliases of SSRAM1 and SSRAM2/3
    Target("cortex-m33", "cortex_m33", Region(0x1000_0000, 0x40_0000), Region(0x3800_0000, 0x40_0000),
           qemu=("mps2-an505", "cortex-m33"), unicorn_cpu="CORTEX_M33", costs=COSTS["cortex-m33"]),
    # no QEMU board has an M0 with room for a model: a generic map sized like the MPS2 boards, Unicorn only
    Target("cortex-m0", "cortex_m0", unicorn_cpu="CORTEX_M0", costs=COSTS["cortex-m0"], **_MPS2),
    Target("cortex-m3", "cortex_m3", qemu=("mps2-an385", "cortex-m3"), unicorn_cpu="CORTEX_M3",
           costs=COSTS["cortex-m3"], **_MPS2),
    # RISC-V, RV32IMC, memory sized like an ESP32-C3 (Espressif's TRM, "System and Memory": 4 MiB of external flash
    # mapped at 0x42000000, 400 KiB of internal SRAM on the data bus at 0x3FC80000); no QEMU board has that map
    Target("riscv32", "generic_rv32+m+c", Region(0x4200_0000, 0x40_0000), Region(0x3FC8_0000, 400 << 10),
           unicorn_cpu="SIFIVE_E31", costs=COSTS["sifive-e31"], arch="riscv"),
    # RISC-V, RV32IMAC, on QEMU's `virt` board: its only memory free for code is DRAM at 0x80000000 (its CFI pflash
    # takes writes only through flash commands), so "flash" is the first 4 MiB of DRAM and RAM the next 4 MiB
    Target("riscv32-qemu", "generic_rv32+m+a+c", Region(0x8000_0000, 0x40_0000), Region(0x8040_0000, 0x40_0000),
           qemu=("virt", "sifive-e31"), costs=COSTS["sifive-e31"], arch="riscv"),
    # the host: code is native, memory a host buffer whose addresses the device learns when it is created
    Target("host", None, Region(0, 0), Region(0, 16 << 20), word_size=8, stack_size=0),
]}


def get_target(target: str | Target) -> Target:
    """A preset by name (``"cortex-m4"``, ``"m4"``) or the Target itself."""
    if isinstance(target, Target):
        return target
    if not isinstance(target, str):
        raise MicronnError(f"a target is a preset name or a Target, got {type(target).__name__}")
    name = target if target in TARGETS or target == "host" else f"cortex-{target}"
    if name not in TARGETS:
        raise MicronnError(f"unknown target {target!r}; known: {', '.join(TARGETS)}")
    return TARGETS[name]
