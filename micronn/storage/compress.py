"""Dynamic tensor compression (TinySeg §5.1): spill fewer bytes by storing the most frequent byte once.

Quantized activations are dominated by one value (the ReLU floor, i.e. the output zero point), so a tensor is kept as
that representative value, a bitmap with one bit per element (set where the element is *not* the representative;
the last byte's unused bits are zero) and the other values in order:

    [rep: 1 byte][bitmap: ceil(n / 8) bytes, little bit order][others: popcount(bitmap) bytes]

``Compressed`` applies it per fixed-size chunk with an index held in RAM, so a range read decodes only the chunks it
covers; a chunk that would not shrink is kept raw, and every chunk carries a CRC32 of its raw bytes, so a corrupted
blob is a ``StorageError`` whatever the backend underneath.
"""

from __future__ import annotations

import zlib

import numpy as np

from micronn.storage.base import Buffer, Storage, StorageError, as_bytes, check_range


def compress(data: Buffer) -> bytes:
    """Encode ``data`` (any bytes) as representative value, bitmap and other values."""
    a = np.frombuffer(as_bytes(data), np.uint8)
    rep = int(np.bincount(a, minlength=256).argmax()) if a.size else 0
    other = a != rep
    return bytes([rep]) + np.packbits(other, bitorder="little").tobytes() + a[other].tobytes()


def _decode(blob: np.ndarray, n: int) -> np.ndarray:
    nb = (n + 7) // 8
    if blob.size < 1 + nb:
        raise StorageError(f"compressed tensor truncated: {blob.size} bytes cannot hold the value and "
                           f"{nb}-byte bitmap of {n} elements")
    bits = np.unpackbits(blob[1:1 + nb], bitorder="little")
    if bits[n:].any():
        raise StorageError("compressed tensor corrupted: bitmap bits set past the last element")
    mask = bits[:n].view(bool)
    if blob.size != 1 + nb + (k := int(np.count_nonzero(mask))):
        raise StorageError(f"compressed tensor corrupted: bitmap marks {k} other values, the blob holds "
                           f"{blob.size - 1 - nb}")
    out = np.full(n, blob[0], np.uint8)
    out[mask] = blob[1 + nb:]
    return out


def decompress(blob: Buffer, n: int) -> bytes:
    """Decode ``n`` bytes from a ``compress`` blob; a truncated or inconsistent blob raises ``StorageError``."""
    if n < 0:
        raise StorageError(f"decompressed length must be non-negative, got {n}")
    return _decode(np.frombuffer(as_bytes(blob), np.uint8), n).tobytes()


class Compressed(Storage):
    """Any storage behind the §5.1 codec, applied per ``chunk`` bytes. ``stats.raw_bytes / stats.stored_bytes`` is
    the ratio achieved; the device-side figures (bytes written/read, erases, modeled time) are the inner storage's.
    The last decoded chunk is cached, so a row-by-row reader decodes each chunk once."""

    def __init__(self, inner: Storage, chunk: int = 4096):
        if chunk <= 0:
            raise StorageError(f"chunk must be positive, got {chunk}")
        super().__init__(inner.timing)
        self.inner, self.chunk = inner, chunk
        self._index: dict[int, tuple[int, np.ndarray, np.ndarray, np.ndarray]] = {}  # size, starts, raw?, crc32s
        self._cache: tuple[int, int, np.ndarray] | None = None  # (key, chunk, decoded bytes)
        self._stored = 0

    def _put(self, key: int, data: memoryview) -> float:
        self._drop(key)
        n, parts, raw, crcs = data.nbytes, [], [], []
        for i in range(0, n, self.chunk):
            piece = data[i:i + self.chunk]
            c = compress(piece)
            raw.append(len(c) >= len(piece))
            parts.append(bytes(piece) if raw[-1] else c)
            crcs.append(zlib.crc32(piece))
        blob = b"".join(parts)
        self.inner.put(key, blob)
        starts = np.cumsum([0] + [len(p) for p in parts], dtype=np.int64)
        self._index[key] = (n, starts, np.array(raw, bool), np.array(crcs, np.uint32))
        self._stored = len(blob)
        return 0.0

    def _count_put(self, n: int) -> None:
        self.stats.puts, self.stats.raw_bytes = self.stats.puts + 1, self.stats.raw_bytes + n
        self.stats.stored_bytes += self._stored
        self._sync()

    def _get(self, key: int, offset: int, out: np.ndarray) -> float:
        n, starts, raw, crcs = self._index.get(key, (None, None, None, None))
        check_range(key, n, offset, out.size)
        if out.size == 0:
            return 0.0
        c0, c1 = offset // self.chunk, (offset + out.size - 1) // self.chunk
        first = c0 + (self._cache is not None and self._cache[:2] == (key, c0))  # reuse the cached chunk
        stored = np.empty(int(starts[c1 + 1] - starts[first]), np.uint8)
        self.inner.get(key, int(starts[first]), stored)
        for c in range(c0, c1 + 1):
            if c < first:
                chunk = self._cache[2]
            else:
                part = stored[starts[c] - starts[first]:starts[c + 1] - starts[first]]
                size = min(self.chunk, n - c * self.chunk)
                chunk = part if raw[c] else _decode(part, size)
                if chunk.size != size or zlib.crc32(chunk) != int(crcs[c]):
                    raise StorageError(f"compressed chunk {c} of object {key} fails its CRC32 (corrupted in storage)")
                self._cache = (key, c, chunk)
            lo, hi = max(offset, c * self.chunk), min(offset + out.size, (c + 1) * self.chunk)
            out[lo - offset:hi - offset] = chunk[lo - c * self.chunk:hi - c * self.chunk]
        return 0.0

    def _drop(self, key: int) -> float:
        if self._index.pop(key, None) is not None:
            self.inner.drop(key)
        if self._cache is not None and self._cache[0] == key:
            self._cache = None
        self._sync()
        return 0.0

    def get(self, key: int, offset: int, out: np.ndarray | memoryview) -> None:
        super().get(key, offset, out)
        self._sync()

    def _sync(self) -> None:
        """The device-side figures are the inner storage's."""
        s, i = self.stats, self.inner.stats
        s.bytes_written, s.bytes_read, s.erases, s.modeled_s = i.bytes_written, i.bytes_read, i.erases, i.modeled_s
        self.now = self.inner.now

    def advance(self, seconds: float) -> None:
        self.inner.advance(seconds)
        self.now = self.inner.now

    def close(self) -> None:
        if not self.closed:
            self.inner.close()
        super().close()
