"""What every memory planner shares: buffer requests with lifetimes, plans, and the live-set lower bound.

Lifetimes follow TFLM's rules so that plans are comparable with the real thing: time 0 is
the start of the subgraph and operator ``i`` runs at time ``i + 1``; subgraph inputs live from
time 0, outputs until the last operator, scratch buffers only during their operator. Every size
is rounded up to TFLM's 16-byte buffer alignment.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from micronn.errors import ModelError
from micronn.ir import Model, Subgraph

ALIGN = 16


def align(n: int, a: int = ALIGN) -> int:
    return (n + a - 1) // a * a


@dataclass
class Request:
    """One buffer the arena head must hold from time ``first`` to ``last`` inclusive."""

    size: int  # aligned bytes
    first: int
    last: int
    tensor: int | None = None  # tensor index, or None for a scratch buffer
    scratch: tuple[int, int] | None = None  # (operator index, scratch id)
    offline: int | None = None  # offset fixed by an offline plan

    @property
    def label(self) -> str:
        return f"t{self.tensor}" if self.tensor is not None else f"scratch{self.scratch}"

    def overlaps(self, other: Request) -> bool:
        return self.first <= other.last and other.first <= self.last


@dataclass
class Plan:
    """Offsets for a list of requests, aligned with it."""

    planner: str
    requests: list[Request]
    offsets: list[int]
    notes: dict = field(default_factory=dict)

    @property
    def head(self) -> int:
        return max((o + r.size for o, r in zip(self.offsets, self.requests)), default=0)

    def check(self) -> None:
        """Raise AssertionError if two simultaneously live buffers overlap in memory."""
        rs = sorted(zip(self.offsets, self.requests), key=lambda p: p[0])
        for i, (oa, a) in enumerate(rs):
            for ob, b in rs[i + 1:]:
                if ob >= oa + a.size:
                    break
                if a.size and b.size and a.overlaps(b):
                    raise AssertionError(f"{a.label} [{oa},{oa + a.size}) and {b.label} [{ob},{ob + b.size}) collide")


class Planner:
    """A memory planner: given requests, return one offset per request."""

    name = "base"

    def plan(self, requests: list[Request]) -> Plan:  # pragma: no cover
        raise NotImplementedError


def tensor_requests(sg: Subgraph, scratch: dict[int, list[int]] | None = None,
                    offline: list[int] | None = None) -> list[Request]:
    """Requests in TFLM's order: every tensor needing arena memory, then scratch buffers by operator.

    ``scratch`` maps operator index to the byte sizes it requested; ``offline`` is an
    ``OfflineMemoryAllocation`` offset per tensor (-1: plan online).
    """
    n = len(sg.tensors)
    first = [-1] * n
    last = [-1] * n

    def created(t: int, time: int) -> None:
        if first[t] == -1:
            first[t] = time

    def used(t: int, time: int) -> None:
        if last[t] == -1 or last[t] < time:
            last[t] = time

    for t in sg.inputs:
        created(t, 0)
        used(t, 0)
    for op in sg.operators:
        time = op.index + 1
        for t in op.outputs:
            created(t, time)
        for t in op.inputs:
            if t >= 0:
                used(t, time)
        for t in op.outputs:
            used(t, time)
    end = len(sg.operators)
    for t in sg.outputs:
        created(t, end)
        used(t, end)

    reqs = []
    for t in sg.tensors:
        if t.data is not None or t.is_variable or t.nbytes == 0 or first[t.index] == -1:
            continue
        off = offline[t.index] if offline is not None and offline[t.index] >= 0 else None
        reqs.append(Request(align(t.nbytes), first[t.index], last[t.index], tensor=t.index, offline=off))
    for op_index, sizes in sorted((scratch or {}).items()):
        for sid, nbytes in enumerate(sizes):
            reqs.append(Request(align(nbytes), op_index + 1, op_index + 1, scratch=(op_index, sid)))
    return reqs


def lower_bound(requests: list[Request]) -> int:
    """Largest sum of sizes of buffers live at the same time: no plan of this op order can do better."""
    events: dict[int, int] = {}
    for r in requests:
        events[r.first] = events.get(r.first, 0) + r.size
        events[r.last + 1] = events.get(r.last + 1, 0) - r.size
    best = live = 0
    for t in sorted(events):
        live += events[t]
        best = max(best, live)
    return best


OFFLINE_KEY = "OfflineMemoryAllocation"


def offline_offsets(model: Model) -> list[int] | None:
    """The main subgraph's offsets from TFLM's ``OfflineMemoryAllocation`` metadata, if the model has one.

    Layout (int32, little endian): version, subgraph count, tensor count, then one arena offset
    per tensor of all subgraphs in order, -1 meaning "plan this one online".
    """
    raw = model.metadata.get(OFFLINE_KEY)
    if raw is None:
        return None
    if len(raw) % 4 or len(raw) < 12:
        raise ModelError(f"{OFFLINE_KEY} metadata is {len(raw)} bytes, not a header of three int32")
    words = np.frombuffer(bytes(raw), "<i4")
    total = sum(len(sg.tensors) for sg in model.subgraphs)
    count = int(words[2])
    if count != total or len(words) != 3 + count:
        raise ModelError(f"{OFFLINE_KEY} metadata lists {count} offsets in {len(words) - 3} words, "
                         f"but the model has {total} tensors")
    offs = [int(v) for v in words[3:3 + len(model.main.tensors)]]
    bad = [i for i, v in enumerate(offs) if v < -1]
    if bad:
        raise ModelError(f"{OFFLINE_KEY} metadata gives tensor {bad[0]} the offset {offs[bad[0]]}")
    return offs
