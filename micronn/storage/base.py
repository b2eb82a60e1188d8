"""Where spilled tensors live between a Spill and its Fetch (TinySeg §5): one interface, several backends.

A spilled tensor is an object under an integer key: ``put`` stores it whole, ``get`` reads any byte range back (a
FetchConv2D reads row by row, so a range read never needs RAM for the whole object), ``drop`` says it is dead. Every
backend also keeps a *modeled* clock of the device time the main core spends waiting on it (``stats.modeled_s``), so
the latency model can price spilling per storage option without sleeping. Backends: ``MemoryStorage`` (host RAM),
``FileStorage`` (one file, per-chunk CRC32), ``FlashStorage`` (a NOR flash model with erase-before-write and optional
asynchronous erase on a second core), ``RemoteStorage`` (``remote.py``, TCP) and the ``Compressed`` wrapper
(``compress.py``, §5.1). Anything that cannot give the exact bytes back raises ``StorageError``.
"""

from __future__ import annotations

import math
import os
import queue
import tempfile
import threading
import zlib
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from micronn.errors import MicronnError

Buffer = bytes | bytearray | memoryview | np.ndarray


class StorageError(MicronnError):
    """Spilled data cannot be stored or given back intact: dead host, timeout, checksum mismatch, read of unwritten
    data, full device, or a driver that misuses the flash."""


@dataclass
class Timing:
    """Modeled device-side latency of one operation, in seconds (datasheet-style parameters).

    A read costs a setup plus bytes over bandwidth; a write costs a setup, the transfer, and ``page_s`` per program
    unit (page or flash word) it touches; an erase costs ``sector_s`` per smallest erase unit, or ``block_s`` per
    aligned larger block when the device has one (QSPI NOR erases 64 KB far faster than sixteen 4 KB sectors).
    """

    read_setup_s: float = 0.0
    read_bps: float = math.inf
    write_setup_s: float = 0.0
    write_bps: float = math.inf
    page: int = 1
    page_s: float = 0.0
    sector: int = 1
    sector_s: float = 0.0
    block: int = 0
    block_s: float = 0.0

    def read_s(self, nbytes: int) -> float:
        return self.read_setup_s + nbytes / self.read_bps if nbytes else 0.0

    def write_s(self, nbytes: int) -> float:
        """One write of ``nbytes`` starting on a page boundary."""
        return self.write_setup_s + nbytes / self.write_bps + -(-nbytes // self.page) * self.page_s if nbytes else 0.0

    def erase_s(self, nbytes: int) -> float:
        """Erasing ``nbytes`` starting on a block boundary (whole blocks first, then sectors)."""
        blocks, rest = divmod(nbytes, self.block) if self.block else (0, nbytes)
        return blocks * self.block_s + -(-rest // self.sector) * self.sector_s


@dataclass
class StorageStats:
    puts: int = 0
    gets: int = 0
    bytes_written: int = 0  # bytes that reached the device (after compression)
    bytes_read: int = 0
    erases: int = 0  # erase commands issued
    modeled_s: float = 0.0  # modeled device time the main core spent waiting on storage (async erase hides erases)
    raw_bytes: int = 0  # bytes handed to put
    stored_bytes: int = 0  # bytes kept for them: raw_bytes / stored_bytes is the compression ratio

    @property
    def ratio(self) -> float:
        return self.raw_bytes / self.stored_bytes if self.stored_bytes else 1.0


def as_bytes(data: Buffer) -> memoryview:
    """A flat read-only byte view of ``data`` (no copy when it is contiguous)."""
    try:
        if isinstance(data, np.ndarray):
            return memoryview(np.ascontiguousarray(data).reshape(-1).view(np.uint8))
        mv = memoryview(data)
        return mv if mv.format == "B" and mv.ndim == 1 else mv.cast("B")
    except (TypeError, ValueError) as e:
        raise StorageError(f"cannot store a {type(data).__name__}: give bytes, a memoryview or an ndarray ({e})") from e


def as_out(out: np.ndarray | memoryview | bytearray) -> np.ndarray:
    """``out`` as a flat writable uint8 array sharing its memory, so a get fills the caller's buffer in place."""
    try:
        a = out if isinstance(out, np.ndarray) else np.frombuffer(out, np.uint8)
    except (TypeError, ValueError) as e:
        raise StorageError(f"cannot read into a {type(out).__name__}: give a writable ndarray or memoryview") from e
    if not (a.flags.c_contiguous and a.flags.writeable):
        raise StorageError("get needs a writable, C-contiguous output buffer")
    return a.reshape(-1).view(np.uint8)


def check_key(key: int) -> int:
    if not isinstance(key, int | np.integer) or not 0 <= int(key) < 2**32:
        raise StorageError(f"storage keys are integers in [0, 2**32), got {key!r}")
    return int(key)


def check_range(key: int, size: int | None, offset: int, n: int) -> None:
    if size is None:
        raise StorageError(f"object {key} is not stored (never put, or dropped)")
    if offset + n > size:
        raise StorageError(f"read of bytes [{offset}, {offset + n}) of object {key} is outside its {size} bytes")


class Storage(ABC):
    """Where spilled tensors live between Spill and Fetch. Subclasses implement ``_put``/``_get``/``_drop``, each
    returning the modeled seconds the main core waits; this class validates, counts and keeps the clock."""

    timing: Timing
    stats: StorageStats

    def __init__(self, timing: Timing | None = None):
        self.timing, self.stats = timing or Timing(), StorageStats()
        self.now = 0.0  # modeled time of the main core, advanced by storage waits and by advance()
        self.closed = False

    def put(self, key: int, data: Buffer) -> None:
        """Store (or replace) object ``key``."""
        self._live()
        mv = as_bytes(data)
        self._wait(self._put(check_key(key), mv))
        self._count_put(mv.nbytes)

    def get(self, key: int, offset: int, out: np.ndarray | memoryview) -> None:
        """Fill ``out`` with bytes ``[offset, offset + nbytes(out))`` of object ``key``."""
        self._live()
        view = as_out(out)
        if not isinstance(offset, int | np.integer) or offset < 0:
            raise StorageError(f"offset must be a non-negative integer, got {offset!r}")
        self._wait(self._get(check_key(key), int(offset), view))
        self.stats.gets, self.stats.bytes_read = self.stats.gets + 1, self.stats.bytes_read + view.size

    def drop(self, key: int) -> None:
        """Object ``key`` is no longer needed (dropping an absent key is a no-op, so retries are safe)."""
        self._live()
        self._wait(self._drop(check_key(key)))

    def advance(self, seconds: float) -> None:
        """The main core computed for ``seconds``: background work (async erase) overlaps this time."""
        self.now += seconds

    def close(self) -> None:
        self.closed = True

    def __enter__(self) -> Storage:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _count_put(self, n: int) -> None:
        s = self.stats
        s.puts, s.bytes_written, s.raw_bytes, s.stored_bytes = s.puts + 1, s.bytes_written + n, s.raw_bytes + n, \
            s.stored_bytes + n

    def _live(self) -> None:
        if self.closed:
            raise StorageError(f"{type(self).__name__} is closed")

    def _wait(self, seconds: float) -> None:
        self.stats.modeled_s += seconds
        self.now += seconds

    @abstractmethod
    def _put(self, key: int, data: memoryview) -> float: ...

    @abstractmethod
    def _get(self, key: int, offset: int, out: np.ndarray) -> float: ...

    @abstractmethod
    def _drop(self, key: int) -> float: ...


class MemoryStorage(Storage):
    """Host RAM with no latency: the default, and the reference the other backends are tested against."""

    def __init__(self, timing: Timing | None = None):
        super().__init__(timing)
        self._objects: dict[int, bytes] = {}

    def _put(self, key: int, data: memoryview) -> float:
        self._objects[key] = bytes(data)
        return self.timing.write_s(data.nbytes)

    def _get(self, key: int, offset: int, out: np.ndarray) -> float:
        obj = self._objects.get(key)
        check_range(key, None if obj is None else len(obj), offset, out.size)
        out[:] = np.frombuffer(obj, np.uint8, out.size, offset)
        return self.timing.read_s(out.size)

    def _drop(self, key: int) -> float:
        self._objects.pop(key, None)
        return 0.0


class FileStorage(Storage):
    """All objects in one file, each with a CRC32 per ``chunk`` bytes kept in RAM, so a range read checks only the
    chunks it covers. The file is reopened on every operation: a file deleted, truncated or overwritten behind our
    back is reported as such, never read as data. ``path=None`` uses a temporary file removed on close."""

    def __init__(self, path: str | os.PathLike | None = None, *, chunk: int = 4096, fsync: bool = False,
                 timing: Timing | None = None):
        super().__init__(timing)
        if chunk <= 0:
            raise StorageError(f"chunk must be positive, got {chunk}")
        self.chunk, self.fsync, self.temporary = chunk, fsync, path is None
        if path is None:
            fd, path = tempfile.mkstemp(prefix="micronn-spill-", suffix=".bin")
            os.close(fd)
        self.path = Path(path)
        try:
            self.path.write_bytes(b"")
        except OSError as e:
            raise StorageError(f"cannot create spill file {self.path}: {e}") from e
        self._objects: dict[int, tuple[int, int, list[int]]] = {}  # key -> (file offset, size, chunk CRC32s)

    def _open(self, key: int):
        try:
            return open(self.path, "r+b")
        except FileNotFoundError as e:
            raise StorageError(f"spill file {self.path} is missing (deleted while object {key} was in use)") from e
        except OSError as e:
            raise StorageError(f"cannot open spill file {self.path}: {e}") from e

    def _place(self, n: int) -> int:
        """First fit among the gaps between live objects, else the end of the file."""
        pos = 0
        for off, size, _ in sorted(self._objects.values()):
            if off - pos >= n:
                return pos
            pos = max(pos, off + size)
        return pos

    def _put(self, key: int, data: memoryview) -> float:
        self._objects.pop(key, None)
        off, n = self._place(data.nbytes), data.nbytes
        with self._open(key) as f:
            try:
                f.seek(off)
                f.write(data)
                f.flush()
                if self.fsync:
                    os.fsync(f.fileno())
            except OSError as e:
                raise StorageError(f"writing object {key} to spill file {self.path} failed: {e}") from e
        self._objects[key] = (off, n, [zlib.crc32(data[i:i + self.chunk]) for i in range(0, n, self.chunk)])
        return self.timing.write_s(n)

    def _get(self, key: int, offset: int, out: np.ndarray) -> float:
        off, size, crcs = self._objects.get(key, (0, None, []))
        check_range(key, size, offset, out.size)
        if out.size == 0:
            return 0.0
        c0, c1 = offset // self.chunk, (offset + out.size - 1) // self.chunk
        lo, hi = c0 * self.chunk, min(size, (c1 + 1) * self.chunk)
        buf = bytearray(hi - lo)
        with self._open(key) as f:
            f.seek(off + lo)
            got = f.readinto(buf)
        if got != len(buf):
            raise StorageError(f"spill file {self.path} is short: object {key} needs bytes up to "
                               f"{off + hi}, the file ends at {off + lo + got}")
        for c in range(c0, c1 + 1):
            a = c * self.chunk - lo
            if zlib.crc32(memoryview(buf)[a:a + self.chunk]) != crcs[c]:
                raise StorageError(f"spill file {self.path} is corrupted: chunk {c} of object {key} "
                                   f"fails its CRC32")
        out[:] = np.frombuffer(buf, np.uint8, out.size, offset - lo)
        return self.timing.read_s(out.size)

    def _drop(self, key: int) -> float:
        self._objects.pop(key, None)
        return 0.0

    def close(self) -> None:
        if not self.closed and self.temporary:
            self.path.unlink(missing_ok=True)
        super().close()


class FlashStorage(Storage):
    """A NOR flash model and a small driver over it.

    The device (``program``, ``erase``, ``read``) behaves like NOR flash: erased bytes read 0xFF, a page program only
    clears bits and may not cross a page boundary, programming bytes that are not erased is an error (so a driver bug
    shows up as a ``StorageError``, not as silently merged bits), and with ``program_once`` (ECC flash such as the
    STM32H7's) a program unit may be programmed only once per erase. Erase works on whole sectors, or on aligned
    ``block``-sized blocks when the device has a cheaper large erase.

    The driver gives each object whole sectors (not necessarily adjacent; round robin, which also spreads wear, and
    block-aligned for objects of a block or more, which keeps their erases cheap block erases), splits
    writes at page boundaries, and on ``drop`` erases the object's sectors: inline (on the critical path) or, with
    ``async_erase=True``, on a worker thread standing in for the second core (TinySeg §5.2). The modeled clock then
    counts only the part of an erase a later put actually waits for; ``advance()`` tells it how long the main core
    computed in between. ``erase_busy_s`` totals all modeled erase time, hidden or not.
    """

    PRESETS: dict[str, dict[str, Any]] = {
        # STM32H743/H757 internal flash (the paper's Nicla Vision MCU), one bank of the spill region. Geometry: 128 KB
        # sectors, 256-bit flash words with ECC (programmable once per erase), per RM0433 / the ST community forum.
        # Times at x32 program/erase parallelism from the STM32H743 datasheet's flash table: sector erase 1.1 s typ
        # (2.2 s max, as quoted by ST on its forum); flash word program 130 us typ (our reading of the same table).
        # Reads are memory-mapped over AXI; 200 MB/s is our estimate of a memcpy out of flash, not a datasheet number.
        "stm32h7": dict(capacity=512 << 10, page=32, sector=128 << 10, program_s=130e-6, sector_erase_s=1.1,
                        read_bps=200e6, program_once=True),
        # External QSPI NOR, Winbond W25Q128JV class (16 MB like the Nicla Vision's): 256 B pages, tPP 0.4 ms typ;
        # 4 KB sector erase tSE 45 ms typ; 64 KB block erase tBE2 150 ms typ; quad I/O fast read at 133 MHz is
        # 66 MB/s raw, modeled as 50 MB/s behind an STM32H7 QUADSPI at ~100 MHz with a 1 us command/address phase.
        "qspi": dict(capacity=16 << 20, page=256, sector=4 << 10, block=64 << 10, program_s=0.4e-3,
                     sector_erase_s=45e-3, block_erase_s=150e-3, read_bps=50e6, read_setup_s=1e-6, write_bps=50e6),
    }

    def __init__(self, capacity: int = 1 << 20, page: int = 256, sector: int = 4096, *, block: int = 0,
                 program_s: float = 0.0, sector_erase_s: float = 0.0, block_erase_s: float = 0.0,
                 read_bps: float = math.inf, read_setup_s: float = 0.0, write_bps: float = math.inf,
                 program_once: bool = False, async_erase: bool = False, name: str = "flash"):
        if page <= 0 or sector <= 0 or sector % page or capacity <= 0 or capacity % sector or \
                (block and (block % sector or block < sector)):
            raise StorageError(f"bad flash geometry: capacity {capacity}, page {page}, sector {sector}, block {block} "
                               "(need page | sector | block and sector | capacity)")
        super().__init__(Timing(read_setup_s=read_setup_s, read_bps=read_bps, write_bps=write_bps, page=page,
                                page_s=program_s, sector=sector, sector_s=sector_erase_s, block=block,
                                block_s=block_erase_s))
        self.name, self.capacity, self.page, self.sector, self.block = name, capacity, page, sector, block
        self.program_once, self.async_erase = program_once, async_erase
        self.mem = np.full(capacity, 0xFF, np.uint8)
        self._programmed = np.zeros(capacity // page, bool)
        n = capacity // sector
        self.used = np.zeros(n, bool)
        self.ready_at = np.zeros(n)  # modeled time a freed sector's erase completes
        self.wear = np.zeros(n, np.int64)  # erase count per sector
        self.erase_busy_s = 0.0
        self._objects: dict[int, tuple[int, list[int]]] = {}  # key -> (size, sectors)
        self._cursor = 0
        self._core2_free_at = 0.0  # modeled time the second core finishes its queued erases
        self._lock = threading.Condition()
        self._erasing: set[int] = set()  # sectors the worker has not really erased yet
        self._worker_error: BaseException | None = None
        self._queue: queue.Queue[list[int] | None] = queue.Queue()
        self._worker = threading.Thread(target=self._work, daemon=True, name=f"{name}-erase") if async_erase else None
        if self._worker:
            self._worker.start()

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> FlashStorage:
        """``"stm32h7"`` (internal flash) or ``"qspi"`` (external NOR), with any constructor argument overridden."""
        if name not in cls.PRESETS:
            raise StorageError(f"unknown flash preset {name!r}; known: {', '.join(cls.PRESETS)}")
        return cls(**{"name": name, **cls.PRESETS[name], **overrides})

    # -- the device ---------------------------------------------------------------------------------------------
    def _span(self, addr: int, n: int, what: str) -> None:
        if addr < 0 or n < 0 or addr + n > self.capacity:
            raise StorageError(f"{self.name}: {what} of {n} bytes at {addr:#x} is outside the {self.capacity}-byte "
                               "device")

    def _program(self, addr: int, data: np.ndarray) -> float:
        """Program ``data`` at ``addr`` as the page programs of a driver splitting at page boundaries would."""
        n = data.size
        self._span(addr, n, "program")
        if n == 0:
            return 0.0
        target = self.mem[addr:addr + n]
        if bad := int(np.count_nonzero(target != 0xFF)):
            raise StorageError(f"{self.name}: program at {addr:#x} hits {bad} byte(s) that are not erased (NOR flash "
                               "only clears bits; erase the sector first)")
        pages = slice(addr // self.page, (addr + n - 1) // self.page + 1)
        if self.program_once and self._programmed[pages].any():
            raise StorageError(f"{self.name}: program at {addr:#x} reprograms a {self.page}-byte program unit "
                               "already programmed since its erase (ECC flash allows one program per erase)")
        np.bitwise_and(target, data, out=target)
        self._programmed[pages] = True
        return (pages.stop - pages.start) * (self.timing.write_setup_s + self.timing.page_s) + n / self.timing.write_bps

    def program(self, addr: int, data: Buffer) -> float:
        """One page-program command: ``data`` must lie within one page. Returns its modeled seconds."""
        a = np.frombuffer(as_bytes(data), np.uint8)
        if a.size and addr // self.page != (addr + a.size - 1) // self.page:
            raise StorageError(f"{self.name}: page program of {a.size} bytes at {addr:#x} crosses a {self.page}-byte "
                               "page boundary (the driver must split writes)")
        return self._program(addr, a)

    def _erase_plan(self, addr: int, nbytes: int) -> list[tuple[int, int, float]]:
        """The erase commands covering ``[addr, addr + nbytes)``: aligned whole blocks as block erases."""
        self._span(addr, nbytes, "erase")
        if addr % self.sector or nbytes % self.sector:
            raise StorageError(f"{self.name}: erase of {nbytes} bytes at {addr:#x} is not sector-aligned "
                               f"({self.sector}-byte sectors)")
        plan, a, end, tm = [], addr, addr + nbytes, self.timing
        while a < end:
            big = self.block and a % self.block == 0 and end - a >= self.block
            plan.append((a, self.block if big else self.sector, tm.block_s if big else tm.sector_s))
            a += plan[-1][1]
        return plan

    def erase(self, addr: int, nbytes: int) -> float:
        """Erase whole sectors (aligned ``block``s with one block erase each); returns the modeled seconds."""
        t = self._count_erase(addr, nbytes)
        self._wipe(addr, nbytes)
        return t

    def _count_erase(self, addr: int, nbytes: int) -> float:
        plan = self._erase_plan(addr, nbytes)
        t = sum(s for _, _, s in plan)
        self.stats.erases += len(plan)
        self.erase_busy_s += t
        return t

    def _wipe(self, addr: int, nbytes: int) -> None:
        """What an erase does to the cells (the worker thread runs this part for async erase)."""
        end = addr + nbytes
        with self._lock:
            self.mem[addr:end] = 0xFF
            self._programmed[addr // self.page:end // self.page] = False
            self.wear[addr // self.sector:end // self.sector] += 1

    def read(self, addr: int, out: np.ndarray) -> float:
        """Read ``out.size`` bytes at ``addr`` (one read command); returns its modeled seconds."""
        self._span(addr, out.size, "read")
        out[:] = self.mem[addr:addr + out.size]
        return self.timing.read_s(out.size)

    # -- the second core ----------------------------------------------------------------------------------------
    def _work(self) -> None:
        while (sectors := self._queue.get()) is not None:
            try:
                for run in _runs(sectors):
                    self._wipe(run[0] * self.sector, len(run) * self.sector)
            except BaseException as e:  # noqa: BLE001 - handed to the main thread at its next call
                self._worker_error = e
            with self._lock:
                self._erasing.difference_update(sectors)
                self._lock.notify_all()

    def _settle(self, sectors: list[int]) -> None:
        """Wait (really) until the worker has erased ``sectors``; the modeled wait is computed separately."""
        with self._lock:
            if not self._lock.wait_for(lambda: not self._erasing.intersection(sectors), timeout=10.0):
                raise StorageError(f"{self.name}: the erase worker did not finish within 10 s")
        if self._worker_error is not None:
            raise StorageError(f"{self.name}: background erase failed: {self._worker_error}")

    def wait_idle(self) -> None:
        """Block until every queued background erase is really done (tests, shutdown)."""
        self._settle(list(range(self.used.size)))

    # -- the driver ---------------------------------------------------------------------------------------------
    def _allocate(self, need: int, key: int) -> tuple[list[int], float]:
        """``need`` free sectors, erased ones first (round robin), then the ones whose erase ends soonest."""
        n = self.used.size
        order = [(self._cursor + i) % n for i in range(n) if not self.used[(self._cursor + i) % n]]
        ready = [s for s in order if self.ready_at[s] <= self.now]
        got = (ready + sorted((s for s in order if self.ready_at[s] > self.now), key=lambda s: self.ready_at[s]))
        if len(got) < need:
            raise StorageError(f"{self.name} full: object {key} needs {need} sectors of {self.sector} bytes, "
                               f"{len(got)} of {n} are free")
        got, spb = got[:need], self.block // self.sector
        if got:  # objects of a block or more start the next one on a block boundary: their erases stay block erases
            self._cursor = (-(-(got[-1] + 1) // spb) * spb if spb and need >= spb else got[-1] + 1) % n
        self._settle(got)
        return got, max([0.0] + [float(self.ready_at[s]) - self.now for s in got])

    def _put(self, key: int, data: memoryview) -> float:
        if key in self._objects:
            self._wait(self._drop(key))
        sectors, t = self._allocate(-(-data.nbytes // self.sector), key)
        src = np.frombuffer(data, np.uint8)
        for i, s in enumerate(sectors):
            self.used[s] = True
            t += self._program(s * self.sector, src[i * self.sector:(i + 1) * self.sector])
        self._objects[key] = (data.nbytes, sectors)
        return t

    def _get(self, key: int, offset: int, out: np.ndarray) -> float:
        size, sectors = self._objects.get(key, (None, []))
        check_range(key, size, offset, out.size)
        t, pos, prev = 0.0, 0, None
        while pos < out.size:
            i, within = divmod(offset + pos, self.sector)
            k = min(self.sector - within, out.size - pos)
            addr = sectors[i] * self.sector + within
            t += self.read(addr, out[pos:pos + k]) - (self.timing.read_setup_s if addr == prev else 0.0)
            pos, prev = pos + k, addr + k  # reading on into an adjacent sector needs no new command
        return t

    def _drop(self, key: int) -> float:
        _, sectors = self._objects.pop(key, (0, []))
        if not sectors:
            return 0.0
        self.used[sectors] = False
        if not self.async_erase:  # adjacent sectors are erased together, so aligned blocks take one block erase
            return sum(self.erase(r[0] * self.sector, len(r) * self.sector) for r in _runs(sectors))
        self._core2_free_at = max(self.now, self._core2_free_at) + sum(
            self._count_erase(r[0] * self.sector, len(r) * self.sector) for r in _runs(sectors))
        self.ready_at[sectors] = self._core2_free_at
        with self._lock:
            self._erasing.update(sectors)
        self._queue.put(list(sectors))
        return 0.0

    def close(self) -> None:
        if self._worker is not None and not self.closed:
            self._queue.put(None)
            self._worker.join(timeout=10.0)
        super().close()


def _runs(sectors: list[int]) -> list[list[int]]:
    """Sorted runs of consecutive sector numbers."""
    runs: list[list[int]] = []
    for s in sorted(sectors):
        if runs and s == runs[-1][-1] + 1:
            runs[-1].append(s)
        else:
            runs.append([s])
    return runs
