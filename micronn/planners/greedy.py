"""Greedy placement in a chosen order, first-fit or best-fit: the building block of better plans.

Each order is a heuristic that wins on some graphs: largest first (TFLM's idea, without its reverse-index
tie-break), largest lifetime area first, longest-lived first, and earliest-born first.
"""

from __future__ import annotations

from collections.abc import Callable

from micronn.planners.base import Plan, Planner, Request, lowest_fit

ORDERS: dict[str, Callable[[Request], tuple]] = {
    "size": lambda r: (-r.size, r.first, -r.last),
    "area": lambda r: (-r.size * (r.last - r.first + 1), -r.size, r.first),
    "lifetime": lambda r: (-(r.last - r.first), -r.size, r.first),
    "start": lambda r: (r.first, -r.size, -r.last),
}


def place(requests: list[Request], order: list[int], best_fit: bool = False) -> list[int]:
    """Place requests in ``order`` at the lowest (first-fit) or tightest (best-fit) free offset.

    Best-fit looks at gaps between simple buffers; compound requests always go first-fit.
    """
    offsets = [0] * len(requests)
    placed: list[tuple[int, Request]] = []
    for i in order:
        r = requests[i]
        if r.offline is not None:
            offsets[i] = r.offline
        elif best_fit and not r.members:
            offsets[i] = _best_gap(r, placed)
        else:
            offsets[i] = lowest_fit(r, placed)
        placed.append((offsets[i], r))
    return offsets


def _best_gap(r: Request, placed: list[tuple[int, Request]]) -> int:
    best, best_slack, top = None, None, 0
    bad = sorted(iv for o, q in placed if q.overlaps(r) for iv in r.forbidden(q, o))
    for lo, hi in bad:  # offsets in the open interval (lo, hi) collide; [top, lo] is a gap of slack lo - top
        if lo >= top:
            slack = lo - top
            if best_slack is None or slack < best_slack:
                best, best_slack = top, slack
        top = max(top, hi)
    return top if best is None else best


class GreedyPlanner(Planner):
    """One greedy order with first-fit or best-fit."""

    def __init__(self, order: str = "size", best_fit: bool = False):
        self.order, self.best_fit = order, best_fit
        self.name = f"greedy-{order}-{'best' if best_fit else 'first'}"

    def plan(self, requests: list[Request]) -> Plan:
        key = ORDERS[self.order]
        fixed = [i for i, r in enumerate(requests) if r.offline is not None]
        free = sorted((i for i, r in enumerate(requests) if r.offline is None), key=lambda i: key(requests[i]))
        return Plan(self.name, requests, place(requests, fixed + free, self.best_fit))
