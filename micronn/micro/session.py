"""A session with a bare-metal device (μTVM's MicroSession): runtime, device memory, modules and a lazy task queue.

The host owns the device's memory: every section (text, rodata, data, bss, args, workspace) has a host-side
allocator and the device never allocates. Calls are destination-passing and lazy: ``fn(out, x, 3)`` packs its
argument words and queues a task; the queue runs in one ``execute`` when a result is read, on ``sync()`` or when
the device's task array is full, so many calls cost one host round trip.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from micronn.errors import MicronnError
from micronn.micro.device import Cost, DeviceFault, ExecResult, LowLevelDevice
from micronn.micro.target import Region, Target, get_target
from micronn.micro.toolchain import RUNTIME_DIR, Toolchain, find_toolchain

MAX_TASKS = 256


class SessionError(MicronnError):
    """Misuse of a session: out of device memory, unknown symbol, bad argument, closed session."""


class Allocator:
    """First-fit allocator over one section of device memory (host-side bookkeeping only)."""

    def __init__(self, name: str, base: int, size: int):
        self.name, self.base, self.size = name, base, size
        self._free: list[tuple[int, int]] = [(base, size)] if size > 0 else []
        self._used: dict[int, int] = {}

    def alloc(self, n: int, align: int = 8) -> int:
        n = max(int(n), 1)
        for i, (b, s) in enumerate(self._free):
            a = -(-b // align) * align
            if a + n <= b + s:
                rest = [(b, a - b)] * (a > b) + [(a + n, b + s - a - n)] * (b + s > a + n)
                self._free[i:i + 1] = rest
                self._used[a] = n
                return a
        raise SessionError(f"out of device memory in section {self.name}: {n:,} bytes wanted, "
                           f"{sum(s for _, s in self._free):,} free of {self.size:,} (largest "
                           f"{max((s for _, s in self._free), default=0):,})")

    def free(self, addr: int) -> None:
        n = self._used.pop(addr, None)
        if n is None:
            raise SessionError(f"0x{addr:x} is not an allocation of section {self.name}")
        self._free = sorted(self._free + [(addr, n)])
        merged: list[tuple[int, int]] = []
        for b, s in self._free:
            if merged and merged[-1][0] + merged[-1][1] == b:
                merged[-1] = (merged[-1][0], merged[-1][1] + s)
            else:
                merged.append((b, s))
        self._free = merged

    @property
    def used(self) -> int:
        return sum(self._used.values())


class DeviceArray:
    """A tensor resident in device memory: ``addr`` is what kernels get; ``numpy()`` runs pending tasks first."""

    def __init__(self, sess: Session, addr: int, shape: tuple[int, ...], dtype: np.dtype, section: str):
        self.sess, self.addr, self.shape, self.dtype, self.section = sess, addr, tuple(shape), np.dtype(dtype), section
        self.nbytes = int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    def numpy(self) -> np.ndarray:
        return np.frombuffer(self.sess.read(self.addr, self.nbytes), self.dtype).reshape(self.shape).copy()

    def copyfrom(self, x: Any) -> DeviceArray:
        try:
            x = np.ascontiguousarray(x, dtype=self.dtype)
        except (TypeError, ValueError) as e:
            raise SessionError(f"cannot copy a {type(x).__name__} into {self}: {e}") from e
        if x.shape != self.shape:
            raise SessionError(f"shape {x.shape} does not match the device array's {self.shape}")
        self.sess.write(self.addr, x.tobytes())
        return self

    def free(self) -> None:
        self.sess.sections[self.section].free(self.addr)

    def __repr__(self) -> str:
        return f"DeviceArray({self.dtype.name}{list(self.shape)} at 0x{self.addr:x})"


class DeviceFunction:
    """A device function; calling it queues a task (arguments: DeviceArrays, ints, or raw addresses)."""

    def __init__(self, sess: Session, name: str, addr: int):
        self.sess, self.name, self.addr = sess, name, addr

    def __call__(self, *args: Any) -> None:
        self.sess.enqueue(self.addr, self.sess.pack(args), self.name)

    def __repr__(self) -> str:
        return f"DeviceFunction({self.name} at 0x{self.addr:x})"


class Module:
    """Code loaded into the session: its functions by name."""

    def __init__(self, sess: Session, symbols: dict[str, int], functions: set[str]):
        self.sess, self.symbols, self.functions = sess, symbols, functions

    def __getitem__(self, name: str) -> DeviceFunction:
        if name not in self.functions:
            raise SessionError(f"module has no function {name!r}; it has {', '.join(sorted(self.functions))}")
        return DeviceFunction(self.sess, name, self.symbols[name])


@dataclass
class TaskCost(Cost):
    name: str = ""


def _elf(path: Path):
    from elftools.elf.elffile import ELFFile

    f = open(path, "rb")  # noqa: SIM115 - the ELFFile reads lazily; closed by the caller
    return f, ELFFile(f)


def _alloc_sections(elf) -> list:
    return [s for s in elf.iter_sections() if s["sh_flags"] & 2 and s["sh_size"] and not s.name.startswith(".ARM")]


def _symbols(elf) -> tuple[dict[str, int], set[str]]:
    """Defined symbols (globals win over locals of the same name) and the names of global functions."""
    syms: dict[str, int] = {}
    funcs: set[str] = set()
    for s in elf.get_section_by_name(".symtab").iter_symbols():
        kind, bind = s["st_info"]["type"], s["st_info"]["bind"]
        if not s.name or s.name.startswith("$") or s["st_shndx"] == "SHN_UNDEF" or kind in ("STT_FILE", "STT_SECTION"):
            continue
        if bind != "STB_LOCAL" or s.name not in syms:
            syms[s.name] = s["st_value"]
        if kind == "STT_FUNC" and bind != "STB_LOCAL":
            funcs.add(s.name)
    return syms, funcs


class Session:
    """``with Session("cortex-m4") as sess:`` — a device with micronn's runtime loaded.

    ``target`` is a Target or preset name; ``"qemu-m4"`` (etc.) drives QEMU over GDB, ``"host"`` runs natively.
    ``device`` overrides the backend; ``toolchain`` picks "zig" or "gcc". ``timeout_s`` and ``max_instructions``
    bound every flush. Misuse (a closed session, a bad argument, shape or dtype) raises ``SessionError``; what goes
    wrong on the device raises ``DeviceFault``.
    """

    def __init__(self, target: str | Target = "cortex-m4", device: LowLevelDevice | None = None, *,
                 toolchain: str | None = None, timeout_s: float | None = 120.0, max_instructions: int | None = None,
                 max_tasks: int = MAX_TASKS):
        if timeout_s is not None and not timeout_s > 0 or max_instructions is not None and max_instructions < 1:
            raise SessionError(f"bad limits: timeout_s {timeout_s}, max_instructions {max_instructions}")
        if not 1 <= max_tasks <= 1 << 16:
            raise SessionError(f"max_tasks must be in [1, 65536], got {max_tasks}")
        self.closed = True  # until the device and its runtime are up
        qemu = isinstance(target, str) and target.startswith("qemu-")
        self.target = get_target(target[5:] if qemu else target)
        qemu = qemu or self.target.backend == "qemu"
        if device is None:
            if self.target.native:
                from micronn.micro.host import HostDevice

                device = HostDevice()
            elif qemu:
                from micronn.micro.gdb import QemuDevice

                device = QemuDevice(self.target)
            else:
                from micronn.micro.unicorn import UnicornDevice

                device = UnicornDevice(self.target)
        self.device = device
        self.word_size = device.word_size
        self.timeout_s, self.max_instructions, self.max_tasks = timeout_s, max_instructions, max_tasks
        self._queue: list[tuple[int, bytes, str]] = []
        self.executions = 0
        self.last_exec: ExecResult | None = None
        self.last_profile: list[TaskCost] = []  # the tasks of the last flush
        self.profile: list[TaskCost] = []  # every flushed task since the user last cleared it
        try:
            self.toolchain: Toolchain = find_toolchain(self.target, toolchain)
            self._load_runtime()
            self._boot()
        except BaseException:
            self.device.close()
            raise
        self.closed = False

    def _live(self) -> None:
        """Refuse work on a closed session: its device (emulator, process, connection) is gone."""
        if self.closed:
            raise SessionError(f"the {self.target.name} session is closed")

    # -- runtime and memory layout ---------------------------------------------------------------
    def _boot(self) -> None:
        """Run the runtime's start-up code where it has any (RISC-V: the trap vector), as a board's reset would;
        after every device reset too, since a reset clears what it set up."""
        if "mn_init" in self.runtime and not self.target.native:
            self.device.execute(self.runtime["mn_init"], self.runtime["mn_done"], max_instructions=10_000,
                                timeout_s=self.timeout_s)

    def _load_runtime(self) -> None:
        # the C library helpers only where there is no C library (the host has one)
        src = [RUNTIME_DIR / "mn_runtime.c"] + ([] if self.target.native else [RUNTIME_DIR / "mn_runtime_libc.c"])
        flags = ["-ffreestanding", "-fno-builtin", f"-DMN_MAX_TASKS={self.max_tasks}"]
        if self.target.native:
            self.runtime = self.device.load_library(self.toolchain.shared_object(src, flags=flags))
            ram = self.device.ram
            third = ram.size // 4
            self._layout({"rodata": Region(ram.base, third)}, Region(ram.base + third, ram.size - third))
            return
        t = self.target
        # .s* sections: RISC-V's small data, which clang keeps apart from the rest
        script = (f"SECTIONS {{\n . = 0x{t.flash.base:x};\n .text : {{ KEEP(*(.vectors)) KEEP(*mn_runtime*(.text*)) "
                  f"*(.text*) }}\n .rodata : ALIGN(8) {{ KEEP(*mn_runtime*(.rodata* .srodata*)) *(.rodata*) "
                  f"*(.srodata*) }}\n . = 0x{t.ram.base:x};\n .data : ALIGN(8) {{ KEEP(*mn_runtime*(.data* .sdata*)) "
                  f"*(.data*) *(.sdata*) }}\n .bss (NOLOAD) : ALIGN(8) {{ KEEP(*mn_runtime*(.bss* .sbss* COMMON)) "
                  f"*(.bss*) *(.sbss*) *(COMMON) }}\n /DISCARD/ : {{ *(.ARM.exidx*) *(.ARM.extab*) }}\n}}\n"
                  f"__stack_top = 0x{t.stack_top:x};\n")
        elf_path = self.toolchain.link(self.toolchain.compile(src, flags=flags), script, runtime=True, name="runtime")
        f, elf = _elf(elf_path)
        with f:
            ends = self._load_elf(elf)
            self.runtime, _ = _symbols(elf)
        flash_free = max([e for e in ends if t.flash.base <= e <= t.flash.end] + [t.flash.base])
        ram_free = max([e for e in ends if t.ram.base <= e <= t.ram.end] + [t.ram.base])
        flash = Region(flash_free, t.flash.end - flash_free)
        text = min(flash.size // 4, 512 << 10)
        self._layout({"text": Region(flash.base, text), "rodata": Region(flash.base + text, flash.size - text)},
                     Region(ram_free, t.ram.end - t.stack_size - ram_free))

    def _layout(self, flash: dict[str, Region], ram: Region) -> None:
        """Carve RAM into data, bss and args (64 KiB each, less on small devices) and the workspace."""
        small = min(64 << 10, ram.size // 16)
        regions = dict(flash, data=Region(ram.base, small), bss=Region(ram.base + small, small),
                       args=Region(ram.base + 2 * small, small),
                       workspace=Region(ram.base + 3 * small, ram.size - 3 * small))
        self.sections = {k: Allocator(k, r.base, r.size) for k, r in regions.items()}
        for k in ("mn_run", "mn_done", "mn_tasks", "mn_num_tasks", "mn_boundary"):
            if k not in self.runtime:
                raise SessionError(f"device runtime lacks symbol {k}")

    def _load_elf(self, elf) -> list[int]:
        """Write every allocated section of a linked ELF at its address; returns the section ends."""
        ends = []
        for s in _alloc_sections(elf):
            data = bytes(s["sh_size"]) if s["sh_type"] == "SHT_NOBITS" else s.data()
            self.device.write(s["sh_addr"], data)
            ends.append(s["sh_addr"] + s["sh_size"])
        return ends

    # -- memory ---------------------------------------------------------------------------------
    def read(self, addr: int, n: int) -> bytes:
        """Device memory, after the pending tasks have run."""
        if n < 0:
            raise SessionError(f"cannot read {n} bytes")
        self.sync()
        return self.device.read(addr, n)

    def write(self, addr: int, data: bytes) -> None:
        """Write device memory, after the pending tasks have run (they may still read what is overwritten)."""
        self._live()
        self.sync()
        self.device.write(addr, data)

    def alloc(self, nbytes: int, section: str = "workspace", align: int = 16) -> int:
        self._live()
        if section not in self.sections:
            raise SessionError(f"no section {section!r}; sections: {', '.join(self.sections)}")
        return self.sections[section].alloc(nbytes, align)

    def empty(self, shape: tuple[int, ...] | int, dtype: Any = np.int8, section: str = "workspace") -> DeviceArray:
        shape = (shape,) if isinstance(shape, int | np.integer) else tuple(shape)
        if not all(isinstance(d, int | np.integer) and d >= 0 for d in shape):
            raise SessionError(f"a device array's shape is non-negative integers, got {shape}")
        try:
            dt = np.dtype(dtype)
        except TypeError as e:
            raise SessionError(f"not a dtype: {dtype!r}") from e
        if dt.hasobject:
            raise SessionError(f"{dt} holds Python objects, which have no meaning on a device")
        return DeviceArray(self, self.alloc(int(np.prod(shape, dtype=np.int64)) * dt.itemsize, section), shape, dt,
                           section)

    def array(self, x: Any, section: str = "workspace") -> DeviceArray:
        """Copy a numpy array to the device (``section="rodata"`` for constants)."""
        try:
            x = np.ascontiguousarray(x)
        except (TypeError, ValueError) as e:
            raise SessionError(f"cannot copy a {type(x).__name__} to the device: {e}") from e
        out = self.empty(x.shape, x.dtype, section)
        self.device.write(out.addr, x.tobytes())
        return out

    # -- modules --------------------------------------------------------------------------------
    def load_module(self, sources: list[str | Path], include_dirs: list[str | Path] = (),
                    flags: list[str] = ()) -> Module:
        """Compile C sources (and/or take objects), link them at allocated slots against the runtime, load."""
        self._live()
        paths = [Path(s) for s in sources]
        incs = [Path(d) for d in include_dirs]
        if self.target.native and any(p.suffix != ".c" for p in paths):
            raise SessionError(f"the host device builds from C sources only, got "
                               f"{[p for p in paths if p.suffix != '.c']}")
        absent = [str(p) for p in paths if not p.is_file()]
        if absent:
            raise SessionError(f"no such source or object file: {', '.join(absent)}")
        if self.target.native:
            syms = self.device.load_library(self.toolchain.shared_object(paths, incs, list(flags)))
            return Module(self, syms, set(syms))
        objs = self.toolchain.compile([p for p in paths if p.suffix == ".c"], incs, list(flags))
        objs += [p for p in paths if p.suffix != ".c"]
        sizes = {"text": 64, "data": 64, "bss": 64}
        for o in objs:
            f, elf = _elf(o)
            with f:
                for s in _alloc_sections(elf):
                    kind = "bss" if s["sh_type"] == "SHT_NOBITS" else "data" if s["sh_flags"] & 1 and not \
                        s["sh_flags"] & 4 else "text"
                    sizes[kind] += s["sh_size"] + max(s["sh_addralign"], 1)
        at = {k: self.alloc(n, k, 8) for k, n in sizes.items()}
        provide = "".join(f"PROVIDE({k} = 0x{v:x});\n" for k, v in sorted(self.runtime.items())
                          if k.replace("_", "a").isalnum())
        script = (f"SECTIONS {{\n . = 0x{at['text']:x};\n .text : {{ *(.text*) }}\n .rodata : ALIGN(8) "
                  f"{{ *(.rodata*) *(.srodata*) }}\n . = 0x{at['data']:x};\n .data : {{ *(.data*) *(.sdata*) }}\n"
                  f" . = 0x{at['bss']:x};\n .bss (NOLOAD) : {{ *(.bss*) *(.sbss*) *(COMMON) }}\n"
                  f" /DISCARD/ : {{ *(.ARM.exidx*) *(.ARM.extab*) }}\n}}\n" + provide)
        f, elf = _elf(self.toolchain.link(objs, script, name="module"))
        with f:
            for s in _alloc_sections(elf):
                kind = "bss" if s["sh_type"] == "SHT_NOBITS" else "data" if s["sh_flags"] & 1 else "text"
                if s["sh_addr"] + s["sh_size"] > at[kind] + sizes[kind]:  # the measured slot must hold the link
                    raise SessionError(f"section {s.name} outgrew its slot ({s['sh_size']} bytes)")
            self._load_elf(elf)
            syms, funcs = _symbols(elf)
        return Module(self, syms, funcs)

    # -- calls ----------------------------------------------------------------------------------
    def pack(self, args: tuple | list) -> bytes:
        """Argument words: DeviceArrays become their address, integers two's-complement words."""
        mask = (1 << (8 * self.word_size)) - 1
        words = []
        for a in args:
            if isinstance(a, DeviceArray):
                if a.sess is not self:
                    raise SessionError(f"{a} belongs to another session")
                a = a.addr
            if isinstance(a, (bool, np.bool_)):
                a = int(a)
            if not isinstance(a, (int, np.integer)):
                raise SessionError(f"cannot pass {type(a).__name__} to a device function (DeviceArray or int)")
            a = int(a)
            if not -(1 << (8 * self.word_size - 1)) <= a <= mask:
                raise SessionError(f"argument {a} does not fit a {self.word_size}-byte word")
            words.append(a & mask)
        return np.array(words, np.uint32 if self.word_size == 4 else np.uint64).tobytes()

    def enqueue(self, fn_addr: int, args: bytes, name: str = "?") -> None:
        """Queue one task; runs the queue first if its arguments would not fit, and after if it is full."""
        self._live()
        if len(args) > self.sections["args"].size:
            raise SessionError(f"{len(args)} bytes of arguments exceed the args section")
        if sum(-(-len(a) // 8) * 8 for _, a, _ in self._queue) + len(args) > self.sections["args"].size:
            self.sync()
        self._queue.append((fn_addr, args, name))
        if len(self._queue) >= self.max_tasks:
            self.sync()

    @property
    def pending(self) -> int:
        return len(self._queue)

    def sync(self) -> ExecResult | None:
        """Run every queued task in one execute; per-task costs land in ``last_profile``."""
        self._live()
        if not self._queue:
            return None
        queue, self._queue = self._queue, []
        ws, dt = self.word_size, np.uint32 if self.word_size == 4 else np.uint64
        base, blob, tasks = self.sections["args"].base, bytearray(), []
        for fn, args, _ in queue:
            tasks += [fn, base + len(blob)]
            blob += args + bytes(-len(args) % 8)
        self.device.write(base, bytes(blob))
        self.device.write(self.runtime["mn_tasks"], np.array(tasks, dt).tobytes())
        self.device.write(self.runtime["mn_num_tasks"], len(queue).to_bytes(ws, "little"))
        t0 = time.perf_counter()
        try:
            res = self.device.execute(self.runtime["mn_run"], self.runtime["mn_done"],
                                      max_instructions=self.max_instructions, timeout_s=self.timeout_s,
                                      marks=(self.runtime["mn_boundary"],))
        except DeviceFault:
            self.device.reset()
            self._boot()
            raise
        res.wall_s = time.perf_counter() - t0
        self.executions += 1
        self.last_exec = res
        if len(res.marks) == len(queue) + 1:
            self.last_profile = [TaskCost(**vars(b - a), name=name)
                                 for (a, b), (_, _, name) in zip(zip(res.marks, res.marks[1:]), queue)]
        else:
            self.last_profile = [TaskCost(name=name) for _, _, name in queue]
        self.profile += self.last_profile
        return res

    # -- lifetime -------------------------------------------------------------------------------
    def close(self) -> None:
        """Release the device; idempotent. Queued tasks are dropped, and every later use raises SessionError."""
        self.closed = True
        self._queue.clear()
        self.device.close()

    def __enter__(self) -> Session:
        self._live()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
