"""Where spilled tensors live between a Spill and its Fetch (TinySeg §5), below the interpreter so that its
``storage=`` needs no feature package: ``base.py`` (the interface, host RAM, file, NOR flash), ``compress.py``
(§5.1's codec as a wrapper), ``remote.py`` (a TCP storage host and its client), and ``open_storage`` by name."""

from __future__ import annotations

from typing import Any

from micronn.storage.base import (
    Buffer,
    FileStorage,
    FlashStorage,
    MemoryStorage,
    Storage,
    StorageError,
    StorageStats,
    Timing,
    as_bytes,
    check_range,
)
from micronn.storage.compress import Compressed
from micronn.storage.remote import RemoteStorage, StorageServer


def open_storage(kind: str, compress: bool = False, **kw: Any) -> Storage:
    """A storage by name: ``memory``, ``flash``/``stm32h7`` (internal), ``qspi`` (external NOR), ``file`` or
    ``remote`` (a TCP host; without ``port``, a local host is started and owned by the client).
    ``compress=True`` wraps it in the §5.1 codec (``chunk=`` sets its chunk size)."""
    chunk = kw.pop("chunk", 4096) if compress else None
    if kind == "memory":
        st: Storage = MemoryStorage(**kw)
    elif kind in ("flash", "stm32h7", "qspi"):
        st = FlashStorage.preset("stm32h7" if kind == "flash" else kind, **kw)
    elif kind == "file":
        st = FileStorage(**kw)
    elif kind == "remote":
        st = RemoteStorage.local(**kw) if "port" not in kw else RemoteStorage(**kw)
    else:
        raise StorageError(f"unknown storage kind {kind!r}: use memory, flash, stm32h7, qspi, file or remote")
    if compress:
        st = Compressed(st, chunk=chunk)
    return st


__all__ = ["Buffer", "Compressed", "FileStorage", "FlashStorage", "MemoryStorage", "RemoteStorage", "Storage",
           "StorageError", "StorageServer", "StorageStats", "Timing", "as_bytes", "check_range", "open_storage"]
