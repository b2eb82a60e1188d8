"""micronn's exceptions: every failure a user can cause ends in one of these."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager


class MicronnError(Exception):
    """Base class of every error micronn raises on purpose."""


class ModelError(MicronnError):
    """The model file is malformed, truncated, hostile or inconsistent."""


class UnsupportedError(MicronnError):
    """The model uses ops or types micronn has no kernel for.

    ``pairs`` lists every unsupported (op, dtype) pair at once, so a user sees the
    whole gap in one error instead of fixing them one by one.
    """

    def __init__(self, pairs: list[tuple[str, str]]):
        self.pairs = sorted(set(pairs))
        listed = ", ".join(f"{op} ({dt})" for op, dt in self.pairs)
        super().__init__(f"unsupported (op, dtype) pairs: {listed}")


class PrepareError(MicronnError):
    """A kernel rejected its operator at prepare time (shapes, types, options)."""


class ArenaTooSmallError(MicronnError):
    """The arena cannot hold the planned head plus the persistent tail."""

    def __init__(self, needed: int, given: int, head: int, tail: int):
        self.needed, self.given, self.head, self.tail = needed, given, head, tail
        super().__init__(
            f"arena too small: {given} bytes given, {needed} bytes needed "
            f"(head {head} planned non-persistent + tail {tail} persistent)"
        )


class InvokeError(MicronnError):
    """Invoke was called in a state where it cannot run (not allocated, bad input)."""


class OutputError(MicronnError):
    """An output file cannot be written (missing folder, no permission, full disk)."""


def check_writable(path: str | os.PathLike[str]) -> None:
    """Refuse an output path that cannot be written before the work that produces it, not after: its folder must
    exist and be writable, and the path must not be a folder."""
    p = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(p))
    if os.path.isdir(p):
        raise OutputError(f"cannot write {p!r}: it is a directory")
    if not os.path.isdir(folder):
        raise OutputError(f"cannot write {p!r}: no directory {folder!r}")
    if not os.access(folder, os.W_OK):
        raise OutputError(f"cannot write {p!r}: directory {folder!r} is not writable")


@contextmanager
def writing(path: str | os.PathLike[str]) -> Iterator[None]:
    """Turn an operating-system failure while writing ``path`` into an :class:`OutputError` naming it."""
    try:
        yield
    except OSError as e:
        raise OutputError(f"cannot write {os.fspath(path)!r}: {e.strerror or e}") from e
