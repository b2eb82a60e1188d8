"""An emulated Cortex-M (Unicorn, Thumb + M-class) or RV32 core with exact instruction counts and estimated cycles.

A block hook counts every executed translation block; capstone classifies each block's instructions once (cached
by address and size), so per-class counts are exact at the cost of one Python call per block. Taken branches are
told apart from not-taken ones by the edge between consecutive blocks. Both instruction sets share the classes of
``micronn.micro.target.CLASSES``; RISC-V's calling convention returns through ``ra`` where Thumb uses ``lr``.
"""

from __future__ import annotations

import time

from micronn.micro.device import Cost, DeviceFault, ExecResult, LowLevelDevice
from micronn.micro.target import CLASSES, RV_CAUSES, RV_REGS, Target, get_target

try:
    import capstone
    import unicorn
    from unicorn import arm_const as A
    from unicorn import riscv_const as RV
except ImportError:  # pragma: no cover - reported when a device is made
    unicorn = None

REGS = [f"r{i}" for i in range(13)] + ["sp", "lr", "pc", "xpsr"]
_MUL = {"mul": "mul", "muls": "mul", "mla": "mla", "mls": "mla", "umull": "mull", "smull": "mull",
        "umlal": "mlal", "smlal": "mlal", "umaal": "mlal"}
_LOAD = {"ldr", "ldrb", "ldrh", "ldrsb", "ldrsh", "ldrd", "ldrex", "ldrexb", "ldrexh", "ldrt", "ldrbt", "ldrht",
         "ldrsbt", "ldrsht", "vldr", "lda", "ldab", "ldah"}
_STORE = {"str", "strb", "strh", "strd", "strex", "strexb", "strexh", "strt", "strbt", "strht", "vstr", "stl"}
_LDM = {"ldm", "ldmia", "ldmdb", "ldmfd", "ldmea", "pop", "vpop", "vldmia", "vldmdb"}
_STM = {"stm", "stmia", "stmdb", "stmfd", "stmea", "push", "vpush", "vstmia", "vstmdb"}
_BRANCH = {"b", "bl", "bx", "blx", "cbz", "cbnz", "tbb", "tbh"}
_DSP_PREFIX = ("smla", "smlsl", "smul", "smua", "smus", "smml", "smls", "smlal", "pkh", "sel", "usad", "qadd",
               "qsub", "qdadd", "qdsub", "qasx", "qsax", "shadd", "shsub", "shasx", "shsax", "uhadd", "uhsub",
               "uqadd", "uqsub", "sadd", "ssub", "sasx", "ssax", "uadd", "usub", "uasx", "usax", "sxtb16",
               "uxtb16", "sxtab16", "uxtab16", "ssat16", "usat16")


_CONDS = {"eq", "ne", "hs", "lo", "cs", "cc", "mi", "pl", "vs", "vc", "hi", "ls", "ge", "lt", "gt", "le"}


_RV_NARROW = {"lb", "lbu", "lh", "lhu"}
_RV_LOAD = {"lw", "lwsp", "lr.w"} | _RV_NARROW
_RV_STORE = {"sb", "sh", "sw", "swsp", "sc.w"}
_RV_COND = {"beq", "bne", "blt", "bge", "bltu", "bgeu", "beqz", "bnez", "blez", "bgez", "bltz", "bgtz", "bgt",
            "ble", "bgtu", "bleu"}
_RV_JUMP = {"jal", "jalr", "j", "jr", "ret", "call", "tail"}
_RV_CLASS = {"mul": "mul", "mulh": "mull", "mulhu": "mull", "mulhsu": "mull", "div": "div", "divu": "div",
             "rem": "div", "remu": "div"}


def _classify_riscv(insn) -> tuple[str, int, str | None]:
    """(class, 0, branch kind) of one RV32IMAC instruction; compressed forms count as their full forms, and a
    byte or halfword load adds one to the ``narrow`` extra (reported in the second slot as -1)."""
    m = insn.mnemonic.removeprefix("c.")
    if m in _RV_COND:
        return "branch", 0, "cond"
    if m in _RV_JUMP:
        return "branch", 0, "always"
    if m in _RV_LOAD or m.startswith("amo"):
        return "load", -1 if m in _RV_NARROW else 0, None
    if m in _RV_STORE:
        return "store", 0, None
    if m in _RV_CLASS:
        return _RV_CLASS[m], 0, None
    return ("fp" if m.startswith("f") and not m.startswith("fence") else "alu"), 0, None


def _classify(insn) -> tuple[str, int, str | None]:
    """(class, registers moved, branch kind) of one instruction; kind is "cond", "always" or None."""
    m, ops = insn.mnemonic.split(".")[0], insn.op_str
    cond = insn.cc not in (0, 15)  # ARM_CC_INVALID, ARM_CC_AL
    if cond and m[-2:] in _CONDS:
        m = m[:-2]
    regs = ops[ops.find("{"):].count(",") + 1 if "{" in ops else 0
    if m in _BRANCH or (m in _LDM and "pc" in ops) or (ops.startswith("pc") and (m in _LOAD or m in {"mov", "add"})):
        kind = "cond" if cond or m in {"cbz", "cbnz"} else "always"
        return ("ldm" if m in _LDM else "load" if m in _LOAD else "branch"), regs, kind
    if m in _LOAD or m in _STORE:
        return ("load" if m in _LOAD else "store"), int(m in {"ldrd", "strd"}), None
    if m in _LDM or m in _STM:
        return ("ldm" if m in _LDM else "stm"), regs, None
    if m in _MUL:
        return _MUL[m], 0, None
    if m in ("sdiv", "udiv"):
        return "div", 0, None
    if m.startswith(_DSP_PREFIX):
        return "dsp", 0, None
    return ("fp" if m.startswith("v") else "alu"), 0, None


class _Block:
    __slots__ = ("n", "counts", "kind", "fallthrough")

    def __init__(self, n: int, counts: dict[str, int], kind: str | None, fallthrough: int):
        self.n, self.counts, self.kind, self.fallthrough = n, counts, kind, fallthrough


class UnicornDevice(LowLevelDevice):
    """A Cortex-M or RV32 core in Unicorn with ``target``'s memory map; counts are exact, cycles from
    ``target.costs``."""

    def __init__(self, target: str | Target = "cortex-m4"):
        if unicorn is None:
            from micronn.micro.toolchain import ToolchainError

            raise ToolchainError("the Unicorn emulator is not installed: pip install unicorn capstone (micronn[micro])")
        self.target = get_target(target)
        if self.target.native or not self.target.unicorn_cpu:
            raise DeviceFault(f"target {self.target.name} cannot be emulated by Unicorn")
        self.word_size = self.target.word_size
        self.riscv = self.target.arch == "riscv"
        if self.riscv:
            self._cs = capstone.Cs(capstone.CS_ARCH_RISCV, capstone.CS_MODE_RISCV32 | capstone.CS_MODE_RISCVC)
            self._classify, self._thumb = _classify_riscv, 0
        else:
            self._cs = capstone.Cs(capstone.CS_ARCH_ARM, capstone.CS_MODE_THUMB | capstone.CS_MODE_MCLASS)
            self._classify, self._thumb = _classify, 1
        self._cs.detail = True
        self._blocks: dict[tuple[int, int], _Block] = {}
        self._mem: dict[int, bytes] | None = None
        self.uc = None
        self._boot()

    def _boot(self) -> None:
        """A fresh core; memory contents (if any) carried over."""
        if self.riscv:
            uc = unicorn.Uc(unicorn.UC_ARCH_RISCV, unicorn.UC_MODE_RISCV32)
            uc.ctl_set_cpu_model(getattr(RV, f"UC_CPU_RISCV32_{self.target.unicorn_cpu}"))
        else:
            uc = unicorn.Uc(unicorn.UC_ARCH_ARM, unicorn.UC_MODE_THUMB | unicorn.UC_MODE_MCLASS)
            uc.ctl_set_cpu_model(getattr(A, f"UC_CPU_ARM_{self.target.unicorn_cpu}"))
        for region in (self.target.flash, self.target.ram):
            uc.mem_map(region.base, region.size, unicorn.UC_PROT_ALL)
            if self._mem is not None:
                uc.mem_write(region.base, self._mem[region.base])
        uc.hook_add(unicorn.UC_HOOK_BLOCK, self._on_block)
        uc.hook_add(unicorn.UC_HOOK_MEM_INVALID, self._on_bad_mem)
        uc.hook_add(unicorn.UC_HOOK_INTR, self._on_intr)
        uc.ctl_flush_tb()  # hooks added after translation are ignored until the TB cache is flushed
        self.uc = uc

    # -- memory ---------------------------------------------------------------------------------
    def _check(self, addr: int, n: int) -> None:
        if self.uc is None:
            raise DeviceFault("the emulated device is closed")
        for r in (self.target.flash, self.target.ram):
            if r.base <= addr and addr + n <= r.end:
                return
        raise DeviceFault(f"host access of {n} bytes outside the memory map", address=addr)

    def read(self, addr: int, n: int) -> bytes:
        self._check(addr, n)
        return bytes(self.uc.mem_read(addr, n))

    def write(self, addr: int, data: bytes) -> None:
        self._check(addr, len(data))
        self.uc.mem_write(addr, bytes(data))
        if any(a < addr + len(data) and addr < a + s for a, s in self._blocks):  # code changed: retranslate
            self._blocks.clear()
            self.uc.ctl_flush_tb()

    # -- hooks ----------------------------------------------------------------------------------
    def _block_info(self, address: int, size: int) -> _Block:
        counts = dict.fromkeys(CLASSES, 0) | {"reg": 0, "narrow": 0}
        n, kind = 0, None
        for insn in self._cs.disasm(bytes(self.uc.mem_read(address, size)), address):
            cls, regs, kind = self._classify(insn)
            counts[cls] += 1
            counts["reg" if regs >= 0 else "narrow"] += abs(regs)
            n += 1
        b = self._blocks[(address, size)] = _Block(n, {k: v for k, v in counts.items() if v}, kind, address + size)
        return b

    def _on_block(self, uc, address: int, size: int, _data) -> None:
        key = (address, size) if address != self._stop else None
        edge = (self._prev, key)
        self._edges[edge] = self._edges.get(edge, 0) + 1
        self._prev = key
        if key is None:
            return
        b = self._blocks.get(key) or self._block_info(address, size)
        self._n += b.n
        if self._n > self._limit:
            self._why = f"instruction limit of {self._limit:,} reached"
            uc.emu_stop()
        if address in self._marks:
            self._snaps.append(dict(self._edges))

    def _on_bad_mem(self, uc, access: int, address: int, size: int, value: int, _data) -> bool:
        what = {unicorn.UC_MEM_READ_UNMAPPED: "read of unmapped memory", unicorn.UC_MEM_WRITE_UNMAPPED:
                "write to unmapped memory", unicorn.UC_MEM_FETCH_UNMAPPED: "instruction fetch from unmapped memory"}
        self._why, self._addr = what.get(access, f"invalid memory access (type {access})") + f" ({size} bytes)", address
        return False

    def _on_intr(self, uc, intno: int, _data) -> None:
        if self.riscv:
            self._why = f"CPU exception {intno}: {RV_CAUSES.get(intno, 'trap')}"
            if intno == 2 and self._prev is not None:  # Unicorn's pc has moved on; the block ends before the
                self._pc = self._prev[0] + self._prev[1]  # instruction it could not translate
            uc.emu_stop()
            return
        names = {1: "undefined instruction (UDF / HardFault)", 2: "SVC", 3: "prefetch abort", 4: "data abort",
                 7: "breakpoint (BKPT)", 8: "exception exit", 18: "invalid state (HardFault)",
                 19: "stack check failure", 21: "secure fault", 23: "lazy FP state failure"}
        self._why = f"CPU exception {intno}: {names.get(intno, 'fault')}"
        uc.emu_stop()

    # -- execution ------------------------------------------------------------------------------
    def registers(self) -> dict[str, int]:
        if self.riscv:
            return {r: self.uc.reg_read(getattr(RV, f"UC_RISCV_REG_{r.upper()}")) for r in RV_REGS}
        return {r: self.uc.reg_read(getattr(A, f"UC_ARM_REG_{r.upper()}")) for r in REGS}

    def cost(self, edges: dict) -> Cost:
        """Exact counts and estimated cycles from block-edge counts."""
        counts: dict[str, int] = {"taken": 0}
        n = 0
        for (prev, key), c in edges.items():
            p = self._blocks.get(prev) if prev is not None else None
            if p is not None and (p.kind == "always" or p.kind == "cond" and (key is None or key[0] != p.fallthrough)):
                counts["taken"] += c
            if key is None:
                continue
            b = self._blocks[key]
            n += b.n * c
            for k, v in b.counts.items():
                counts[k] = counts.get(k, 0) + v * c
        return Cost(n, counts, self.target.cycles(counts))

    def execute(self, func_addr: int, stop_addr: int, *, max_instructions: int | None = None,
                timeout_s: float | None = None, marks: tuple[int, ...] = ()) -> ExecResult:
        uc = self.uc
        if uc is None:
            raise DeviceFault("the emulated device is closed")
        self._stop, self._limit = stop_addr & ~1, max_instructions if max_instructions is not None else 1 << 62
        self._marks, self._snaps = {m & ~1 for m in marks}, []
        self._edges, self._prev, self._n, self._why, self._addr, self._pc = {}, None, 0, None, None, None
        if self.riscv:
            uc.reg_write(RV.UC_RISCV_REG_SP, self.target.stack_top)
            uc.reg_write(RV.UC_RISCV_REG_RA, stop_addr)
        else:
            uc.reg_write(A.UC_ARM_REG_SP, self.target.stack_top)
            uc.reg_write(A.UC_ARM_REG_LR, stop_addr | 1)
        t0 = time.perf_counter()
        try:
            uc.emu_start(func_addr | self._thumb, self._stop, timeout=int(timeout_s * 1e6) if timeout_s else 0)
        except unicorn.UcError as e:
            bad = {unicorn.UC_ERR_INSN_INVALID: "undefined instruction (UDF or an instruction this CPU lacks)"}
            if self.riscv and e.errno == unicorn.UC_ERR_INSN_INVALID:  # Unicorn ends EBREAK this way, no trap
                at = uc.reg_read(RV.UC_RISCV_REG_PC)
                insn = next(self._cs.disasm(bytes(uc.mem_read(at, 4)), at, 1), None)
                ebreak = insn is not None and insn.mnemonic in ("ebreak", "c.ebreak")
                bad[e.errno] = f"CPU exception {3 if ebreak else 2}: {RV_CAUSES[3 if ebreak else 2]}"
            self._why = self._why or bad.get(e.errno, f"emulator error: {e}")
        wall = time.perf_counter() - t0
        pc = self._pc if self._pc is not None else uc.reg_read(RV.UC_RISCV_REG_PC if self.riscv else A.UC_ARM_REG_PC)
        if self._why is None and pc != self._stop:
            self._why = f"timeout after {timeout_s} s" if timeout_s else "stopped before the stop address"
        if self._why is not None:
            raise DeviceFault(self._why, pc, self.registers(), self._addr)
        total = self.cost(self._edges)
        return ExecResult(total.instructions, total.counts, total.cycles,
                          marks=[self.cost(s) for s in self._snaps], wall_s=wall)

    def reset(self) -> None:
        if self.uc is None:
            raise DeviceFault("the emulated device is closed")
        self._mem = {r.base: bytes(self.uc.mem_read(r.base, r.size)) for r in (self.target.flash, self.target.ram)}
        self._blocks.clear()
        self._boot()
        self._mem = None

    def close(self) -> None:
        self.uc = None
