"""The tensor arena: one fixed buffer, TFLM's two-stack layout.

    [ head: planned non-persistent buffers | free | tail: persistent data ]
    0                                   head      size - tail           size

The head is laid out by a memory planner after every kernel has been prepared; the tail grows
down from the top during prepare (variable tensors, per-channel quantization parameters,
lookup tables). Nothing is allocated after ``allocate_tensors()``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from micronn.errors import MicronnError
from micronn.planners import align


@dataclass
class TailEntry:
    what: str  # e.g. "variable t12" or "op 3 (CONV_2D) persistent"
    offset: int  # from the start of the arena
    size: int


@dataclass
class Arena:
    """A byte buffer with a persistent tail allocator. ``buf`` is None while only measuring."""

    buf: np.ndarray | None
    tail_used: int = 0
    tail: list[TailEntry] = field(default_factory=list)
    tail_base: int = 0  # bytes at the top already owned by other tenants of a shared arena

    @classmethod
    def of(cls, memory: int | bytearray | memoryview | np.ndarray | None) -> Arena:
        if memory is None:
            return cls(None)
        if isinstance(memory, int):
            try:
                return cls(np.zeros(memory, np.uint8))
            except (MemoryError, ValueError) as e:  # more than the address space or the machine can give
                raise MicronnError(f"cannot allocate an arena of {memory:,} bytes: {e}") from e
        try:
            buf = np.frombuffer(memory, np.uint8)
        except (TypeError, ValueError) as e:
            raise MicronnError(f"an arena must be a writable, contiguous buffer of bytes, got {type(memory).__name__}: "
                               f"{e}") from e
        if not buf.flags.writeable:
            raise MicronnError(f"an arena must be writable, got a read-only {type(memory).__name__}")
        return cls(buf)

    @property
    def size(self) -> int:
        return 0 if self.buf is None else len(self.buf)

    def persistent(self, nbytes: int, what: str) -> np.ndarray | None:
        """Take ``nbytes`` from the tail; None if the arena is only measuring or is too small."""
        self.tail_used += align(nbytes)
        offset = self.size - self.tail_base - self.tail_used
        self.tail.append(TailEntry(what, offset, nbytes))
        if self.buf is None or offset < 0:
            return None
        return self.buf[offset:offset + nbytes]

    def view(self, offset: int, nbytes: int, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
        return self.buf[offset:offset + nbytes].view(dtype).reshape(shape)
