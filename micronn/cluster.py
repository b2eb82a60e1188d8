"""Ray, for work that outgrows one machine: the one place micronn starts or joins a cluster (batched simulation,
dataset evaluation and tuning all send their tasks through it)."""

from __future__ import annotations

import logging
import os
import socket
import sys
from typing import Any

from micronn.errors import MicronnError


def ray_session(ray: Any) -> Any:
    """The ``ray`` module to send tasks with, or None for in-process runs.

    ``ray``: None uses Ray only if this process already called ``ray.init()``; False never; ``"local"`` starts a
    Ray on this machine (if none is running here yet); any other string is an address for ``ray.init`` (a cluster's
    ``host:port``, ``ray://host:10001`` or ``"auto"``). A Ray micronn starts stays up for later calls
    (``ray.shutdown()`` ends it)."""
    if ray is False:
        return None
    if ray is None:
        mod = sys.modules.get("ray")
        return mod if mod is not None and getattr(mod, "is_initialized", lambda: False)() else None
    if not isinstance(ray, str) or not ray:
        raise MicronnError(f"ray is an address, 'local', None or False, got {ray!r}")
    running = sys.modules.get("ray")
    if running is None or not running.is_initialized():
        _reachable(ray)  # before importing Ray, so an unreachable address reads the same with or without it
    try:
        import ray as mod
    except ImportError as e:
        raise MicronnError("running on Ray needs the ray package: pip install 'micronn[eval]'") from e
    if not mod.is_initialized():
        try:
            mod.init(address=None if ray == "local" else ray, include_dashboard=False, logging_level=logging.WARNING,
                     **({"num_cpus": os.cpu_count()} if ray == "local" else {}))
        except (ConnectionError, RuntimeError, ValueError) as e:
            raise MicronnError(f"cannot reach a Ray cluster at {ray!r}: {e}") from e
    return mod


def _reachable(address: str) -> None:
    """Refuse a ``host:port`` (or ``ray://host:port``) nothing answers on at once: Ray itself retries for minutes."""
    hostport = address.removeprefix("ray://")
    host, sep, port = hostport.rpartition(":")
    if address in ("local", "auto") or not sep or not port.isdigit():
        return
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as e:
        raise MicronnError(f"cannot reach a Ray cluster at {address!r}: {e.strerror or e}") from e
