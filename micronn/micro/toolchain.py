"""Cross-compilers for device code: zig's clang (default; Arm and RISC-V), ``arm-none-eabi-gcc`` when on PATH (Arm
only), the host ``cc``.

Every object, link and shared library is cached by a hash of its inputs under ``$MICRONN_CACHE`` (default
``~/.cache/micronn``), so tests and the CLI build the runtime and kernels once.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from micronn.errors import MicronnError
from micronn.micro.target import Target

RUNTIME_DIR = Path(__file__).parent / "runtime"
COMMON = ["-g0", "-ffunction-sections", "-fdata-sections", "-fno-unwind-tables", "-fno-asynchronous-unwind-tables",
          "-fno-exceptions", "-Wall"]
# software floating point and 64-bit division: pulled from the compiler's own support library into the runtime
# so that modules (linked without one) find them
LIBCALLS = [f"__aeabi_{n}" for n in (
    "fadd fsub frsub fmul fdiv f2iz f2uiz i2f ui2f l2f ul2f f2lz f2ulz fcmpeq fcmplt fcmple fcmpgt fcmpge fcmpun "
    "f2d d2f dadd dsub drsub dmul ddiv d2iz d2uiz i2d ui2d l2d ul2d d2lz d2ulz dcmpeq dcmplt dcmple dcmpgt dcmpge "
    "dcmpun ldivmod uldivmod").split()]
# the same helpers under their libgcc / compiler-rt names, which RISC-V calls. Linking the kernels for RV32IMC shows
# the int8 ones need none (32-bit multiply and divide are M instructions, 64-bit products MULHU sequences, 64-bit
# shifts inline); the float kernels call the single- and double-precision arithmetic, conversions and comparisons,
# and 64-bit division calls __divdi3
LIBCALLS_RISCV = [f"__{n}" for n in (
    "addsf3 subsf3 mulsf3 divsf3 negsf2 fixsfsi fixunssfsi floatsisf floatunsisf floatdisf floatundisf fixsfdi "
    "fixunssfdi eqsf2 nesf2 ltsf2 lesf2 gtsf2 gesf2 unordsf2 extendsfdf2 truncdfsf2 adddf3 subdf3 muldf3 divdf3 "
    "negdf2 fixdfsi fixunsdfsi floatsidf floatunsidf floatdidf floatundidf fixdfdi fixunsdfdi eqdf2 nedf2 ltdf2 "
    "ledf2 gtdf2 gedf2 unorddf2 divdi3 udivdi3 moddi3 umoddi3 muldi3 ashldi3 lshrdi3 ashrdi3").split()]


class ToolchainError(MicronnError):
    """A compiler is missing or failed; the message carries its diagnostics."""


def cache_dir() -> Path:
    d = Path(os.environ.get("MICRONN_CACHE") or Path.home() / ".cache" / "micronn")
    d.mkdir(parents=True, exist_ok=True)
    return d


def _digest(*parts: bytes | str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode() if isinstance(p, str) else p)
        h.update(b"\0")
    return h.hexdigest()[:24]


def _headers(include_dirs: list[Path]) -> list[bytes]:
    return [p.name.encode() + p.read_bytes() for d in include_dirs for p in sorted(Path(d).glob("*.h"))]


_INCLUDE = re.compile(rb'^\s*#\s*include\s*"([^"]+)"', re.M)


def _included(src: Path, include_dirs: list[Path]) -> list[bytes]:
    """The local files ``src`` includes, directly or through each other (quoted includes found beside the including
    file or in ``include_dirs``), as name + bytes: what its object depends on besides the compiler and flags. A
    conditional include counts whether or not it is taken, which only makes the key stricter."""
    seen: dict[Path, bytes] = {}
    todo = [src]
    while todo:
        f = todo.pop()
        for name in _INCLUDE.findall(f.read_bytes()):
            for d in (f.parent, *include_dirs):
                p = (Path(d) / name.decode()).resolve()
                if p.is_file():
                    if p not in seen:
                        seen[p] = p.read_bytes()
                        todo.append(p)
                    break
    return [p.name.encode() + b"\0" + data for p, data in sorted(seen.items())]


class Toolchain:
    """Compile C to objects and link them; ``cc`` is the compiler command, ``flags`` its target flags."""

    def __init__(self, kind: str, cc: list[str], flags: list[str], arch: str = "arm"):
        self.kind, self.cc, self.flags, self.arch = kind, cc, flags, arch

    def __repr__(self) -> str:
        return f"Toolchain({self.kind}: {' '.join(self.cc + self.flags)})"

    def _run(self, args: list[str], what: str) -> None:
        try:
            p = subprocess.run(self.cc + args, capture_output=True, text=True, timeout=300)
        except FileNotFoundError as e:
            raise ToolchainError(f"{self.kind} toolchain not found: {e}") from e
        except subprocess.TimeoutExpired as e:
            raise ToolchainError(f"{what} timed out after {e.timeout} s") from e
        if p.returncode != 0:
            raise ToolchainError(f"{what} failed ({self.kind}):\n{p.stderr.strip()[-4000:]}")

    def _cached(self, key: str, suffix: str, build) -> Path:
        out = cache_dir() / f"{key}{suffix}"
        if not out.exists():
            with tempfile.TemporaryDirectory(dir=cache_dir()) as tmp:
                tmp_out = Path(tmp) / out.name
                build(tmp_out)
                os.replace(tmp_out, out)  # atomic: concurrent builders agree
        return out

    def compile(self, sources: list[Path], include_dirs: list[Path] = (), flags: list[str] = ()) -> list[Path]:
        """One object per source (compiled in parallel, each cached)."""
        inc = [f"-I{d}" for d in include_dirs]
        headers = _headers(list(include_dirs))

        def one(src: Path) -> Path:
            src = Path(src)
            args = [*self.flags, *COMMON, *inc, *flags]
            key = _digest(self.kind, *self.cc, *args, src.name, src.read_bytes(), *headers)
            return self._cached(f"{src.stem}-{key}", ".o",
                                lambda out: self._run([*args, "-c", str(src), "-o", str(out)], f"compiling {src}"))

        with ThreadPoolExecutor(2) as ex:
            return list(ex.map(one, sources))

    def link(self, objects: list[Path], script: str, *, runtime: bool = False, name: str = "module") -> Path:
        """Link ``objects`` with linker ``script`` into an ELF; the runtime also gets the support library's
        float and 64-bit helpers, modules get no library at all (they resolve against the runtime)."""
        objs = [Path(o) for o in objects]
        libcalls = LIBCALLS_RISCV if self.arch == "riscv" else LIBCALLS
        extra = [f"-Wl,-u,{s}" for s in libcalls] + ["-Wl,--entry=mn_reset"] if runtime else \
            ["-nostdlib", "-Wl,--no-gc-sections", "-Wl,--entry=0"]
        if self.kind == "gcc":
            extra = ["-nostartfiles", *extra, *(["-lgcc"] if runtime else [])]
        key = _digest(self.kind, *self.cc, *self.flags, *extra, script, *(o.read_bytes() for o in objs))

        def build(out: Path) -> None:
            ld = out.with_suffix(".ld")
            ld.write_text(script)
            self._run([*self.flags, "-T", str(ld), *map(str, objs), *extra, "-o", str(out)], f"linking {name}")

        return self._cached(f"{name}-{key}", ".elf", build)

    def link_program(self, objects: list[Path], script: str, *, name: str = "program") -> Path:
        """Link a whole program that brings its own start-up code and linker script (an exported firmware):
        unused sections dropped, and only the compiler's support library for what the CPU lacks."""
        objs = [Path(o) for o in objects]
        # zig strips a size-optimized (-Os) program unless told to keep symbols, which the size report reads
        libs = ["-nostdlib", "-lgcc"] if self.kind == "gcc" else ["-Wl,--entry=Reset_Handler", "-g"]
        extra = ["-Wl,--gc-sections", *libs]
        key = _digest(self.kind, *self.cc, *self.flags, *extra, script, *(o.read_bytes() for o in objs))

        def build(out: Path) -> None:
            ld = out.with_suffix(".ld")
            ld.write_text(script)
            self._run([*self.flags, "-T", str(ld), *map(str, objs), *extra, "-o", str(out)], f"linking {name}")

        return self._cached(f"{name}-{key}", ".elf", build)

    def shared_object(self, sources: list[Path], include_dirs: list[Path] = (), flags: list[str] = ()) -> Path:
        """Host only: one shared library from C sources. Each source becomes an object cached by its text and the
        local files it includes, so a kernel compiles once for every model whose program has the same kernel file
        and configuration (the generated per-model files are small); the library is cached by its objects."""
        srcs = [Path(s) for s in sources]
        dirs = [Path(d) for d in include_dirs]
        args = [*self.flags, "-O2", "-fPIC", "-DMN_HOST", *[f"-I{d}" for d in dirs], *flags]
        compile_args = [a for a in args if not a.startswith("-l")]  # libraries are the link's

        def one(src: Path) -> Path:
            # where the headers sit is not part of the key: which ones it includes, and their bytes, are
            key = _digest(self.kind, *self.cc, *(a for a in compile_args if not a.startswith("-I")), src.name,
                          src.read_bytes(), *_included(src, dirs))
            return self._cached(f"host-{src.stem}-{key}", ".o", lambda out: self._run(
                [*compile_args, "-c", str(src), "-o", str(out)], f"compiling {src.name} for the host"))

        with ThreadPoolExecutor(2) as ex:
            objects = list(ex.map(one, srcs))
        key = _digest(self.kind, *self.cc, *args, *(o.name for o in objects))  # an object's name holds its key
        return self._cached(f"lib-{key}", ".so", lambda out: self._run(
            [*args, "-shared", *map(str, objects), "-o", str(out)], "building a host library"))


def _zig_available() -> bool:
    try:
        import ziglang  # noqa: F401
    except ImportError:
        return False
    return True


def find_toolchain(target: Target, prefer: str | None = None, *, firmware: bool = False) -> Toolchain:
    """The toolchain for ``target``: ``prefer`` ("zig", "gcc", "host") or the first available; ``firmware``
    takes the preset's flags for standalone images instead of those for host-driven modules."""
    cflags = target.firmware_cflags if firmware else target.cflags
    if target.native:
        cc = os.environ.get("CC", "cc")
        if not shutil.which(cc):
            raise ToolchainError(f"no host C compiler: {cc!r} is not on PATH (set $CC)")
        return Toolchain("host", [cc], [])
    if prefer not in (None, "zig", "gcc"):
        raise ToolchainError(f"unknown toolchain {prefer!r} for {target.name}: zig or gcc")
    if target.arch == "riscv":
        if prefer == "gcc":
            raise ToolchainError(f"the gcc toolchain (arm-none-eabi-gcc) builds for Arm only; {target.name} is "
                                 "RISC-V: use zig (the default)")
        if _zig_available():  # -mcpu is a base CPU plus extensions: generic_rv32+m+c is RV32IMC
            return Toolchain("zig", [sys.executable, "-m", "ziglang", "cc"],
                             ["-target", "riscv32-freestanding-none", f"-mcpu={target.cpu}", *cflags], "riscv")
        raise ToolchainError(f"no cross compiler for {target.name}: pip install ziglang (or micronn[micro])")
    kinds = [prefer] if prefer else ["zig", "gcc"]
    for kind in kinds:
        if kind == "zig" and _zig_available():
            return Toolchain("zig", [sys.executable, "-m", "ziglang", "cc"],
                             ["-target", "thumb-freestanding-eabi", f"-mcpu={target.cpu}", *cflags])
        if kind == "gcc" and shutil.which("arm-none-eabi-gcc"):
            return Toolchain("gcc", ["arm-none-eabi-gcc"], ["-mthumb", f"-mcpu={target.cpu.replace('_', '-')}",
                                                            "-mfloat-abi=soft", *cflags])
    raise ToolchainError(f"no cross compiler for {target.name}: pip install ziglang (or micronn[micro]), "
                         "or put arm-none-eabi-gcc on PATH")
