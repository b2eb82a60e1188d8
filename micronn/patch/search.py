"""Choose where to run a network in patches: which run of operators, how many stripes.

Each candidate is planned for real (micronn's default planner and memory sharing) and priced as head + micronn's
persistent tail: more stripes shrink the stripes' working set but repeat the run's per-channel quantization
arrays once per stripe and recompute the halo rows their receptive fields share. Candidates whose added
multiply-accumulates exceed ``max_extra_macs`` (a fraction of the model's) are not planned at all.

Runs start where the network starts (an operator reading a model input) or just after an operator that shrinks
its activation, and end where an activation shrinks (a strided or channel-reducing layer): cutting anywhere else
leaves a large joined tensor alive.

One patched run moves the peak to the layers after it, so the search then adds further stages (up to ``stages``
runs in all, none sharing an operator): each round plans every run left with every stripe count beside the best
plan so far, keeps the best, and re-tries the stripe counts of the stages it already had. It stops when a round
finds nothing smaller. All of it is bounded by counts (runs, stripe counts, stages), never by time.

Equal stripes are not always best: the first stripe runs while the whole input is still alive and later ones
after its rows have died, so the best equal split is then refined by moving one row at a time between
neighbouring stripes of one stage (at most ``refine`` more plans, a count, so every machine gets the same answer).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from micronn.errors import MicronnError
from micronn.interpreter import Interpreter
from micronn.ir import Model
from micronn.patch.transform import MAX_CONCAT_INPUTS, PatchError, Stage, find_run, macs, patch_stages
from micronn.patch.transform import stripes as equal_stripes
from micronn.tflite.reader import Source, read

STRIPES = (2, 3, 4, 5, 6, 8, 10)
MAX_STAGES = 3  # patched runs one plan may chain


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
    more: tuple[Stage, ...] = ()  # further patched runs after the first one, in operator order

    @property
    def total(self) -> int:
        return self.head + self.tail

    @property
    def split(self) -> int | list[int]:
        """What :func:`micronn.patch.patch` takes to rebuild the first stage: the stripe count or their heights."""
        return self.n if self.heights is None else list(self.heights)

    @property
    def stages(self) -> tuple[Stage, ...]:
        """Every patched run, in operator order: :func:`micronn.patch.patch_stages` rebuilds the model from them."""
        if not self.n:
            return ()
        return (Stage(self.start, self.end, self.n if self.heights is None else self.heights), *self.more)

    def describe(self) -> str:
        """The stages in words, for reports."""
        return "; ".join(f"operators {st.start}..{st.end} in {_count(st)} stripes"
                         + ("" if isinstance(st.split, int) else f" {list(st.split)}") for st in self.stages)

    def as_dict(self) -> dict[str, Any]:
        return {"ops": [self.start, self.end] if self.n else None, "stripes": self.n, "head_bytes": self.head,
                "tail_bytes": self.tail, "total_bytes": self.total, "extra_macs": self.extra_macs,
                "heights": None if self.heights is None else list(self.heights),
                "stages": [{"ops": [st.start, st.end], "split": st.split if isinstance(st.split, int)
                            else list(st.split)} for st in self.stages]}


def _count(st: Stage) -> int:
    return st.split if isinstance(st.split, int) else len(st.split)


def _choice(stages: tuple[Stage, ...], head: int, tail: int, extra: int, model: Model) -> Choice:
    first, *more = sorted(stages, key=lambda st: st.start)
    heights = None if isinstance(first.split, int) else tuple(first.split)
    return Choice(first.start, first.end, _count(first), head, tail, extra, model, heights, tuple(more))


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
    """(start, end) of every run worth cutting: it starts at an operator reading a model input or just after an
    operator whose output is smaller than its input, and ends at an operator whose output is smaller than its
    input."""
    sg = model.main
    out = []
    for start, op in enumerate(sg.operators):
        if not any(i in sg.inputs for i in op.inputs) and not (start and _shrinks(model, start - 1)):
            continue
        for end in range(start, len(sg.operators)):
            try:
                run = find_run(model, start, end)
            except PatchError:
                if end > start and _stops(model, start, end):
                    break
                continue
            if _shrinks(model, end) and sg.tensors[run.y].shape[1] > 1:
                out.append((start, end))
    return out


def _shrinks(model: Model, k: int) -> bool:
    """Whether operator ``k`` writes fewer bytes than its first input holds."""
    op, tensors = model.main.operators[k], model.main.tensors
    return bool(op.outputs and op.inputs) and op.inputs[0] >= 0 and \
        tensors[op.outputs[0]].nbytes < tensors[op.inputs[0]].nbytes


def _stops(model: Model, start: int, end: int) -> bool:
    """Whether no longer run from ``start`` can be valid either (an operator that cannot be cut at all)."""
    try:
        find_run(model, end, end)
    except PatchError:
        return True
    return False


REFINE = 16  # plans the stripe-height refinement may make
_OVER = "over"  # a plan past the MAC budget


def _better(c: Choice, best: Choice) -> bool:
    return (c.total, c.extra_macs) < (best.total, best.extra_macs)


def search(model: Model | Source, max_extra_macs: float = 0.2, *, stripes: tuple[int, ...] = STRIPES,
           progress: Callable[[Choice], None] | None = None,
           tail: Callable[[Interpreter], int] | None = None, refine: int = REFINE, stages: int = MAX_STAGES) -> Result:
    """The patching of ``model`` with the smallest head + tail whose added MACs stay within ``max_extra_macs`` of
    the model's (a fraction: 0.2 is 20 %); the model unchanged if none is smaller. ``tail`` prices the tail of an
    allocated interpreter (default: micronn's own; TinySeg's steps price TFLM's, which keeps every copy).
    ``stages`` bounds how many runs one plan patches (1: a single run, as MCUNetV2 does)."""
    if isinstance(max_extra_macs, bool) or not isinstance(max_extra_macs, (int, float)) or not max_extra_macs >= 0:
        raise MicronnError(f"max_extra_macs must be a non-negative fraction, got {max_extra_macs!r}")
    if isinstance(stages, bool) or not isinstance(stages, int) or stages < 1:
        raise MicronnError(f"stages must be a positive number of runs, got {stages!r}")
    m = model if isinstance(model, Model) else read(model)
    base_macs = macs(m)
    before = Choice(0, 0, 0, *measure(m, tail), 0, m)
    tried: list[Choice] = []
    planned: dict[tuple, Choice | str | None] = {}  # each distinct plan is made once

    def plan(st: tuple[Stage, ...]) -> Choice | str | None:
        """The planned choice, None if it cannot be patched, or _OVER if it adds too many MACs."""
        key = tuple(sorted((s.start, s.end, _heights(m, s)) for s in st))
        if key in planned:
            return planned[key]
        try:
            pm = patch_stages(m, st)
        except PatchError:
            planned[key] = None
            return None
        extra = macs(pm) - base_macs
        if extra > max_extra_macs * base_macs:
            planned[key] = _OVER
            return _OVER
        c = planned[key] = _choice(st, *measure(pm, tail), extra, pm)
        tried.append(c)
        if progress is not None:
            progress(c)
        return c

    found = runs(m)
    best = before
    chosen: tuple[Stage, ...] = ()
    for _ in range(stages):
        base = best
        for start, end in found:
            if any(start <= st.end and st.start <= end for st in chosen):
                continue
            height = m.main.tensors[m.main.operators[end].outputs[0]].shape[1]
            for n in [k for k in stripes if 2 <= k <= min(height, MAX_CONCAT_INPUTS)]:
                c = plan((*chosen, Stage(start, end, n)))
                if c is _OVER:
                    break  # more stripes only add more
                if isinstance(c, Choice) and _better(c, best):
                    best = c
        if best is base:
            break
        chosen = best.stages
        if len(chosen) > 1:  # the stages found before were sized for a peak that has moved: re-try their counts
            best = _retune(m, best, stripes, plan)
            chosen = best.stages
    if best.n:
        best = _refine(m, best, refine, plan)
    return Result(best.model if best.model is not None else m, before, best, base_macs, tried)


def _retune(m: Model, best: Choice, stripes: tuple[int, ...],
            plan: Callable[[tuple[Stage, ...]], Choice | str | None]) -> Choice:
    """Try every other stripe count for each stage of ``best`` with the others fixed (one pass, in order)."""
    for i in range(len(best.stages)):
        st = best.stages[i]
        height = m.main.tensors[m.main.operators[st.end].outputs[0]].shape[1]
        for n in [k for k in stripes if 2 <= k <= min(height, MAX_CONCAT_INPUTS)]:
            if n == st.split:
                continue
            c = plan(tuple(Stage(st.start, st.end, n) if j == i else s for j, s in enumerate(best.stages)))
            if c is _OVER:
                break
            if isinstance(c, Choice) and _better(c, best):
                best = c
    return best


def _refine(m: Model, best: Choice, budget: int,
            plan: Callable[[tuple[Stage, ...]], Choice | str | None]) -> Choice:
    """Hill-climb from ``best``: move one output row of one stage between its first and last stripes or two
    neighbouring ones while that lowers the total (then the added MACs), planning at most ``budget`` models."""
    def key(stages: tuple[Stage, ...]) -> tuple:
        return tuple((st.start, st.end, tuple(_heights(m, st))) for st in stages)

    seen = {key(best.stages)}
    improved = True
    while improved and budget > 0:
        improved = False
        for i, st in enumerate(best.stages):
            heights = _heights(m, st)
            last = len(heights) - 1
            # the ends first (the first stripe runs beside the whole input, the last one beside the whole join)
            moves = [(last, 0), (0, last)] + [mv for k in range(last) for mv in ((k + 1, k), (k, k + 1))]
            for src, dst in moves:
                if heights[src] < 2 or budget <= 0:
                    continue
                h = list(heights)
                h[src] -= 1
                h[dst] += 1
                cand = tuple(Stage(s.start, s.end, tuple(h)) if j == i else s for j, s in enumerate(best.stages))
                if key(cand) in seen:
                    continue
                seen.add(key(cand))
                c = plan(cand)
                if not isinstance(c, Choice):
                    continue
                budget -= 1
                if _better(c, best):
                    best, improved = c, True
                    break
            if improved:
                break
    return best


def _heights(m: Model, st: Stage) -> tuple[int, ...]:
    """The stage's stripe heights, top first."""
    if not isinstance(st.split, int):
        return tuple(st.split)
    height = m.main.tensors[m.main.operators[st.end].outputs[0]].shape[1]
    return tuple(b - a + 1 for a, b in equal_stripes(height, st.split))
