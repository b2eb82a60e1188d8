"""TinySeg's optimizer loop (Algorithm 1), with micronn's planner doing the re-planning after every step.

Steps, each measured as head (planned by micronn) + persistent tail (TFLM's, as ``micronn.footprint`` predicts it):
the TFLM baseline; micronn's planner; compact scratch (TRANSPOSE_CONV's int32 buffer as a band of rows: the paper's
"temporary tensor quantization", done better); memory sharing (aliases, in-place ops, outputs streamed over their
inputs); folding what is known before running (shape computations, PADs of nothing); then, while the total shrinks
and is above the target, one spill per iteration: the victims are tensors idle across the peak, longest cold range
first (the paper takes only the longest; a few are tried here), each spilled whole or, with a target, only as much
as needed, each with every prefix of its fused-fetch chain, plus streaming the arena inputs of a fused fetch that
runs at the peak. The best candidate by total bytes wins, by predicted latency on a tie or when several reach the
target.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from micronn import progress
from micronn.errors import MicronnError
from micronn.footprint import tflm_tail as _tflm_tail
from micronn.interpreter import Interpreter
from micronn.ir import Model
from micronn.planners import Sharing
from micronn.planners.base import footprint
from micronn.tflite.reader import Source, read
from micronn.tinyseg import transform
from micronn.tinyseg.cold import cold_ranges
from micronn.tinyseg.latency import predict

VICTIMS_TRIED = 3


def tflm_tail(it: Interpreter) -> int:
    """TFLM's persistent tail on the 64-bit host, as micronn's model of it predicts (``micronn.footprint``): the
    wheel cannot run micronn's custom ops, so every step is priced the same way."""
    return _tflm_tail(it, 64)


@dataclass
class Step:
    """One point of the paper's Figure 11: the model after ``name``, its head, tail and total bytes."""

    name: str
    head: int
    tail: int
    change: str = ""
    latency_s: float | None = None
    model: Model | None = field(default=None, repr=False)

    @property
    def total(self) -> int:
        return self.head + self.tail

    def as_dict(self) -> dict[str, Any]:
        d = {"name": self.name, "head_bytes": self.head, "tail_bytes": self.tail, "total_bytes": self.total,
             "change": self.change}
        return d if self.latency_s is None else {**d, "latency_ms": round(self.latency_s * 1e3, 1)}


@dataclass
class Result:
    model: Model
    steps: list[Step]
    target_bytes: int | None = None

    @property
    def before(self) -> Step:
        return self.steps[0]

    @property
    def after(self) -> Step:
        return self.steps[-1]

    def as_dict(self) -> dict[str, Any]:
        def bytes_(s: Step) -> dict[str, int]:
            return {"head_bytes": s.head, "tail_bytes": s.tail, "total_bytes": s.total}

        return {"before": bytes_(self.before), "after": bytes_(self.after), "target_bytes": self.target_bytes,
                "reduction": round(1 - self.after.total / self.before.total, 4),
                "steps": [s.as_dict() for s in self.steps]}


def measure(model: Model, name: str, change: str = "", **kw: Any) -> Step:
    """Plan ``model`` (micronn's default planner and sharing unless ``kw`` says otherwise) and record a step."""
    it = Interpreter(model, **kw)
    it.allocate_tensors()
    return Step(name, it.head, tflm_tail(it), change, model=model)


def peak(model: Model) -> tuple[int, set[int], Interpreter]:
    """The operator at which the planned live set is largest, and the tensors live there."""
    it = Interpreter(model)
    it.allocate_tensors()
    reqs = it.requests
    times = sorted({r.first for r in reqs} | {r.last for r in reqs})
    t = max(times, key=lambda t: sum(footprint(r, t) for r in reqs), default=0)
    live = {m.tensor for r in reqs for m in (r.members or [r]) if m.first <= t <= m.last and m.tensor is not None}
    return t - 1, live, it


def candidates(model: Model, need: int | None, fuse: bool = True) -> list[tuple[str, Model]]:
    """(what changed, model) for every spill plan tried from ``model``; ``need``: bytes still to save, if a target;
    ``fuse=False`` leaves every Fetch unfused (the paper's "tensor spilling" step alone)."""
    op, live, _ = peak(model)
    sg = model.main
    out: list[tuple[str, Model]] = []
    ranges = {c.tensor: c for c in cold_ranges(model)}
    idle = sorted((c for t in live if (c := ranges.get(t)) and c.start < op <= c.end and c.length > 1
                   and t not in sg.outputs), key=lambda c: (-c.length, -c.nbytes))
    for c in idle[:VICTIMS_TRIED]:
        name = sg.tensors[c.tensor].name
        parts = dict.fromkeys([None, need if need is not None and need < c.nbytes else None])
        for part, early in [(p, e) for p in parts for e in (False, True)]:
            try:
                m = transform.spill(model, c.tensor, c.start, c.end, part, early=early)
            except transform.TransformError:
                continue
            what = f"spill t{c.tensor} ({name!r}, {c.nbytes:,} B) over ops {c.start}..{c.end}"
            if part is not None:
                what = f"partially {what}: {part:,} B of it"
            if early:
                what += ", spilled as soon as written"
            out.append((what, m))
            sid = max(transform.spill_ids(m))
            fetch = next(o.index for o in m.main.operators if o.op == "Fetch" and _victims(o) == [sid])
            fused = []
            while fuse:
                try:
                    m = transform.fuse(m, fetch)
                except transform.TransformError:
                    break
                fused.append(m.main.operators[fetch].op)
                out.append((f"{what}, fused fetching ({' + '.join(fused)})", m))
    f = sg.operators[op] if 0 <= op < len(sg.operators) else None
    if fuse and f is not None and f.op in ("Fetch", "FetchConv2D"):
        for t in f.inputs[:-2] if f.op == "FetchConv2D" else f.inputs:
            try:
                out.append((f"stream t{t} ({sg.tensors[t].nbytes:,} B) into {f.op} {op} from storage",
                            transform.stream_input(model, op, t)))
            except transform.TransformError:
                pass
    return out


def _victims(op: Any) -> list[int]:
    return list(transform._options(op).get("victims", []))


def optimize(model: Model | Source, target_bytes: int | None = None, storage: str = "memory", *,
             max_spills: int = 8, latency: bool = True, fuse: bool = True) -> Result:
    """Lower ``model``'s total arena (head + TFLM tail) to ``target_bytes``, or as low as it goes.

    The returned model runs in micronn (with ``storage=``) and gives the original's outputs byte for byte.
    ``storage`` names the backend whose latency breaks ties between equally small spill plans. A ``target_bytes``
    above the model's arena is met at once (no spilling); a negative one is refused.
    """
    if target_bytes is not None and (isinstance(target_bytes, bool) or not isinstance(target_bytes, int)
                                     or target_bytes < 0):
        raise MicronnError(f"target_bytes must be a non-negative number of bytes, got {target_bytes!r}")
    m = model if isinstance(model, Model) else read(model)

    def lat(x: Model) -> float:
        return predict(x, storage) if latency else 0.0

    steps = [measure(m, "TFLM (its planner, its scratch)", "baseline", planner="tflm")]
    none = Sharing.none()
    steps.append(measure(m, "micronn planner", "optimal offsets, nothing shared", sharing=none))
    steps.append(measure(m, "+ compact scratch", "TRANSPOSE_CONV accumulates a band of output rows, not all of them",
                         sharing=dataclasses.replace(none, compact_scratch=True)))
    steps.append(measure(m, "+ memory sharing", "aliases, in-place ops, outputs streamed over dying inputs"))
    folded = transform.drop_identities(transform.fold_constants(m))
    removed = len(m.main.operators) - len(folded.main.operators)
    step = measure(folded, "+ folding", f"{removed} operators known before running became constants or vanished")
    if step.total <= steps[-1].total:
        steps.append(step)
        m = folded
    best = steps[-1]
    with progress.bar("optimize: spill plans tried") as shown:
        for _ in range(max_spills):
            if target_bytes is not None and best.total <= target_bytes:
                break
            need = None if target_bytes is None else best.total - target_bytes
            trials = []
            for what, x in candidates(m, need, fuse):
                trials.append(measure(x, "+ spilling", what))
                shown.update()
            shown.set_postfix_str(f"total {best.total:,} B")
            if not _spill_step(trials, best, target_bytes, lat, steps):
                break
            best = steps[-1]
            m = best.model
    if latency:
        for s in steps:
            if s.latency_s is None and s.model is not None:
                s.latency_s = lat(s.model)
    return Result(m, steps, target_bytes)


def _spill_step(trials: list[Any], best: Any, target_bytes: int | None, lat: Any, steps: list[Any]) -> bool:
    """Append the best of ``trials`` to ``steps`` if it lowers the total; False when spilling is done."""
    if not trials:
        return False
    lowest = min(s.total for s in trials)
    if lowest >= best.total:
        return False
    # plans that reach the target are all good enough: the fastest wins (a partial spill moves fewer bytes)
    tied = [s for s in trials if s.total == lowest or target_bytes is not None and s.total <= target_bytes]
    for s in tied:
        s.latency_s = lat(s.model)
    step = min(tied, key=lambda s: s.latency_s)
    step.name = "+ fused fetching" if "fused" in step.change else "+ streaming" if "stream" in step.change \
        else "+ spilling"
    steps.append(step)
    return True
