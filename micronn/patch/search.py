"""Choose where to run a network in patches: which run of operators, how many stripes.

Each candidate is planned for real (micronn's default planner and memory sharing) and priced as head + micronn's
persistent tail: more stripes shrink the stripes' working set but repeat the run's per-channel quantization
arrays once per stripe and recompute the halo rows their receptive fields share. Candidates whose added
multiply-accumulates exceed ``max_extra_macs`` (a fraction of the model's) are not planned at all.

Runs start where the network starts (an operator reading a model input) and end where an activation shrinks
(a strided or channel-reducing layer): cutting anywhere else leaves a large joined tensor alive.

Equal stripes are not always best: the first stripe runs while the whole input is still alive and later ones
after its rows have died, so the best equal split is then refined by moving one row at a time between
neighbouring stripes (at most ``refine`` more plans, a count, so every machine gets the same answer).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from micronn.errors import MicronnError
from micronn.interpreter import Interpreter
from micronn.ir import Model
from micronn.patch.transform import MAX_CONCAT_INPUTS, PatchError, find_run, macs, patch
from micronn.patch.transform import stripes as equal_stripes
from micronn.tflite.reader import Source, read

STRIPES = (2, 3, 4, 5, 6, 8, 10)


@dataclass
class Choice:
    """One planned model: operators ``start``..``end`` in ``n`` stripes (``n == 0``: the model as it was)."""

    start: int
    end: int
    n: int
    head: int
    tail: int
    extra_macs: int
    model: Model | None = field(default=None, repr=False)
    heights: tuple[int, ...] | None = None  # the stripes' heights (top first) when not equal

    @property
    def total(self) -> int:
        return self.head + self.tail

    @property
    def split(self) -> int | list[int]:
        """What :func:`micronn.patch.patch` takes to rebuild this model: the stripe count or their heights."""
        return self.n if self.heights is None else list(self.heights)

    def as_dict(self) -> dict[str, Any]:
        return {"ops": [self.start, self.end] if self.n else None, "stripes": self.n, "head_bytes": self.head,
                "tail_bytes": self.tail, "total_bytes": self.total, "extra_macs": self.extra_macs,
                "heights": None if self.heights is None else list(self.heights)}


@dataclass
class Result:
    """The search's answer: ``model`` (the best, or the input unchanged), the unpatched figures and all tried."""

    model: Model
    before: Choice
    best: Choice
    macs: int
    tried: list[Choice]

    @property
    def patched(self) -> bool:
        return self.best.n > 0

    def as_dict(self) -> dict[str, Any]:
        return {"before": self.before.as_dict(), "after": self.best.as_dict(), "macs": self.macs,
                "extra_macs_pct": round(100 * self.best.extra_macs / self.macs, 2) if self.macs else 0.0,
                "tried": len(self.tried)}


def measure(model: Model, tail: Callable[[Interpreter], int] | None = None, **kw: Any) -> tuple[int, int]:
    """(head, persistent tail) of ``model`` planned by micronn (default planner and sharing unless ``kw``); the
    tail is micronn's own (identical per-channel arrays of the stripes kept once) unless ``tail`` prices it."""
    it = Interpreter(model, **kw)
    it.allocate_tensors()
    return it.head, it.tail if tail is None else tail(it)


def runs(model: Model) -> list[tuple[int, int]]:
    """(start, end) of every run worth cutting: it starts at an operator reading a model input and ends at an
    operator whose output is smaller than its input."""
    sg = model.main
    out = []
    for start, op in enumerate(sg.operators):
        if not any(i in sg.inputs for i in op.inputs):
            continue
        for end in range(start, len(sg.operators)):
            try:
                run = find_run(model, start, end)
            except PatchError:
                if end > start and _stops(model, start, end):
                    break
                continue
            last = sg.operators[end]
            if sg.tensors[run.y].nbytes < sg.tensors[last.inputs[0]].nbytes and sg.tensors[run.y].shape[1] > 1:
                out.append((start, end))
    return out


def _stops(model: Model, start: int, end: int) -> bool:
    """Whether no longer run from ``start`` can be valid either (an operator that cannot be cut at all)."""
    try:
        find_run(model, end, end)
    except PatchError:
        return True
    return False


REFINE = 16  # plans the stripe-height refinement may make


def search(model: Model | Source, max_extra_macs: float = 0.2, *, stripes: tuple[int, ...] = STRIPES,
           progress: Callable[[Choice], None] | None = None,
           tail: Callable[[Interpreter], int] | None = None, refine: int = REFINE) -> Result:
    """The patching of ``model`` with the smallest head + tail whose added MACs stay within ``max_extra_macs`` of
    the model's (a fraction: 0.2 is 20 %); the model unchanged if none is smaller. ``tail`` prices the tail of an
    allocated interpreter (default: micronn's own; TinySeg's steps price TFLM's, which keeps every copy)."""
    if isinstance(max_extra_macs, bool) or not isinstance(max_extra_macs, (int, float)) or not max_extra_macs >= 0:
        raise MicronnError(f"max_extra_macs must be a non-negative fraction, got {max_extra_macs!r}")
    m = model if isinstance(model, Model) else read(model)
    base_macs = macs(m)
    before = Choice(0, 0, 0, *measure(m, tail), 0, m)
    best, tried = before, []
    for start, end in runs(m):
        height = m.main.tensors[m.main.operators[end].outputs[0]].shape[1]
        for n in [k for k in stripes if 2 <= k <= min(height, MAX_CONCAT_INPUTS)]:
            try:
                pm = patch(m, start, end, n)
            except PatchError:
                continue
            extra = macs(pm) - base_macs
            if extra > max_extra_macs * base_macs:
                break  # more stripes only add more
            c = Choice(start, end, n, *measure(pm, tail), extra, pm)
            tried.append(c)
            if progress is not None:
                progress(c)
            if (c.total, c.extra_macs) < (best.total, best.extra_macs):
                best = c
    if best.n:
        best = _refine(m, best, base_macs, max_extra_macs, refine, tried, progress, tail)
    return Result(best.model if best.model is not None else m, before, best, base_macs, tried)


def _refine(m: Model, best: Choice, base_macs: int, max_extra_macs: float, budget: int, tried: list[Choice],
            progress: Callable[[Choice], None] | None, tail: Callable[[Interpreter], int] | None) -> Choice:
    """Hill-climb from ``best``: move one output row between the first and last stripes or two neighbouring ones
    while that lowers the total (then the added MACs), planning at most ``budget`` models."""
    height = m.main.tensors[m.main.operators[best.end].outputs[0]].shape[1]
    heights = best.heights or tuple(b - a + 1 for a, b in equal_stripes(height, best.n))
    seen = {heights}
    improved = True
    while improved and budget > 0:
        improved = False
        last = len(heights) - 1
        # the ends first (the first stripe runs beside the whole input, the last one beside the whole join)
        moves = [(last, 0), (0, last)] + [mv for i in range(last) for mv in ((i + 1, i), (i, i + 1))]
        for src, dst in moves:
            if heights[src] < 2 or budget <= 0:
                continue
            h = list(heights)
            h[src] -= 1
            h[dst] += 1
            if tuple(h) in seen:
                continue
            seen.add(tuple(h))
            try:
                pm = patch(m, best.start, best.end, h)
            except PatchError:
                continue
            extra = macs(pm) - base_macs
            if extra > max_extra_macs * base_macs:
                continue
            budget -= 1
            c = Choice(best.start, best.end, best.n, *measure(pm, tail), extra, pm, tuple(h))
            tried.append(c)
            if progress is not None:
                progress(c)
            if (c.total, c.extra_macs) < (best.total, best.extra_macs):
                best, heights, improved = c, tuple(h), True
                break
    return best
