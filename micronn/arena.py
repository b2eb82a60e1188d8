"""The tensor arena: one fixed buffer, TFLM's two-stack layout.

    [ head: planned non-persistent buffers | free | tail: persistent data ]
    0                                   head      size - tail           size

The head is laid out by a memory planner after every kernel has been prepared; the tail grows
down from the top during prepare (variable tensors, per-channel quantization parameters,
lookup tables). Nothing is allocated after ``allocate_tensors()``.

Read-only tail data computed from the model's constants (per-channel multipliers and shifts) may be asked for
with a content ``key``: an array whose bytes are already in the tail then reuses that copy instead of taking
new bytes, as an embedded runtime can do because nothing ever writes it. A patched model's stripes repeat each
layer, and with it these arrays, so they share one copy. ``tail_shared`` counts the bytes saved so that
figures of TFLM (which keeps one copy per operator) can still be computed.
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
    tail_shared: int = 0  # aligned bytes that reused an identical read-only copy instead of taking their own
    reused: list[TailEntry] = field(default_factory=list)  # who reused which copy (offset of the copy)
    _copies: dict[bytes, TailEntry] = field(default_factory=dict, repr=False)

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

    def persistent(self, nbytes: int, what: str, key: bytes | None = None) -> np.ndarray | None:
        """Take ``nbytes`` from the tail; None if the arena is only measuring or is too small.

        With a ``key`` (the bytes of read-only data), an earlier entry taken with the same key is handed out again
        instead: the caller must never write the returned view (the first taker fills it)."""
        if key is not None and key in self._copies:
            first = self._copies[key]
            self.tail_shared += align(nbytes)
            self.reused.append(TailEntry(what, first.offset, nbytes))
            if self.buf is None or first.offset < 0:
                return None
            return self.buf[first.offset:first.offset + nbytes]
        self.tail_used += align(nbytes)
        offset = self.size - self.tail_base - self.tail_used
        self.tail.append(TailEntry(what, offset, nbytes))
        if key is not None:
            self._copies[key] = self.tail[-1]
        if self.buf is None or offset < 0:
            return None
        return self.buf[offset:offset + nbytes]

    def view(self, offset: int, nbytes: int, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
        return self.buf[offset:offset + nbytes].view(dtype).reshape(shape)
