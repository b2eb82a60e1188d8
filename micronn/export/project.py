"""The exported project: its files, templates and the metadata ``run`` and ``build`` read back."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from micronn import __version__, tinyseg
from micronn.export.codegen import ExportError, IoInfo, Program, generate
from micronn.interpreter import Interpreter
from micronn.ir import Model
from micronn.micro.target import Target, get_target
from micronn.micro.toolchain import RUNTIME_DIR
from micronn.tflite.reader import Source, read
from micronn.tflite.writer import write

PROJECT = Path(__file__).parent / "project"
META = "micronn.json"


@dataclass
class Project:
    """An exported project on disk and what micronn knows about it (also in its ``micronn.json``)."""

    path: Path
    prefix: str
    target: str
    arena_bytes: int
    const_bytes: int
    kernels: list[str]
    calls: int
    inputs: list[IoInfo]
    outputs: list[IoInfo]
    files: list[str] = field(default_factory=list)
    model_file: str = ""
    ops: list[tuple[int, str, str]] = field(default_factory=list)  # per kernel call: (operator, op name, kernel)
    storage_bytes: int = 0  # the STORAGE region spilled tensors go to (optimize=True), outside RAM
    tuned: int = 0  # kernel calls a tuning log gave a generated kernel

    def to_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in vars(self).items() if k not in ("inputs", "outputs", "path")}
        return dict(d, path=str(self.path), inputs=[i.to_dict() for i in self.inputs],
                    outputs=[o.to_dict() for o in self.outputs])

    def __str__(self) -> str:
        io = "; ".join(f"{k} {i.name!r} {i.dtype}{i.shape}" for k, ios in (("in", self.inputs), ("out", self.outputs))
                       for i in ios)
        return (f"{self.path}: {self.prefix}_init/{self.prefix}_invoke for {self.target}, {self.calls} kernel calls "
                f"({', '.join(self.kernels)}), arena {self.arena_bytes:,} B, constants {self.const_bytes:,} B; {io}")


def _linker_script(t: Target, stack: int, storage: int = 0) -> str:
    """Flash, RAM and (for spilled tensors) a STORAGE region: here the top of the preset's flash, which the
    emulators let the program write; on a board, external RAM or flash behind the project's storage function."""
    storage = -(-storage // 4096) * 4096
    region = f"    STORAGE (rw) : ORIGIN = 0x{t.flash.end - storage:08x}, LENGTH = 0x{storage:x}\n" if storage else ""
    place = "    .storage (NOLOAD) : ALIGN(16) { *(.storage*) } > STORAGE\n" if storage else ""
    return f"""/* Memory map of the {t.name} preset: code and constants in flash, data, arena and stack in RAM. */
MEMORY {{
    FLASH (rx) : ORIGIN = 0x{t.flash.base:08x}, LENGTH = 0x{t.flash.size - storage:x}
    RAM (rwx)  : ORIGIN = 0x{t.ram.base:08x}, LENGTH = 0x{t.ram.size:x}
{region}}}
ENTRY(Reset_Handler)
SECTIONS {{
    .text : {{ KEEP(*(.vectors)) KEEP(*(.text.entry)) *(.text*) }} > FLASH
    .rodata : ALIGN(16) {{ *(.rodata*) *(.srodata*) }} > FLASH
    .data : ALIGN(8) {{ __data_start = .; *(.data*) *(.sdata*) . = ALIGN(4); __data_end = .; }} > RAM AT > FLASH
    __data_load = LOADADDR(.data);
    .bss (NOLOAD) : ALIGN(16) {{ __bss_start = .; *(.bss*) *(.sbss*) *(COMMON) . = ALIGN(4); __bss_end = .; }} > RAM
{place}    /DISCARD/ : {{ *(.ARM.exidx*) *(.ARM.extab*) *(.comment) *(.riscv.attributes) }}
}}
__stack_top = ORIGIN(RAM) + LENGTH(RAM);
ASSERT(__bss_end + {stack} <= __stack_top, "the arena, data and a {stack}-byte stack do not fit in RAM")
"""


def startup_file(t: Target) -> str:
    """The start-up source of ``t``'s architecture."""
    return "startup_riscv.c" if t.arch == "riscv" else "startup_cortex_m.c"


def _makefile(t: Target, prefix: str) -> str:
    cpu = t.cpu or ""
    if t.arch == "riscv":
        head = f"""# Build the firmware: `make` (zig's clang: pip install ziglang).
CC := python3 -m ziglang cc -target riscv32-freestanding-none -mcpu={cpu}
LIBS := -Wl,--entry=Reset_Handler
"""
    else:
        head = f"""# Build the firmware: `make` (arm-none-eabi-gcc) or `make TOOLCHAIN=zig` (pip install ziglang).
TOOLCHAIN ?= gcc
ifeq ($(TOOLCHAIN),zig)
CC := python3 -m ziglang cc -target thumb-freestanding-eabi -mcpu={cpu}
LIBS := -Wl,--entry=Reset_Handler
else
CC := arm-none-eabi-gcc -mthumb -mcpu={cpu.replace('_', '-')} -mfloat-abi=soft
LIBS := -nostdlib -lgcc
endif
"""
    opt = " ".join(t.firmware_cflags)
    return head + f"""CFLAGS := {opt} -g0 -ffunction-sections -fdata-sections -fno-unwind-tables \\
\t-fno-asynchronous-unwind-tables -Wall
SOURCES := $(filter-out mn_libc.c,$(wildcard *.c))

{prefix}.elf: $(SOURCES) mn_libc.c {prefix}.ld $(wildcard *.h)
\t$(CC) $(CFLAGS) -c mn_libc.c -ffreestanding -fno-builtin -o mn_libc.o
\t$(CC) $(CFLAGS) $(SOURCES) mn_libc.o -T {prefix}.ld -Wl,--gc-sections $(LIBS) -o $@

clean:
\trm -f {prefix}.elf mn_libc.o
"""


def _storage_note(proj: Project) -> str:
    if not proj.storage_bytes:
        return ""
    p = proj.prefix
    return f"""
Spilled tensors ({proj.storage_bytes:,} bytes) go through `{p}_storage()` (`{p}_storage.c`: a memory area in the
STORAGE region; put your board's external RAM or flash driver there). When it returns non-zero, `{p}_invoke()`
stops and returns that code, `{p}_failed_op` names the operator, and the outputs are not valid.
"""


def _readme(proj: Project, source: str, t: Target) -> str:
    p, startup = proj.prefix, startup_file(t)
    riscv = t.arch == "riscv"
    build = "zig's clang (pip install ziglang)" if riscv else "arm-none-eabi-gcc; or: make TOOLCHAIN=zig"
    gdb = "gdb-multiarch" if riscv else "arm-none-eabi-gdb"
    ios = "\n".join(f"- {kind} {i}: `{io.name}`, {io.dtype} {io.shape}, scale {io.scale:g}, zero point {io.zero_point} "
                    f"({io.nbytes} bytes)" for kind, items in (("input", proj.inputs), ("output", proj.outputs))
                    for i, io in enumerate(items))
    return f"""# {p}: {source} as standalone firmware for {proj.target}

Generated by micronn {__version__}. The model runs as {proj.calls} calls of {len(proj.kernels)} kernels with
every argument fixed at build time: no interpreter, no flatbuffer, no allocation, no C library.

- RAM: one static arena of {proj.arena_bytes:,} bytes (`{p}_arena`, micronn's memory plan), plus the stack.
- Flash: {proj.const_bytes:,} bytes of weights and per-channel parameters (`{p}_data.c`), plus the code.

{ios}
{_storage_note(proj)}
## Use it from an application

```c
#include "{p}.h"

{p}_init();                                   /* once; again to reset recurrent state */
memcpy({p}_input(0), my_input, {p.upper()}_INPUT_0_BYTES);
{p}_invoke();
const int8_t *scores = {p}_output(0);
```

Add `{p}.c`, `{p}_data.c` and the kernel files to your build (`-Os` or `-O2`, C99); drop `main.c`, `{startup}`,
`mn_libc.c` and `{p}.ld` if your board's SDK brings its own start-up code, linker script and C library.

## Build and run it here

```sh
make                 # {build}
micronn export MODEL.tflite --target {proj.target} -o DIR --run            # emulated, checked against micronn
```

## Run it on a board

`main.c` calls `{p}_init()` once and then loops: it stops in `mn_input_ready()`, runs the model, and stops in
`mn_output_ready()`. With any GDB server (OpenOCD, pyOCD, a J-Link GDB server or QEMU's `-gdb`):

```sh
{gdb} {p}.elf -ex "target extended-remote :3333" -ex load -ex "break mn_input_ready" \\
    -ex "break mn_output_ready" -ex continue
(gdb) restore input.bin binary {p}_input(0)     # or: call memcpy(...)
(gdb) continue                                      # stops in mn_output_ready
(gdb) dump binary memory output.bin {p}_output(0) ({p}_output(0) + {p.upper()}_OUTPUT_0_BYTES)
```
"""


def _check_fit(prog: Program, t: Target) -> None:
    """Refuse, before writing anything, a model whose arena and stack or constants cannot fit the target."""
    ram = prog.arena_bytes + t.stack_size
    if ram > t.ram.size:
        raise ExportError(f"the model needs {prog.arena_bytes:,} B of arena + {t.stack_size:,} B of stack = {ram:,} B "
                          f"of RAM; {t.name} has {t.ram.size:,} B ({ram - t.ram.size:,} B missing)")
    if prog.const_bytes > t.flash.size:
        raise ExportError(f"the model's constants take {prog.const_bytes:,} B of flash; {t.name} has "
                          f"{t.flash.size:,} B ({prog.const_bytes - t.flash.size:,} B missing)")


def export(model: Model | Source, out: str | os.PathLike, target: str | Target = "cortex-m4", *,
           prefix: str = "model", optimize: bool = False, target_bytes: int | None = None,
           tuning_log: Any = None, **interpreter_kw: Any) -> Project:
    """Write a standalone C project for ``model`` into directory ``out`` (created; files it writes are replaced).

    ``interpreter_kw`` go to the ``Interpreter`` whose plan fixes the arena (e.g. ``planner="tflm"``). With
    ``optimize``, TinySeg's plan (``micronn.tinyseg.optimize``, down to ``target_bytes`` if given) decides what the
    firmware spills to the project's storage function and fetches back; its outputs stay the model's. With
    ``tuning_log`` (``micronn tune``), layers tuned for ``target`` get their best generated kernel. Raises
    ``UnsupportedError`` naming every operator without a C kernel, and ``ExportError`` when the model cannot fit
    the target, both before anything is written.
    """
    t = get_target(target)
    if t.native:
        raise ExportError("export targets a microcontroller (cortex-m0/m3/m4/m7/m33, riscv32, riscv32-qemu); the host "
                          "runs the project through run(..., device='host')")
    source = model if isinstance(model, Model) else read(model)
    graph = tinyseg.optimize(source, target_bytes, latency=False).model if optimize else source
    it = Interpreter(graph, **interpreter_kw)
    prog: Program = generate(it, prefix, tuning_log, t.name)
    _check_fit(prog, t)
    path = Path(out)
    try:
        path.mkdir(parents=True, exist_ok=True)
        files = dict(prog.files)
        files["mn_libc.c"] = (RUNTIME_DIR / "mn_runtime_libc.c").read_text()  # the device runtime's own helpers
        for name in (startup_file(t), "main.c"):
            text = (PROJECT / name).read_text()
            files[name] = text.replace('"model.h"', f'"{prefix}.h"').replace("model_", f"{prefix}_") \
                if name == "main.c" else text
        files[f"{prefix}.ld"] = _linker_script(t, t.stack_size, sum(-(-n // 16) * 16 for n in prog.storage.values()))
        files["Makefile"] = _makefile(t, prefix)
        model_file = f"{prefix}.tflite"
        proj = Project(path, prefix, t.name, prog.arena_bytes, prog.const_bytes, prog.kernels, prog.calls,
                       prog.inputs, prog.outputs, sorted([*files, "README.md", META, model_file]), model_file,
                       [tuple(o) for o in prog.ops], sum(-(-n // 16) * 16 for n in prog.storage.values()),
                       len(prog.tuned))
        files["README.md"] = _readme(proj, getattr(model, "name", None) or "the model", t)
        for name, text in files.items():
            (path / name).write_text(text)
        (path / model_file).write_bytes(write(source))  # what run() checks the firmware against
        (path / META).write_text(json.dumps(proj.to_dict(), indent=1))
    except OSError as e:
        raise ExportError(f"cannot write the project to {os.fspath(out)!r}: {e.strerror or e}") from e
    return proj


def load(path: str | os.PathLike) -> Project:
    """A project ``export`` wrote, from its directory."""
    try:
        d = json.loads((Path(path) / META).read_text())
        return Project(Path(path), d["prefix"], d["target"], d["arena_bytes"], d["const_bytes"], d["kernels"],
                       d["calls"], [IoInfo(**i) for i in d["inputs"]], [IoInfo(**o) for o in d["outputs"]],
                       d["files"], d["model_file"], [tuple(o) for o in d["ops"]], d.get("storage_bytes", 0),
                       d.get("tuned", 0))
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ExportError(f"{os.fspath(path)!r} is not a project micronn exported: {e}") from e


