"""What every memory planner shares: buffer requests with lifetimes, plans, and the live-set lower bound.

Lifetimes follow TFLM's rules so that plans are comparable with the real thing: time 0 is
the start of the subgraph and operator ``i`` runs at time ``i + 1``; subgraph inputs live from
time 0, outputs until the last operator, scratch buffers only during their operator. Every size
is rounded up to TFLM's 16-byte buffer alignment. Control flow (IF, WHILE, CALL_ONCE) puts the
subgraphs it calls on the same timeline, inside the calling operator's time span.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from micronn.errors import ModelError
from micronn.ir import Model, Subgraph, called_subgraphs

ALIGN = 16


def align(n: int, a: int = ALIGN) -> int:
    return (n + a - 1) // a * a


@dataclass(frozen=True)
class Member:
    """A tensor inside a compound request, at a fixed byte offset from the request's own offset."""

    tensor: int
    rel: int
    size: int
    first: int
    last: int


@dataclass
class Request:
    """One buffer the arena head must hold from time ``first`` to ``last`` inclusive.

    A compound request (``members`` set) is several tensors placed rigidly together because they share
    memory: an alias, an in-place op, or an output streamed over its input. Its members may overlap each
    other; planners only keep members of different requests apart.
    """

    size: int  # aligned bytes
    first: int
    last: int
    tensor: int | None = None  # tensor index, or None for a scratch buffer
    scratch: tuple[int, int] | None = None  # (operator index, scratch id)
    offline: int | None = None  # offset fixed by an offline plan
    members: tuple[Member, ...] = ()
    subgraph: int = 0  # the subgraph of ``tensor`` or of the operator asking for ``scratch``

    @property
    def label(self) -> str:
        where = f"g{self.subgraph}" if self.subgraph else ""
        if self.members:
            return "+".join(f"{where}t{m.tensor}" for m in self.members)
        return f"{where}t{self.tensor}" if self.tensor is not None else f"{where}scratch{self.scratch}"

    def overlaps(self, other: Request) -> bool:
        return self.first <= other.last and other.first <= self.last

    def segments(self) -> tuple[tuple[int, int, int, int], ...]:
        """(relative offset, size, first, last) of each part that must not collide with other requests."""
        if self.members:
            return tuple((m.rel, m.size, m.first, m.last) for m in self.members)
        return ((0, self.size, self.first, self.last),)

    def forbidden(self, other: Request, at: int) -> list[tuple[int, int]]:
        """Open intervals of offsets where this request would collide with ``other`` placed at ``at``."""
        out = []
        for pr, ps, pf, pl in self.segments():
            for qr, qs, qf, ql in other.segments():
                if pf <= ql and qf <= pl and ps and qs:
                    out.append((at + qr - pr - ps, at + qr + qs - pr))
        return out


def lowest_fit(r: Request, placed: list[tuple[int, Request]]) -> int:
    """The lowest offset >= 0 where ``r`` collides with none of the ``placed`` (offset, request) pairs."""
    cand = 0
    for lo, hi in sorted(iv for o, q in placed if q.overlaps(r) for iv in r.forbidden(q, o)):
        if lo >= cand:  # sorted by start: no later interval can contain cand either
            break
        cand = max(cand, hi)
    return cand


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

    def __repr__(self) -> str:
        return f"Plan({self.planner!r}: {len(self.requests)} buffers, head {self.head:,} B)"

    def _repr_html_(self) -> str:
        rows = "".join(f"<tr><td>{r.label}</td><td>{o:,}</td><td>{r.size:,}</td><td>{r.first}-{r.last}</td></tr>"
                       for o, r in sorted(zip(self.offsets, self.requests), key=lambda p: p[0]))
        return (f"<p>{self.planner} plan: head {self.head:,} B</p><table><tr><th>buffer</th><th>offset</th>"
                f"<th>bytes</th><th>alive</th></tr>{rows}</table>")

    def check(self) -> None:
        """Raise AssertionError if two simultaneously live buffers of different requests overlap in memory."""
        rs = sorted(zip(self.offsets, self.requests), key=lambda p: p[0])
        for i, (oa, a) in enumerate(rs):
            for ob, b in rs[i + 1:]:
                if ob >= oa + a.size:
                    break
                if a.overlaps(b) and any(lo < oa < hi for lo, hi in a.forbidden(b, ob)):
                    raise AssertionError(f"{a.label} at {oa} and {b.label} at {ob} collide")


class Planner:
    """A memory planner: given requests, return one offset per request.

    ``shares`` says whether the planner takes compound (memory-sharing) requests; baselines that
    model another system (TFLM) or no reuse at all (linear) do not.
    """

    name = "base"
    shares = True

    def plan(self, requests: list[Request]) -> Plan:  # pragma: no cover
        raise NotImplementedError


class _Timeline:
    """TFLM's allocation scopes: every operator opens one, and so does every subgraph a control-flow operator
    calls, whose operators then take the following scopes before the caller's inputs and outputs are last used.

    A tensor is created at its first mark and used until its last, so the tensors of a subgraph called from
    several operators live from the first call to the last (the wheel plans them so).
    """

    def __init__(self, subgraphs: dict[int, Subgraph], follow_calls: bool):
        self.subgraphs, self.follow_calls = subgraphs, follow_calls
        self.first = {s: [-1] * len(sg.tensors) for s, sg in subgraphs.items()}
        self.last = {s: [-1] * len(sg.tensors) for s, sg in subgraphs.items()}
        self.ops: dict[tuple[int, int], tuple[int, int]] = {}  # (subgraph, op) -> (first, last) scope
        self.scope = 0
        self.calling: list[int] = []

    def created(self, s: int, t: int) -> None:
        if self.first[s][t] == -1:
            self.first[s][t] = self.scope

    def used(self, s: int, t: int) -> None:
        self.last[s][t] = self.scope

    def mark(self, s: int) -> None:
        if s not in self.subgraphs:
            raise ModelError(f"subgraph {self.calling[-1]} calls subgraph {s}, but the model has "
                             f"{len(self.subgraphs)} subgraphs")
        if s in self.calling:
            raise ModelError(f"subgraph {s} calls itself (through subgraphs {self.calling})")
        self.calling.append(s)
        sg = self.subgraphs[s]
        for t in sg.inputs:
            self.created(s, t)
            self.used(s, t)
        for op in sg.operators:
            self.scope += 1
            for t in op.outputs:
                self.created(s, t)
            start = self.scope
            for callee in called_subgraphs(op) if self.follow_calls else []:
                if callee != -1:  # TFLM treats -1 as "no subgraph" here
                    self.scope += 1
                    self.mark(callee)
            for t in op.inputs:
                if t >= 0:
                    self.used(s, t)
            for t in op.outputs:
                self.used(s, t)
            self.ops[s, op.index] = (self.ops.get((s, op.index), (start,))[0], self.scope)
        for t in sg.outputs:
            self.created(s, t)
            self.used(s, t)
        self.calling.pop()


def op_times(model: Model) -> dict[tuple[int, int], tuple[int, int]]:
    """(subgraph, operator) -> the first and last time of the planners' timeline it spans (a control-flow operator
    spans the subgraphs it calls), for operators reached from the main subgraph."""
    life = _Timeline({sg.index: sg for sg in model.subgraphs}, True)
    life.mark(model.main.index)
    return dict(life.ops)


def tensor_requests(graph: Subgraph | Model, scratch: dict | None = None, offline: list[int] | None = None, *,
                    bound: set[tuple[int, int]] | frozenset = frozenset(), keep_unused: bool = False) -> list[Request]:
    """Requests in TFLM's order: every tensor needing arena memory, then scratch buffers by operator.

    ``graph`` is one subgraph, or a whole model whose main subgraph is walked as TFLM does, following
    IF/WHILE/CALL_ONCE into the subgraphs they call; its requests then name their ``subgraph``.
    ``scratch`` maps operator index (for a model: (subgraph, operator index)) to the byte sizes it requested;
    ``offline`` is an ``OfflineMemoryAllocation`` offset per tensor (-1: plan online; for a model, the flat
    list over the tensors of all subgraphs in order, as the metadata stores it). ``bound``
    holds the (subgraph, tensor) pairs a kernel gave memory of its own in prepare (VAR_HANDLE's output).
    Tensors (and scratch buffers) of no operator reached from the start are left out, unless
    ``keep_unused``: TFLM plans them too, alive at time -1 only, so they overlap each other and nothing else.
    """
    if isinstance(graph, Model):
        subgraphs = {sg.index: sg for sg in graph.subgraphs}
        start, follow = graph.main.index, True
        asked = dict(scratch or {})
    else:
        subgraphs = {graph.index: graph}
        start, follow = graph.index, False
        asked = {(graph.index, k): v for k, v in (scratch or {}).items()}
    life = _Timeline(subgraphs, follow)
    life.mark(start)

    reqs = []
    base = 0  # where the subgraph's tensors start in the flat offline list
    for s, sg in subgraphs.items():
        first, last = life.first[s], life.last[s]
        for t in sg.tensors:
            if t.data is not None or t.is_variable or t.nbytes == 0 or (s, t.index) in bound:
                continue
            if first[t.index] == -1 and not keep_unused:
                continue
            off = offline[base + t.index] if offline is not None and offline[base + t.index] >= 0 else None
            reqs.append(Request(align(t.nbytes), first[t.index], last[t.index], tensor=t.index, offline=off,
                                subgraph=s))
        base += len(sg.tensors)
    _check_offline(reqs, subgraphs)
    for (s, op_index), sizes in sorted(asked.items()):
        span = life.ops.get((s, op_index))
        if span is None and not keep_unused:
            continue
        lo, hi = span or (-1, -1)
        for sid, nbytes in enumerate(sizes):
            reqs.append(Request(align(nbytes), lo, hi, scratch=(op_index, sid), subgraph=s))
    return reqs


def _check_offline(reqs: list[Request], subgraphs: dict[int, Subgraph]) -> None:
    """Refuse offline offsets that overlap two tensors alive at the same time: TFLM runs such a model, but what it
    computes then depends on the order each kernel reads and writes its memory, which no other runtime reproduces."""
    fixed = sorted((r for r in reqs if r.offline is not None and r.first >= 0), key=lambda r: r.offline)
    nbytes = {id(r): subgraphs[r.subgraph].tensors[r.tensor].nbytes for r in fixed}
    for i, a in enumerate(fixed):
        for b in fixed[i + 1:]:
            if b.offline >= a.offline + nbytes[id(a)]:
                break
            if a.overlaps(b) and nbytes[id(b)]:
                raise ModelError(f"{OFFLINE_KEY} metadata places tensors {a.label} (offset {a.offline}, "
                                 f"{nbytes[id(a)]} bytes) and {b.label} (offset {b.offline}, {nbytes[id(b)]} bytes) "
                                 f"in overlapping memory while both are alive (operators {max(a.first, b.first)} to "
                                 f"{min(a.last, b.last)})")


def footprint(r: Request, t: int) -> int:
    """Bytes ``r`` occupies at time ``t``: its size, or for a compound request the extent of its live members."""
    if not r.first <= t <= r.last:
        return 0
    if not r.members:
        return r.size
    live = [m for m in r.members if m.first <= t <= m.last]
    return max(m.rel + m.size for m in live) - min(m.rel for m in live) if live else 0


def lower_bound(requests: list[Request]) -> int:
    """Largest sum of sizes of buffers live at the same time: no plan of this op order can do better."""
    if any(r.members for r in requests):
        times = sorted({m.first for r in requests for m in (r.members or [r])})
        return max((sum(footprint(r, t) for r in requests) for t in times), default=0)
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


def offline_offsets(model: Model, every_subgraph: bool = False) -> list[int] | None:
    """The main subgraph's offsets from TFLM's ``OfflineMemoryAllocation`` metadata, if the model has one.

    Layout (int32, little endian): version, subgraph count, tensor count, then one arena offset
    per tensor of all subgraphs in order, -1 meaning "plan this one online". ``every_subgraph``
    returns the whole list instead.
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
    base = 0
    for sg in model.subgraphs:  # TFLM plans a variable with an offset in the head, where others may overwrite it
        for t in sg.tensors:
            if t.is_variable and words[3 + base + t.index] >= 0:
                raise ModelError(f"{OFFLINE_KEY} metadata gives variable tensor {t.index} ({t.name!r}) of subgraph "
                                 f"{sg.index} the offset {int(words[3 + base + t.index])}: TFLM would keep its state "
                                 "in the planned head, where other tensors overwrite it between invokes")
        base += len(sg.tensors)
    offs = [int(v) for v in words[3:3 + (count if every_subgraph else len(model.main.tensors))]]
    bad = [i for i, v in enumerate(offs) if v < -1]
    if bad:
        raise ModelError(f"{OFFLINE_KEY} metadata gives tensor {bad[0]} the offset {offs[bad[0]]}")
    return offs
