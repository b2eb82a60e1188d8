"""Greedy placement in a chosen order, first-fit or best-fit: the building block of better plans.

Each order is a heuristic that wins on some graphs: largest first (TFLM's idea, without its reverse-index
tie-break), largest lifetime area first, longest-lived first, and earliest-born first.
"""

from __future__ import annotations

from collections.abc import Callable

from micronn.planners.base import Plan, Planner, Request

ORDERS: dict[str, Callable[[Request], tuple]] = {
    "size": lambda r: (-r.size, r.first, -r.last),
    "area": lambda r: (-r.size * (r.last - r.first + 1), -r.size, r.first),
    "lifetime": lambda r: (-(r.last - r.first), -r.size, r.first),
    "start": lambda r: (r.first, -r.size, -r.last),
}


def place(requests: list[Request], order: list[int], best_fit: bool = False) -> list[int]:
    """Place requests in ``order`` at the lowest (first-fit) or tightest (best-fit) free offset."""
    offsets = [0] * len(requests)
    placed: list[int] = []
    for i in order:
        r = requests[i]
        if r.offline is not None:
            offsets[i] = r.offline
            placed.append(i)
            continue
        busy = sorted((offsets[j], offsets[j] + requests[j].size) for j in placed if requests[j].overlaps(r))
        best, best_slack, top = None, None, 0
        for lo, hi in busy:
            if lo - top >= r.size:
                if not best_fit:
                    best = top
                    break
                slack = lo - top - r.size
                if best_slack is None or slack < best_slack:
                    best, best_slack = top, slack
            top = max(top, hi)
        offsets[i] = top if best is None else best
        placed.append(i)
    return offsets


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
