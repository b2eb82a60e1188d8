"""The host as a device, for debugging: memory is a host buffer, code a shared library built with ``cc``.

Device addresses are real host addresses, so kernels run natively on the same argument words. Faults are
best-effort: host reads and writes are bounds-checked against the buffer and the runtime's own data, but a
kernel that dereferences a wild pointer crashes the process like any native code.
"""

from __future__ import annotations

import ctypes
import time
from pathlib import Path

from micronn.micro.device import DeviceFault, ExecResult, LowLevelDevice
from micronn.micro.target import Region


class HostDevice(LowLevelDevice):
    word_size = ctypes.sizeof(ctypes.c_void_p)

    def __init__(self, size: int = 16 << 20):
        self._buf = ctypes.create_string_buffer(size)
        self.ram = Region(ctypes.addressof(self._buf), size)
        self._regions = [self.ram]
        self._libs: list[ctypes.CDLL] = []

    def _check(self, addr: int, n: int) -> None:
        if not any(r.base <= addr and addr + n <= r.end for r in self._regions):
            raise DeviceFault(f"host access of {n} bytes outside the device memory", address=addr)

    def read(self, addr: int, n: int) -> bytes:
        self._check(addr, n)
        return ctypes.string_at(addr, n)

    def write(self, addr: int, data: bytes) -> None:
        self._check(addr, len(data))
        ctypes.memmove(addr, bytes(data), len(data))

    def load_library(self, path: Path) -> dict[str, int]:
        """dlopen a shared library; its exported symbols by address, its data objects become device memory."""
        from elftools.elf.elffile import ELFFile

        lib = ctypes.CDLL(str(path))
        self._libs.append(lib)
        out = {}
        with open(path, "rb") as f:
            for s in ELFFile(f).get_section_by_name(".dynsym").iter_symbols():
                if s["st_shndx"] == "SHN_UNDEF" or s["st_info"]["type"] not in ("STT_FUNC", "STT_OBJECT"):
                    continue
                addr = ctypes.addressof(ctypes.c_char.in_dll(lib, s.name))
                out[s.name] = addr
                if s["st_info"]["type"] == "STT_OBJECT":
                    self._regions.append(Region(addr, s["st_size"]))
        return out

    def execute(self, func_addr: int, stop_addr: int, *, max_instructions: int | None = None,
                timeout_s: float | None = None, marks: tuple[int, ...] = ()) -> ExecResult:
        if not self._libs:
            raise DeviceFault("no code loaded", pc=func_addr)
        t0 = time.perf_counter()
        ctypes.CFUNCTYPE(None)(func_addr)()  # native: returns instead of reaching stop_addr; nothing is counted
        return ExecResult(wall_s=time.perf_counter() - t0)

    def reset(self) -> None:
        pass

    def close(self) -> None:
        self._libs.clear()
