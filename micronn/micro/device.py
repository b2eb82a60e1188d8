"""The low-level device interface (μTVM's LowLevelDeviceAPI): read, write and execute, nothing more.

Everything else (loading code, device memory, task queues) is built on these in ``micronn.micro.session``, so a
new way of reaching a board is one subclass of ``LowLevelDevice``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

from micronn.errors import MicronnError


class DeviceFault(MicronnError):
    """The device stopped somewhere other than the stop address: a fault, an exception, a limit or a timeout.

    ``pc`` is where it stopped (for a fault taken through the vector table, the faulting instruction),
    ``address`` the memory address at fault if known, ``registers`` the core registers.
    """

    def __init__(self, message: str, pc: int | None = None, registers: dict[str, int] | None = None,
                 address: int | None = None):
        self.pc, self.registers, self.address = pc, registers or {}, address
        where = f" at pc=0x{pc:08x}" if pc is not None else ""
        addr = f", address 0x{address:08x}" if address is not None else ""
        regs = " ".join(f"{k}=0x{v:x}" for k, v in self.registers.items())
        super().__init__(f"device fault{where}: {message}{addr}" + (f" [{regs}]" if regs else ""))


@dataclass
class Cost:
    """Executed instructions, their per-class counts and the estimated cycles (None where a backend cannot
    count, e.g. a GDB server)."""

    instructions: int | None = None
    counts: dict[str, int] = field(default_factory=dict)
    cycles: float | None = None

    def __sub__(self, other: Cost) -> Cost:
        if self.instructions is None or other.instructions is None:
            return Cost()
        keys = set(self.counts) | set(other.counts)
        return Cost(self.instructions - other.instructions,
                    {k: self.counts.get(k, 0) - other.counts.get(k, 0) for k in sorted(keys)},
                    None if self.cycles is None or other.cycles is None else self.cycles - other.cycles)


@dataclass
class ExecResult(Cost):
    """One ``execute``: its total cost, the cumulative cost at each pass over a mark address, and wall time."""

    marks: list[Cost] = field(default_factory=list)
    wall_s: float = 0.0


class LowLevelDevice(ABC):
    """Read, write and execute on a device. ``word_size`` is its pointer size in bytes."""

    word_size: int = 4

    @abstractmethod
    def read(self, addr: int, n: int) -> bytes: ...

    @abstractmethod
    def write(self, addr: int, data: bytes) -> None: ...

    @abstractmethod
    def execute(self, func_addr: int, stop_addr: int, *, max_instructions: int | None = None,
                timeout_s: float | None = None, marks: tuple[int, ...] = ()) -> ExecResult:
        """Run from ``func_addr`` (returning to ``stop_addr``) until the core reaches ``stop_addr``.

        Raises DeviceFault on a fault, after ``max_instructions`` or after ``timeout_s`` seconds; ``marks`` are
        addresses at whose every pass the cumulative cost is recorded (where the backend counts)."""

    @abstractmethod
    def reset(self) -> None:
        """Make the core runnable again after a fault (memory is kept)."""

    @abstractmethod
    def close(self) -> None:
        """Release the device (processes, sockets, emulators); idempotent."""

    def __enter__(self) -> LowLevelDevice:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
