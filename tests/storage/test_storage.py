"""Storage backends for spilled tensors: same bytes back from every backend, a faithful NOR flash model with its
modeled latencies, asynchronous erase, and clear errors for missing, short or corrupted files."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from micronn.errors import MicronnError
from micronn.storage import (
    Compressed,
    FileStorage,
    FlashStorage,
    MemoryStorage,
    Storage,
    StorageError,
    Timing,
    open_storage,
)


def small_flash(**kw) -> FlashStorage:
    """A small QSPI-like device: 64 B pages, 1 KB sectors, 4 KB blocks, 32 KB."""
    args = dict(capacity=32 << 10, page=64, sector=1 << 10, block=4 << 10, program_s=1e-3, sector_erase_s=0.01,
                block_erase_s=0.02, read_bps=1e6, read_setup_s=1e-6)
    return FlashStorage(**{**args, **kw})


BACKENDS = {
    "memory": MemoryStorage,
    "file": lambda: FileStorage(chunk=100),
    "flash": small_flash,
    "flash_ecc": lambda: small_flash(page=32, program_once=True),
    "flash_async": lambda: small_flash(async_erase=True),
    "stm32h7": lambda: FlashStorage.preset("stm32h7"),
    "compressed_flash": lambda: Compressed(small_flash(), chunk=256),
}


@pytest.fixture(params=list(BACKENDS))
def storage(request: pytest.FixtureRequest):
    with BACKENDS[request.param]() as s:
        yield s


def data(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.where(rng.random(n) < 0.5, 7, rng.integers(0, 256, n)).astype(np.uint8)  # compressible, not trivial


def test_round_trip_ranges_replace_and_drop(storage: Storage) -> None:
    a, b = data(5000), data(1234, seed=1)
    storage.put(1, a)
    storage.put(2, b.astype(np.int8))  # any dtype: its bytes are stored
    for off, n in [(0, 5000), (0, 1), (4999, 1), (1000, 3000), (123, 0), (1023, 2)]:
        out = np.zeros(n, np.uint8)
        storage.get(1, off, out)
        assert out.tobytes() == a[off:off + n].tobytes()
    out = bytearray(1234)
    storage.get(2, 0, memoryview(out))
    assert bytes(out) == b.tobytes()
    storage.put(1, b[:10])  # replace with a smaller object
    out = np.zeros(10, np.uint8)
    storage.get(1, 0, out)
    assert (out == b[:10]).all()
    storage.drop(1)
    storage.drop(1)  # idempotent
    with pytest.raises(StorageError, match="not stored"):
        storage.get(1, 0, out)
    storage.put(3, b"")
    storage.get(3, 0, np.zeros(0, np.uint8))
    s = storage.stats
    assert (s.puts, s.gets) == (4, 9) and s.raw_bytes == 5000 + 1234 + 10


def test_misuse_is_a_clear_error(storage: Storage) -> None:
    storage.put(1, data(100))
    for key, off, out, msg in [(1, 90, np.zeros(20, np.uint8), "outside its 100 bytes"),
                               (1, -1, np.zeros(2, np.uint8), "non-negative"),
                               (9, 0, np.zeros(1, np.uint8), "object 9 is not stored"),
                               (-3, 0, np.zeros(1, np.uint8), "keys are integers"),
                               (1, 0, np.zeros(4, np.uint8)[::2], "C-contiguous"),
                               (1, 0, b"read-only", "writable")]:
        with pytest.raises(StorageError, match=msg):
            storage.get(key, off, out)
    with pytest.raises(StorageError, match="cannot store"):
        storage.put(1, 12345)
    storage.close()
    with pytest.raises(MicronnError, match="closed"):
        storage.put(1, b"x")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["put", "get", "drop"]), st.integers(0, 3), st.integers(0, 3000),
                          st.integers(0, 3000)), max_size=25))
def test_every_backend_matches_a_dict(ops: list[tuple[str, int, int, int]]) -> None:
    """Random sequences of puts, gets and drops give what a plain dict gives (flash sectors get reused)."""
    for make in BACKENDS.values():
        ref: dict[int, bytes] = {}
        with make() as s:
            for i, (op, key, a, b) in enumerate(ops):
                if op == "put":
                    ref[key] = data(a, seed=i).tobytes()
                    s.put(key, ref[key])
                elif op == "drop":
                    ref.pop(key, None)
                    s.drop(key)
                elif key in ref:
                    off = min(a, len(ref[key]))
                    n = min(b, len(ref[key]) - off)
                    out = np.zeros(n, np.uint8)
                    s.get(key, off, out)
                    assert out.tobytes() == ref[key][off:off + n]


def test_timing_formulas() -> None:
    t = Timing(read_setup_s=1e-6, read_bps=1e6, write_setup_s=0.0, write_bps=2e6, page=256, page_s=4e-4, sector=4096,
               sector_s=0.045, block=65536, block_s=0.15)
    assert t.read_s(0) == 0.0 and t.read_s(1000) == pytest.approx(1e-6 + 1e-3)
    assert t.write_s(257) == pytest.approx(2 * 4e-4 + 257 / 2e6)
    assert t.erase_s(65536 + 4096 * 3) == pytest.approx(0.15 + 3 * 0.045)
    assert Timing().write_s(10**6) == 0.0


# -- the NOR flash model -------------------------------------------------------------------------------------------
def test_flash_device_rules() -> None:
    f = small_flash()
    assert (f.mem == 0xFF).all()
    f.program(0, b"\x0f" * 64)
    with pytest.raises(StorageError, match="not erased"):
        f.program(0, b"\x0f")  # NOR only clears bits: writing over programmed bytes is a driver bug
    with pytest.raises(StorageError, match="crosses a 64-byte page boundary"):
        f.program(100, b"\x00" * 40)
    f.program(64, b"\x00" * 10)
    f.program(74, b"\x00" * 54)  # partial page programs of erased bytes are fine on plain NOR
    with pytest.raises(StorageError, match="not sector-aligned"):
        f.erase(512, 1024)
    with pytest.raises(StorageError, match="outside"):
        f.read(32 << 10, np.zeros(1, np.uint8))
    assert f.erase(0, 1024) == pytest.approx(0.01)
    assert (f.mem[:1024] == 0xFF).all() and f.wear[0] == 1
    f.program(0, b"\xaa")
    ecc = small_flash(page=32, program_once=True)
    ecc.program(0, b"\x01")
    with pytest.raises(StorageError, match="ECC flash allows one program per erase"):
        ecc.program(1, b"\x01")  # same 32-byte flash word, even though byte 1 is still erased
    with pytest.raises(StorageError, match="bad flash geometry"):
        FlashStorage(capacity=1000, page=64, sector=1024)
    with pytest.raises(StorageError, match="unknown flash preset"):
        FlashStorage.preset("eeprom")


def test_flash_modeled_latency_and_block_erase() -> None:
    """A put programs page by page; a sync drop erases its sectors inline, aligned 4 KB blocks in one command."""
    f = small_flash()
    n = 5 * 1024 + 100  # 6 sectors: sectors 0-3 are one aligned block, then 4 and 5
    f.put(0, data(n))
    pages = math.ceil(n / 64)
    assert f.stats.modeled_s == pytest.approx(pages * 1e-3)
    out = np.zeros(n, np.uint8)
    f.get(0, 0, out)  # adjacent sectors read as one command
    assert f.stats.modeled_s == pytest.approx(pages * 1e-3 + 1e-6 + n / 1e6)
    before = f.stats.modeled_s
    f.drop(0)
    assert f.stats.erases == 3 and f.stats.modeled_s - before == pytest.approx(0.02 + 2 * 0.01)
    assert (f.mem == 0xFF).all() and list(f.wear[:7]) == [1] * 6 + [0]


def test_flash_full_and_allocation() -> None:
    f = small_flash(capacity=4 << 10, block=0)
    f.put(0, data(3000))  # 3 sectors
    with pytest.raises(StorageError, match="flash full: object 1 needs 2 sectors of 1024 bytes, 1 of 4 are free"):
        f.put(1, data(2000))
    f.put(1, data(1000, 1))  # round robin: sector 3
    f.drop(0)
    f.put(2, data(2048, 2))  # the erased sectors are reused
    out = np.zeros(1000, np.uint8)
    f.get(1, 0, out)
    assert (out == data(1000, 1)).all() and f.used.sum() == 3


def test_async_erase_hides_erase_time_only_when_it_can() -> None:
    """The second core erases dropped sectors; a put waits only for the part of an erase not yet done."""
    sync, fast = small_flash(capacity=2 << 10, block=0), small_flash(capacity=2 << 10, block=0, async_erase=True)
    for f in (sync, fast):
        f.put(0, data(2048))
        f.drop(0)
    assert sync.stats.modeled_s - 2048 / 64 * 1e-3 == pytest.approx(0.02)  # erases on the critical path
    assert fast.stats.modeled_s == pytest.approx(2048 / 64 * 1e-3)  # drop returned at once
    t0 = fast.stats.modeled_s
    fast.advance(0.005)  # 5 ms of compute: the 20 ms erase of both sectors is a quarter done
    fast.put(1, data(2048, 1))  # needs both sectors: waits the remaining 15 ms, then programs
    assert fast.stats.modeled_s - t0 == pytest.approx(0.015 + 32e-3)
    fast.drop(1)
    fast.advance(1.0)  # long enough: nothing left to wait for
    t0 = fast.stats.modeled_s
    fast.put(2, data(2048, 2))
    assert fast.stats.modeled_s - t0 == pytest.approx(32e-3)
    out = np.zeros(2048, np.uint8)
    fast.get(2, 0, out)
    assert (out == data(2048, 2)).all() and fast.erase_busy_s == pytest.approx(0.04)
    fast.wait_idle()
    assert fast.stats.erases == 4 and list(fast.wear[:2]) == [2, 2]
    sync.close()
    fast.close()


def test_async_erase_uses_spare_sectors_without_waiting() -> None:
    """With room to spare, puts go to already-erased sectors while freed ones are erased in the background."""
    f = FlashStorage.preset("stm32h7", async_erase=True)  # 4 sectors of 128 KB, 1.1 s erase each
    x = data(76_800)
    waits = []
    for k in range(6):  # one spill per inference: put, then drop at the end of its cold range
        t0 = f.stats.modeled_s
        f.put(k, x)
        out = np.zeros(x.size, np.uint8)
        f.get(k, 0, out)
        assert (out == x).all()
        f.drop(k)
        waits.append(f.stats.modeled_s - t0)
        f.advance(1.19)  # the rest of the inference (the paper's 1190 ms model) runs while core 2 erases
    program, read = 76_800 / 32 * 130e-6, 76_800 / 200e6  # flash words programmed; reading it back
    assert waits == pytest.approx([program + read] * 6)  # never waits for a 1.1 s erase
    assert f.erase_busy_s == pytest.approx(6 * 1.1)
    f.close()
    sync = FlashStorage.preset("stm32h7")
    sync.put(0, x)
    sync.drop(0)
    assert sync.stats.modeled_s == pytest.approx(program + 1.1)


def test_presets_geometry() -> None:
    h7, q = FlashStorage.preset("stm32h7"), FlashStorage.preset("qspi", capacity=1 << 20)
    assert (h7.sector, h7.page, h7.program_once) == (128 << 10, 32, True)
    assert (q.sector, q.block, q.page, q.capacity) == (4096, 65536, 256, 1 << 20)
    assert q.timing.erase_s(65536) < 16 * q.timing.erase_s(4096)
    q.put(0, data(65536))
    q.drop(0)
    assert q.stats.erases == 1  # one 64 KB block erase
    for k in range(3):  # 76,800 B = 19 sectors, each time starting on a block: one block erase + 3 sector erases
        q.put(k, data(76_800))
        t0 = q.stats.modeled_s
        q.drop(k)
        assert q.stats.modeled_s - t0 == pytest.approx(0.150 + 3 * 0.045)


# -- files ---------------------------------------------------------------------------------------------------------
def test_file_storage_errors(tmp_path) -> None:
    path = tmp_path / "spill.bin"
    f = FileStorage(path, chunk=64, fsync=True)
    f.put(1, data(1000))
    f.put(2, data(500, 1))
    raw = bytearray(path.read_bytes())
    raw[10] ^= 1  # corrupt chunk 0 of object 1
    path.write_bytes(raw)
    out = np.zeros(100, np.uint8)
    f.get(1, 640, out)  # chunks 10-11 are intact: per-chunk CRCs keep range reads cheap and precise
    assert (out == data(1000)[640:740]).all()
    with pytest.raises(StorageError, match="corrupted: chunk 0 of object 1 fails its CRC32"):
        f.get(1, 0, out)
    path.write_bytes(raw[:1200])  # object 2 lives at [1000, 1500)
    with pytest.raises(StorageError, match="is short"):
        f.get(2, 150, out)
    path.unlink()
    with pytest.raises(StorageError, match="missing"):
        f.get(2, 0, out)
    with pytest.raises(StorageError, match="cannot create"):
        FileStorage(tmp_path)


def test_file_storage_reuses_gaps_and_cleans_up(tmp_path) -> None:
    f = FileStorage(tmp_path / "s.bin")
    f.put(1, data(1000))
    f.put(2, data(1000, 1))
    f.drop(1)
    f.put(3, data(600, 2))  # first fit: the hole left by object 1
    assert f._objects[3][0] == 0 and (tmp_path / "s.bin").stat().st_size == 2000
    tmp = FileStorage()
    tmp.put(0, b"abc")
    assert tmp.path.exists()
    tmp.close()
    assert not tmp.path.exists()


def test_open_storage() -> None:
    for kind, cls in [("memory", MemoryStorage), ("flash", FlashStorage), ("qspi", FlashStorage),
                      ("file", FileStorage)]:
        with open_storage(kind) as s:
            assert type(s) is cls
    with open_storage("qspi", compress=True, chunk=512, capacity=1 << 20) as s:
        assert isinstance(s, Compressed) and s.chunk == 512 and s.inner.name == "qspi"
    assert open_storage("flash").name == "stm32h7"
    with pytest.raises(StorageError, match="unknown storage kind"):
        open_storage("tape")
