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
"""

from __future__ import annotations

from dataclasses import dataclass, field

from micronn.errors import MicronnError

CLASSES = ("alu", "mul", "mla", "mull", "mlal", "dsp", "div", "fp", "load", "store", "ldm", "stm", "branch")
EXTRAS = ("reg", "taken")  # not instructions: registers moved by load/store multiple, taken branches / PC writes

_M4 = dict(alu=1, mul=1, mla=1, mull=1, mlal=1, dsp=1, div=7, fp=1, load=2, store=2, ldm=1, stm=1, branch=1,
           reg=1, taken=2)
COSTS: dict[str, dict[str, float]] = {
    "cortex-m0": dict(_M4, div=1, dsp=1),  # no divide/DSP instructions exist; 1 if an emulator runs them anyway
    "cortex-m3": dict(_M4, mla=2, mull=4, mlal=5.5),
    "cortex-m4": _M4,
    "cortex-m7": dict(_M4, load=1, store=1, taken=1),
    "cortex-m33": _M4,
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
    ``cpu`` is the LLVM/zig CPU name; ``qemu`` the (machine, cpu) QEMU emulates it with, if any.
    """

    name: str
    cpu: str | None
    flash: Region
    ram: Region
    qemu: tuple[str, str] | None = None
    unicorn_cpu: str | None = None
    cflags: tuple[str, ...] = ("-O2",)
    word_size: int = 4
    costs: dict[str, float] = field(default_factory=dict)
    stack_size: int = 64 * 1024

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
    # the host: code is native, memory a host buffer whose addresses the device learns when it is created
    Target("host", None, Region(0, 0), Region(0, 16 << 20), word_size=8, stack_size=0),
]}


def get_target(target: str | Target) -> Target:
    """A preset by name (``"cortex-m4"``, ``"m4"``) or the Target itself."""
    if isinstance(target, Target):
        return target
    name = target if target in TARGETS or target == "host" else f"cortex-{target}"
    if name not in TARGETS:
        raise MicronnError(f"unknown target {target!r}; known: {', '.join(TARGETS)}")
    return TARGETS[name]
