"""Operator reordering: the topological order whose largest live set is smallest.

Branchy graphs (residual blocks, U-Net skips, parallel heads) can run in many orders, and the order
decides which tensors are alive together. The exact search is a memoized recursion over the set of
operators already run (only sets closed under dependencies are reachable, which keeps chains and
modest branching cheap); beyond ``max_states`` it falls back to a greedy order that runs next whichever
ready operator leaves the fewest live bytes. The result is written back to .tflite with micronn's
writer, so every runtime, TFLM included, benefits.
"""

from __future__ import annotations

import copy
import sys
from functools import cache

from micronn import progress
from micronn.ir import Model, Subgraph
from micronn.planners.base import align


class _Graph:
    def __init__(self, sg: Subgraph, scratch: dict[int, int] | None = None):
        n = len(sg.operators)
        self.n = n
        prod = sg.producers()
        planned = {t.index for t in sg.tensors if not t.is_constant and not t.is_variable and t.nbytes}
        self.size = {t: align(sg.tensors[t].nbytes) for t in planned}
        self.ins = [sorted({t for t in op.inputs if t in planned}) for op in sg.operators]
        self.outs = [sorted({t for t in op.outputs if t in planned}) for op in sg.operators]
        self.deps = [0] * n
        for op in sg.operators:
            for t in op.inputs:
                if t in prod:
                    self.deps[op.index] |= 1 << prod[t]
        self.consumers: dict[int, int] = {}
        for op in sg.operators:
            for t in self.ins[op.index]:
                self.consumers[t] = self.consumers.get(t, 0) | (1 << op.index)
        self.keep = {t for t in sg.outputs if t in planned}  # live to the end
        self.start = [t for t in sg.inputs if t in planned]  # live from the start
        self.scratch = scratch or {}

    def live_bytes(self, done: int, o: int) -> int:
        """Bytes alive while ``o`` runs after the operators in ``done``: its outputs and scratch, and every
        earlier tensor that ``o`` or a later operator still reads, or that the graph outputs."""
        total = sum(self.size[t] for t in self.outs[o]) + self.scratch.get(o, 0)
        for t in self.start + [t for i in range(self.n) if done >> i & 1 for t in self.outs[i]]:
            if self.consumers.get(t, 0) & ~done or t in self.keep:
                total += self.size[t]
        return total

    def ready(self, done: int) -> list[int]:
        return [o for o in range(self.n) if not done >> o & 1 and self.deps[o] & ~done == 0]


def peak_of_order(sg: Subgraph, order: list[int], scratch: dict[int, int] | None = None) -> int:
    """The largest live set (bytes) when the operators run in ``order``."""
    g = _Graph(sg, scratch)
    done, peak = 0, 0
    for o in order:
        peak = max(peak, g.live_bytes(done, o))
        done |= 1 << o
    return peak


def best_order(sg: Subgraph, scratch: dict[int, int] | None = None,
               max_states: int = 200_000) -> tuple[list[int], bool]:
    """(order, exact): the order with the smallest peak live set, and whether the search was exhaustive."""
    g = _Graph(sg, scratch)
    full = (1 << g.n) - 1
    states = 0

    class _Limit(Exception):
        pass

    @cache
    def solve(done: int) -> tuple[int, tuple[int, ...]]:
        nonlocal states
        states += 1
        if states > max_states:
            raise _Limit
        if states % 1024 == 0:
            shown.update(1024)
        if done == full:
            return 0, ()
        best: tuple[int, tuple[int, ...]] | None = None
        for o in g.ready(done):
            here = g.live_bytes(done, o)
            if best is not None and here >= best[0]:
                continue
            rest, tail = solve(done | (1 << o))
            cand = (max(here, rest), (o,) + tail)
            if best is None or cand[0] < best[0]:
                best = cand
        assert best is not None, "dependency cycle"
        return best

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4 * g.n + 100))
    try:
        with progress.bar("reorder: states searched", max_states) as shown:
            return list(solve(0)[1]), True
    except _Limit:
        return _greedy(g), False
    finally:
        sys.setrecursionlimit(limit)


def _greedy(g: _Graph) -> list[int]:
    done, order = 0, []
    while len(order) < g.n:
        o = min(g.ready(done), key=lambda o: (g.live_bytes(done, o), o))
        order.append(o)
        done |= 1 << o
    return order


def reorder(model: Model, order: list[int]) -> Model:
    """A copy of ``model`` whose main subgraph runs its operators in ``order`` (weights shared)."""
    sg = model.main
    if sorted(order) != list(range(len(sg.operators))):
        raise ValueError("order must be a permutation of the operators")
    ops = []
    for new, old in enumerate(order):
        op = copy.copy(sg.operators[old])
        op.index = new
        ops.append(op)
    out = copy.copy(model)
    main = copy.copy(sg)
    main.operators = ops
    out.subgraphs = [main] + model.subgraphs[1:]
    out.validate()
    return out
