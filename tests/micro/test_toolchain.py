from __future__ import annotations

import pytest

from micronn.micro.target import get_target
from micronn.micro.toolchain import ToolchainError, cache_dir, find_toolchain


def test_cache_dir_follows_env(tmp_path, monkeypatch):
    monkeypatch.setenv("MICRONN_CACHE", str(tmp_path / "c"))
    assert cache_dir() == tmp_path / "c" and cache_dir().is_dir()


def test_objects_are_cached_by_content(tmp_path):
    tc = find_toolchain(get_target("cortex-m4"))
    src = tmp_path / "k.c"
    src.write_text("int k(int x) { return x * 3; }\n")
    (a,) = tc.compile([src])
    mtime = a.stat().st_mtime_ns
    assert tc.compile([src]) == [a] and a.stat().st_mtime_ns == mtime  # not rebuilt
    src.write_text("int k(int x) { return x * 4; }\n")
    assert tc.compile([src]) != [a]


def test_compile_error_is_clear(tmp_path):
    src = tmp_path / "bad.c"
    src.write_text("int k(void) { return undefined_thing; }\n")
    with pytest.raises(ToolchainError, match="undefined_thing"):
        find_toolchain(get_target("cortex-m4")).compile([src])


def test_missing_toolchain(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ToolchainError, match="arm-none-eabi-gcc|no cross compiler"):
        find_toolchain(get_target("cortex-m4"), "gcc")
    monkeypatch.setenv("CC", "no-such-cc")
    with pytest.raises(ToolchainError, match="no host C compiler"):
        find_toolchain(get_target("host"))


def test_riscv_builds_with_zig_only(tmp_path):
    pytest.importorskip("ziglang")
    elffile = pytest.importorskip("elftools.elf.elffile")
    tc = find_toolchain(get_target("riscv32"))
    assert tc.arch == "riscv" and "riscv32-freestanding-none" in tc.flags and "-mcpu=generic_rv32+m+c" in tc.flags
    src = tmp_path / "k.c"
    src.write_text("long long k(long long a, long long b) { return a / b; }\n")
    (obj,) = tc.compile([src])
    with obj.open("rb") as f:
        elf = elffile.ELFFile(f)
        undefined = {s.name for s in elf.get_section_by_name(".symtab").iter_symbols()
                     if s.name and s["st_shndx"] == "SHN_UNDEF"}
        assert elf["e_machine"] == "EM_RISCV" and elf.elfclass == 32
    assert undefined == {"__divdi3"}  # compiler-rt's name, which the runtime pulls in (LIBCALLS_RISCV)
    with pytest.raises(ToolchainError, match="builds for Arm only.*riscv32 is RISC-V"):
        find_toolchain(get_target("riscv32"), "gcc")
    with pytest.raises(ToolchainError, match="unknown toolchain 'clang'"):
        find_toolchain(get_target("riscv32-qemu"), "clang")


def test_host_libraries_share_the_objects_of_identical_kernels(tmp_path, monkeypatch):
    """Two programs in different folders with the same kernel file and headers compile it once; a change in a
    header it includes (here, through another header) compiles it again; each library computes its own program."""
    import ctypes

    from micronn.export.native import host_toolchain

    monkeypatch.setenv("MICRONN_CACHE", str(tmp_path / "cache"))
    tc = host_toolchain()

    def program(name: str, scale: int, factor: int):
        d = tmp_path / name
        d.mkdir()
        (d / "cfg.h").write_text(f"#define FACTOR {factor}\n")
        (d / "k.h").write_text('#include "cfg.h"\n')
        (d / "k.c").write_text('#include "k.h"\nint k(int x) { return x * FACTOR; }\n')
        (d / "model.c").write_text(f"int k(int x);\nint run(int x) {{ return k(x) + {scale}; }}\n")
        return ctypes.CDLL(str(tc.shared_object([d / "k.c", d / "model.c"], [d]))).run

    def kernel_objects() -> int:
        return len(list((tmp_path / "cache").glob("host-k-*.o")))

    assert program("a", 1, 3)(5) == 16 and kernel_objects() == 1
    assert program("b", 2, 3)(5) == 17 and kernel_objects() == 1  # the kernel's object again
    assert program("c", 2, 4)(5) == 22 and kernel_objects() == 2  # cfg.h changed what k.c computes
