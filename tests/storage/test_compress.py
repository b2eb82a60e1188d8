"""Dynamic tensor compression (§5.1): exact round trips for any bytes and length, corrupt blobs rejected, chunked
range reads, and the ratio on tiny_unet's real activations."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import micronn
from micronn.storage import FlashStorage, MemoryStorage, StorageError
from micronn.storage.compress import Compressed, compress, decompress

TINY_UNET = Path("/work/shared/models/tiny_unet.tflite")
if not TINY_UNET.exists():
    TINY_UNET = Path(micronn.__file__).parent / "models" / "tiny_unet.tflite"

skewed = st.lists(st.sampled_from([0, 3, 255]) | st.integers(0, 255), max_size=300).map(bytes)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300) | skewed)
def test_round_trip_any_bytes(data: bytes) -> None:
    blob = compress(data)
    assert decompress(blob, len(data)) == data
    rep = max(range(256), key=data.count) if data else 0
    others = sum(b != rep for b in data)
    assert len(blob) == 1 + (len(data) + 7) // 8 + others and blob[0] == rep  # value, bitmap, other values


def test_format_by_hand() -> None:
    blob = compress(bytes([9, 9, 1, 9, 9, 9, 9, 9, 2, 9]))  # 10 elements: not a multiple of 8
    assert blob == bytes([9, 0b00000100, 0b00000001, 1, 2])
    assert decompress(blob, 10) == bytes([9, 9, 1, 9, 9, 9, 9, 9, 2, 9])
    assert compress(b"") == b"\x00" and decompress(b"\x00", 0) == b""
    assert compress(np.array([-9, -9, 4], np.int8)) == bytes([247, 0b100, 4])


@pytest.mark.parametrize("blob, n, msg", [
    (b"", 0, "truncated"),
    (bytes([9, 0b100, 0b1, 1]), 10, "bitmap marks 2 other values, the blob holds 1"),  # one value missing
    (bytes([9, 0b100, 0b1, 1, 2, 3]), 10, "bitmap marks 2 other values, the blob holds 3"),
    (bytes([9, 0b100, 0b1]), 20, "truncated"),
    (bytes([9, 0b100, 0b101, 1, 2, 3]), 10, "bits set past the last element"),
    (bytes([9]), -1, "non-negative"),
])
def test_corrupt_blobs_are_storage_errors(blob: bytes, n: int, msg: str) -> None:
    with pytest.raises(StorageError, match=msg):
        decompress(blob, n)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 3000), st.integers(1, 700), st.data())
def test_chunked_ranges(n: int, chunk: int, draw: st.DataObject) -> None:
    rng = np.random.default_rng(n)
    x = np.where(rng.random(n) < draw.draw(st.floats(0, 1)), 200, rng.integers(0, 256, n)).astype(np.uint8)
    s = Compressed(MemoryStorage(), chunk=chunk)
    s.put(5, x)
    for _ in range(3):
        off = draw.draw(st.integers(0, n))
        k = draw.draw(st.integers(0, n - off))
        out = np.zeros(k, np.uint8)
        s.get(5, off, out)
        assert (out == x[off:off + k]).all()
    assert s.stats.stored_bytes <= n  # a chunk that would grow is kept raw
    assert s.inner.stats.bytes_written == s.stats.stored_bytes


def test_range_reads_decode_only_covered_chunks() -> None:
    x = np.zeros(64 * 1024, np.uint8)
    x[::7] = np.arange(x[::7].size) % 251
    s = Compressed(MemoryStorage(), chunk=4096)
    s.put(1, x)
    assert s.stats.ratio > 2
    row = np.zeros(640, np.uint8)
    for r in range(0, x.size, 640):  # a FetchConv2D-style reader, row by row
        n = min(640, x.size - r)
        s.get(1, r, row[:n])
        assert (row[:n] == x[r:r + n]).all()
    assert s.stats.bytes_read == s.stats.stored_bytes  # each stored chunk crossed the link exactly once
    s.get(1, 8192 + 5, row[:10])
    assert s.stats.bytes_read - s.stats.stored_bytes == s._index[1][1][3] - s._index[1][1][2]  # chunk 2 only


def test_corruption_under_the_codec_is_caught() -> None:
    inner = MemoryStorage()
    s = Compressed(inner, chunk=1000)
    x = np.full(3000, 5, np.uint8)
    x[::3] = 77
    s.put(1, x)
    stored = bytearray(inner._objects[1])
    stored[-1] ^= 0x40  # an "other" value of the last chunk: the blob stays well formed
    inner._objects[1] = bytes(stored)
    out = np.zeros(1000, np.uint8)
    s.get(1, 0, out)  # untouched chunks still read
    with pytest.raises(StorageError, match="chunk 2 of object 1 fails its CRC32"):
        s.get(1, 2000, out)
    inner._objects[1] = bytes(stored[:-5])
    with pytest.raises(StorageError):
        s.get(1, 2000, out)
    s.drop(1)
    with pytest.raises(StorageError, match="not stored"):
        s.get(1, 0, out)


def test_compression_cuts_flash_traffic() -> None:
    x = np.full(76_800, 3, np.uint8)
    x[::4] = 90
    flash = FlashStorage.preset("qspi", capacity=1 << 20)
    s = Compressed(FlashStorage.preset("qspi", capacity=1 << 20))
    flash.put(0, x)
    s.put(0, x)
    assert s.stats.bytes_written == s.stats.stored_bytes < x.size // 2
    assert s.stats.modeled_s < flash.stats.modeled_s / 2
    s.advance(0.5)
    assert s.now == s.inner.now
    s.close()
    assert s.inner.closed


def activations() -> dict[str, np.ndarray]:
    """tiny_unet's int8 activations on a real photo (person.npy, stretched to 80x120 RGB), with no memory reuse so
    every tensor survives the invoke."""
    it = micronn.Interpreter(TINY_UNET, planner="linear")
    it.allocate_tensors()
    g = np.load(Path(micronn.__file__).parent / "data" / "person.npy")
    img = g[np.linspace(0, 95, 80).astype(int)][:, np.linspace(0, 95, 120).astype(int)]
    it.set_input(np.repeat(img[None, :, :, None], 3, axis=3).astype(np.uint8), 0)
    it.invoke()
    sg = it.model.main
    return {f"{op.index}:{op.op}": it.get_tensor(op.outputs[0]) for op in sg.operators
            if sg.tensors[op.outputs[0]].dtype.itemsize == 1 and sg.tensors[op.outputs[0]].nbytes >= 1000}


def test_real_activations() -> None:
    """Convolution outputs (fused ReLU: their zero point dominates) compress; all round trip exactly."""
    acts = activations()
    s = Compressed(MemoryStorage())
    for i, (name, a) in enumerate(acts.items()):
        s.put(i, a)
        out = np.zeros(a.nbytes, np.uint8)
        s.get(i, 0, out)
        assert out.tobytes() == a.tobytes(), name
    convs = [len(compress(a)) / a.nbytes for n, a in acts.items() if n.endswith("CONV_2D")]
    assert len(convs) >= 10 and np.median(convs) < 0.8
    assert s.stats.ratio > 1.1
