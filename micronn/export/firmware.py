"""Build an exported project into a firmware image and run it on an emulated device or the host."""

from __future__ import annotations

import ctypes
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from micronn.errors import InvokeError, MicronnError
from micronn.export.codegen import ExportError
from micronn.export.project import Project, load
from micronn.interpreter import Interpreter
from micronn.ir import Model, random_inputs
from micronn.micro.device import DeviceFault
from micronn.micro.lower import KERNEL_FAILURES
from micronn.micro.target import Target, get_target
from micronn.micro.toolchain import Toolchain, find_toolchain
from micronn.storage.base import StorageError
from micronn.tflite.reader import read

FREESTANDING = ["-ffreestanding", "-fno-builtin"]


def _sources(proj: Project, host: bool) -> tuple[list[Path], Path]:
    skip = {"mn_libc.c", "startup_cortex_m.c", "startup_riscv.c", "main.c"} if host else {"mn_libc.c"}
    return [proj.path / f for f in proj.files if f.endswith(".c") and f not in skip], proj.path / "mn_libc.c"


def build(project: Project | str | os.PathLike, toolchain: str | None = None) -> Path:
    """Compile and link the firmware image (an ELF) with zig's clang or ``arm-none-eabi-gcc``; cached by content."""
    proj = project if isinstance(project, Project) else load(project)
    tc: Toolchain = find_toolchain(get_target(proj.target), toolchain, firmware=True)
    sources, libc = _sources(proj, host=False)
    objs = tc.compile(sources, [proj.path]) + tc.compile([libc], [proj.path], FREESTANDING)
    script = (proj.path / f"{proj.prefix}.ld").read_text()
    return tc.link_program(objs, script, name=proj.prefix)


@dataclass
class RunResult:
    """One inference of the firmware: its outputs, the interpreter's, whether every byte agrees, its cost and size.

    ``flash_bytes`` is code + constants + initial data; ``ram_bytes`` the data, .bss (the arena) and the deepest
    stack measured during init and invoke (the stack is painted before and scanned after). ``ops`` holds per
    kernel call the instructions and cycles counted between kernel entries (emulated devices only).
    """

    device: str
    outputs: list[np.ndarray]
    expected: list[np.ndarray]
    instructions: int | None = None
    cycles: float | None = None
    image: str = ""
    flash_bytes: int | None = None
    ram_bytes: int | None = None
    stack_bytes: int | None = None
    sections: dict[str, dict[str, int]] = field(default_factory=dict)  # name -> {address, bytes}
    symbols: dict[str, int] = field(default_factory=dict)  # kernel and model symbol -> bytes
    ops: list[dict[str, Any]] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return len(self.outputs) == len(self.expected) and all(
            a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
            for a, b in zip(self.outputs, self.expected))

    def to_dict(self) -> dict[str, Any]:
        return {"device": self.device, "identical": self.identical, "instructions": self.instructions,
                "cycles": self.cycles, "flash_bytes": self.flash_bytes, "ram_bytes": self.ram_bytes,
                "stack_bytes": self.stack_bytes, "image": self.image, "sections": self.sections,
                "symbols": self.symbols, "ops": self.ops, "outputs": [o.tolist() for o in self.outputs]}

    def __str__(self) -> str:
        lines = [f"{self.device}: outputs {'byte-identical to' if self.identical else 'DIFFER from'} micronn's "
                 "interpreter"]
        if self.instructions is not None:
            lines.append(f"invoke: {self.instructions:,} instructions, ~{self.cycles:,.0f} cycles")
        if self.flash_bytes is not None:
            lines.append(f"flash {self.flash_bytes:,} B, RAM {self.ram_bytes:,} B (stack {self.stack_bytes:,} B "
                         "measured)")
            lines += [f"  {k:<10} {v['bytes']:>9,} B at 0x{v['address']:08x}" for k, v in self.sections.items()]
        return "\n".join(lines)


def _inputs(proj: Project, inputs: list[np.ndarray] | None, model: Model, seed: int) -> list[np.ndarray]:
    xs = random_inputs(model, seed) if inputs is None else list(inputs)
    if len(xs) != len(proj.inputs):
        raise InvokeError(f"the model has {len(proj.inputs)} inputs, {len(xs)} given")
    out = []
    for i, (x, io) in enumerate(zip(xs, proj.inputs)):
        x = np.asarray(x)
        if x.dtype.name != io.dtype or list(x.shape) != io.shape:
            raise InvokeError(f"input {i} ({io.name!r}) expects {io.dtype}{io.shape}, got {x.dtype.name}"
                              f"{list(x.shape)}")
        out.append(np.ascontiguousarray(x))
    return out


PAINT = 0xA5  # the byte the stack is filled with before a run; the deepest one overwritten is the depth


def _elf_facts(path: Path) -> tuple[dict[str, dict[str, int]], dict[str, int], dict[str, int], list]:
    """(allocated sections by name, symbol addresses, function and object sizes, loadable (address, bytes))."""
    from elftools.elf.elffile import ELFFile

    sections, addrs, sizes, load = {}, {}, {}, []
    with open(path, "rb") as f:
        elf = ELFFile(f)
        for sec in elf.iter_sections():
            if not sec["sh_flags"] & 2 or not sec["sh_size"] or sec.name.startswith(".ARM"):
                continue
            sections[sec.name] = {"address": sec["sh_addr"], "bytes": sec["sh_size"]}
            load.append((sec["sh_addr"], bytes(sec["sh_size"]) if sec["sh_type"] == "SHT_NOBITS" else sec.data()))
        for sym in elf.get_section_by_name(".symtab").iter_symbols():
            if sym.name and sym["st_shndx"] != "SHN_UNDEF":
                addrs[sym.name] = sym["st_value"]
                if sym["st_info"]["type"] in ("STT_FUNC", "STT_OBJECT") and sym["st_size"]:
                    sizes[sym.name] = sym["st_size"]
    return sections, addrs, sizes, load


def _sizes(sections: dict[str, dict[str, int]], t: Target) -> tuple[int, int]:
    """(flash, RAM without the stack): what lies in flash, plus initialised data stored there for start-up."""
    flash = ram = 0
    for name, sec in sections.items():
        if name.startswith(".storage"):  # spilled tensors: external memory, neither flash nor RAM
            continue
        if t.flash.base <= sec["address"] < t.flash.end:
            flash += sec["bytes"]
        else:
            ram += sec["bytes"]
            flash += sec["bytes"] if not name.startswith(".bss") else 0
    return flash, ram


def _run_emulated(proj: Project, elf_path: Path, device: str, xs: list[np.ndarray], timeout_s: float) -> RunResult:
    qemu = device.startswith("qemu-")
    t = get_target(device[5:] if qemu else device)
    if t.name != proj.target:
        raise ExportError(f"the project was exported for {proj.target}, not {t.name}")
    sections, syms, sizes, load = _elf_facts(elf_path)
    p = proj.prefix
    missing = [s for s in (f"{p}_arena", f"{p}_init", f"{p}_invoke", "mn_halt") if s not in syms]
    if missing:
        raise ExportError(f"the image {elf_path} lacks {', '.join(missing)}")
    if qemu or t.unicorn_cpu is None:  # a preset only QEMU emulates (riscv32-qemu) runs there by default
        if t.qemu is None:
            raise ExportError(f"no emulator runs {t.name}")
        from micronn.micro.gdb import QemuDevice

        dev = QemuDevice(t)
    else:
        from micronn.micro.unicorn import UnicornDevice

        dev = UnicornDevice(t)
    try:
        for addr, data in load:
            dev.write(addr, data)
        stack_lo = t.stack_top - t.stack_size
        dev.write(stack_lo, bytes([PAINT]) * t.stack_size)
        arena, halt = syms[f"{p}_arena"], syms["mn_halt"]
        if "mn_trap_init" in syms:  # RISC-V: traps go to mn_fault, as after the image's own start-up
            dev.execute(syms["mn_trap_init"], halt, timeout_s=timeout_s)
        dev.execute(syms[f"{p}_init"], halt, timeout_s=timeout_s)
        for x, io in zip(xs, proj.inputs):
            dev.write(arena + io.arena_offset, x.tobytes())
        entries = tuple(syms[k] for k in proj.kernels if k in syms)
        res = dev.execute(syms[f"{p}_invoke"], halt, timeout_s=timeout_s, marks=entries)
        if f"{p}_failed_op" in syms:  # the invoke's return value: non-zero when a kernel failed
            regs = dev.registers()
            code = regs.get("r0", regs.get("a0", 0))
            if code:
                op = int.from_bytes(dev.read(syms[f"{p}_failed_op"], 4), "little", signed=True)
                _failed(proj, device, code, op)
        outs = [np.frombuffer(dev.read(arena + io.arena_offset, io.nbytes), io.dtype).reshape(io.shape).copy()
                for io in proj.outputs]
        painted = np.frombuffer(dev.read(stack_lo, t.stack_size), np.uint8)
        touched = np.flatnonzero(painted != PAINT)
        stack = t.stack_size - int(touched[0]) if len(touched) else 0
    finally:
        dev.close()
    ops = []
    if res.instructions is not None and len(res.marks) == len(proj.ops):
        ends = [*res.marks[1:], None]
        for (op, name, kernel), start, end in zip(proj.ops, res.marks, ends):
            n = (end.instructions if end else res.instructions) - start.instructions
            c = (end.cycles if end else res.cycles) - start.cycles
            ops.append({"op": op, "name": name, "kernel": kernel, "instructions": n, "cycles": c,
                        "code_bytes": sizes.get(kernel, 0)})
    flash, ram = _sizes(sections, t)
    return RunResult(device, outs, [], res.instructions, res.cycles, "", flash, ram + stack, stack, sections,
                     {k: v for k, v in sizes.items() if k.startswith(("mn_", f"{p}_"))}, ops)


def _failed(proj: Project, device: str, code: int, op: int) -> None:
    code = code - (1 << 32) if code >= 1 << 31 else code
    name = next((n for o, n, _ in proj.ops if o == op), "?")
    what = f"{proj.prefix}_invoke returned {code} at operator {op} ({name})"
    if code in KERNEL_FAILURES:
        raise InvokeError(f"the firmware failed on {device}: {what}: {KERNEL_FAILURES[code]}")
    raise StorageError(f"the firmware's storage failed on {device}: {what}; {proj.prefix}_storage could not write "
                       "or read back a spilled tensor")


def _run_host(proj: Project, xs: list[np.ndarray]) -> list[np.ndarray]:
    tc = find_toolchain(get_target("host"))
    sources, _ = _sources(proj, host=True)
    lib = ctypes.CDLL(str(tc.shared_object(sources, [proj.path])))
    p = proj.prefix
    for name in (f"{p}_input", f"{p}_output"):
        getattr(lib, name).restype = ctypes.c_void_p
        getattr(lib, name).argtypes = [ctypes.c_int]
    getattr(lib, f"{p}_init")()
    for i, x in enumerate(xs):
        ctypes.memmove(getattr(lib, f"{p}_input")(i), x.ctypes.data, x.nbytes)
    code = getattr(lib, f"{p}_invoke")()
    if code and hasattr(lib, f"{p}_failed_op"):
        _failed(proj, "host", code, ctypes.c_int32.in_dll(lib, f"{p}_failed_op").value)
    return [np.frombuffer(ctypes.string_at(getattr(lib, f"{p}_output")(i), io.nbytes), io.dtype).reshape(io.shape)
            .copy() for i, io in enumerate(proj.outputs)]


def run(project: Project | str | os.PathLike, inputs: list[np.ndarray] | None = None, device: str | None = None,
        *, toolchain: str | None = None, seed: int = 0, timeout_s: float = 600.0) -> RunResult:
    """Build the project, run one inference on ``device`` (the project's target on Unicorn by default,
    ``"qemu-m4"``-style names for QEMU over GDB, ``"host"`` natively) and compare every output byte with
    micronn's interpreter on the same inputs (random ones from ``seed`` when none are given)."""
    proj = project if isinstance(project, Project) else load(project)
    try:
        model = read((proj.path / proj.model_file).read_bytes())
    except OSError as e:
        raise ExportError(f"the project lacks its model copy {proj.model_file}: {e.strerror}") from e
    xs = _inputs(proj, inputs, model, seed)
    it = Interpreter(model)
    for i, x in enumerate(xs):
        it.set_input(x, i)
    try:
        it.invoke()
    except InvokeError as e:  # the firmware must fail too (its invoke returns the code): run it to see that it does
        failed: InvokeError | None = e
    else:
        failed = None
    expected = [it.get_output(i).copy() for i in range(len(proj.outputs))]
    device = device or proj.target
    if device == "host":
        result = RunResult("host", _run_host(proj, xs), expected)
        _check_failed(failed, device)
        return result
    elf_path = build(proj, toolchain)
    image = proj.path / f"{proj.prefix}.elf"
    try:
        shutil.copyfile(elf_path, image)
    except OSError as e:
        raise ExportError(f"cannot write the image {image}: {e.strerror}") from e
    try:
        result = _run_emulated(proj, elf_path, device, xs, timeout_s)
    except DeviceFault as e:
        raise MicronnError(f"the firmware faulted on {device}: {e}") from e
    _check_failed(failed, device)
    result.expected, result.image = expected, str(image)
    return result


def _check_failed(failed: InvokeError | None, device: str) -> None:
    """The interpreter's invoke failed but the firmware's returned 0: its outputs cannot be trusted."""
    if failed is not None:
        raise InvokeError(f"micronn's interpreter failed ({failed}) but the firmware's invoke on {device} did not")
