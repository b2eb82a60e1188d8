"""Progress bars (tqdm) for work that can take more than a couple of seconds: spilling searches, reordering,
compression. Shown only where someone watches: on a terminal, and not under ``--json`` or ``--quiet``."""

from __future__ import annotations

import sys
from typing import Any

_shown: bool | None = None  # None: show when stderr is a terminal


def show(flag: bool | None) -> None:
    """Force progress bars on or off (``None``: only on a terminal). The CLI turns them off for --json and --quiet."""
    global _shown
    _shown = flag


class _Silent:
    def update(self, n: int = 1) -> None:
        pass

    def set_postfix_str(self, s: str) -> None:
        pass

    def __enter__(self) -> _Silent:
        return self

    def __exit__(self, *exc: Any) -> None:
        pass


def bar(desc: str, total: int | None = None) -> Any:
    """A context-managed bar with ``update(n)`` and ``set_postfix_str(s)``; a silent stand-in when not shown."""
    visible = _shown if _shown is not None else sys.stderr.isatty()
    if not visible:
        return _Silent()
    try:
        from tqdm import tqdm
    except ImportError:  # progress is a nicety: never fail a run for it
        return _Silent()
    return tqdm(total=total, desc=desc, leave=False, file=sys.stderr, dynamic_ncols=True)
