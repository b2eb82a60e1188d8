"""micronn's default planner: the best of several greedy plans, then an exact search when they miss the bound.

The search enumerates orders of first-fit placements. That is complete: take any plan, drop every buffer as
low as it goes, and place buffers in increasing offset order with first-fit; each lands at or below its place
in the plan, so the head never grows. Pruning: placements are made in nondecreasing offset order (so an order
is tried once), and a node is cut when, at some time step, the last offset plus the unplaced buffers live then
already reach the best head. Buffers whose lifetimes never chain together are independent sub-problems and are
solved separately. The search stops after a fixed number of nodes (never a clock, so every machine gets the same
plan) and returns the best plan found with its gap to the bound.
"""

from __future__ import annotations

from micronn.planners.base import Plan, Planner, Request, lower_bound, lowest_fit
from micronn.planners.greedy import ORDERS, GreedyPlanner
from micronn.planners.tflm import TflmPlanner


def components(requests: list[Request]) -> list[list[int]]:
    """Groups of requests linked by overlapping lifetimes (cut wherever no buffer spans a time step)."""
    order = sorted(range(len(requests)), key=lambda i: requests[i].first)
    groups: list[list[int]] = []
    end = -1
    for i in order:
        if not groups or requests[i].first > end:
            groups.append([])
        groups[-1].append(i)
        end = max(end, requests[i].last)
    return groups


# Nodes the exact search may expand per plan, over all independent sub-problems together. A count, not seconds, so
# the plan is the same on every machine and under any load. 4096 is what the old 0.5 s clock allowed on the
# 300-buffer test instance (about 130 us a node there, 40 us on 40 buffers); every bundled model reaches its bound
# in at most one node, and no instance in the tests improves between 4096 and 50,000 nodes.
SEARCH_NODES = 4096
# Turns the older ``budget_s`` argument into nodes: about the rate measured on the 300-buffer instance.
NODES_PER_SECOND = 8192


class _Search:
    def __init__(self, reqs: list[Request], best: list[int], max_nodes: int):
        self.reqs, self.max_nodes = reqs, max_nodes
        n = len(reqs)
        self.nbrs = [[j for j in range(n) if j != i and reqs[i].overlaps(reqs[j])] for i in range(n)]
        self.best = list(best)
        self.best_head = max(o + r.size for o, r in zip(best, reqs))
        self.times = sorted({t for r in reqs for t in (r.first, r.last)})
        self.live = {t: [i for i, r in enumerate(reqs) if r.first <= t <= r.last] for t in self.times}
        self.floor = lower_bound(reqs)
        self.nodes = 0
        self.exhausted = False

    def first_fit(self, i: int, offsets: list[int | None]) -> int:
        return lowest_fit(self.reqs[i], [(offsets[j], self.reqs[j]) for j in self.nbrs[i] if offsets[j] is not None])

    def run(self) -> None:
        n = len(self.reqs)
        offsets: list[int | None] = [None] * n
        for i, r in enumerate(self.reqs):
            if r.offline is not None:
                offsets[i] = r.offline
        self.dfs(offsets, [i for i in range(n) if offsets[i] is None], 0, -1, 0)

    def dfs(self, offsets: list[int | None], todo: list[int], last_off: int, last_i: int, head: int) -> None:
        if self.best_head == self.floor or self.exhausted:
            return
        if self.nodes >= self.max_nodes:
            self.exhausted = True
            return
        self.nodes += 1
        if not todo:
            if head < self.best_head:
                self.best_head, self.best = head, list(offsets)
            return
        pending = set(todo)
        for t in self.times:  # everything still unplaced and live at t sits above last_off
            if last_off + sum(self.reqs[i].size for i in self.live[t] if i in pending) >= self.best_head:
                return
        cands = []
        for i in todo:
            off = self.first_fit(i, offsets)
            if off < last_off or (off == last_off and i < last_i):
                continue
            end = off + self.reqs[i].size
            if max(head, end) >= self.best_head:
                continue
            cands.append((off, -self.reqs[i].size, i))
        for off, _, i in sorted(cands):
            offsets[i] = off
            self.dfs(offsets, [j for j in todo if j != i], off, i, max(head, off + self.reqs[i].size))
            offsets[i] = None
            if self.exhausted or self.best_head == self.floor:
                return


class OptimalPlanner(Planner):
    """Greedy portfolio, then exact search of at most ``max_nodes`` nodes; never worse than TFLM's plan.

    The budget is a node count so that plans are reproducible. ``budget_s`` is the older spelling in seconds, kept
    for callers: it becomes ``budget_s * NODES_PER_SECOND`` nodes and never reads a clock.
    """

    name = "optimal"

    def __init__(self, budget_s: float | None = None, *, max_nodes: int | None = None):
        if budget_s is not None and max_nodes is not None:
            raise ValueError("give budget_s or max_nodes, not both")
        if max_nodes is None:
            max_nodes = SEARCH_NODES if budget_s is None else round(budget_s * NODES_PER_SECOND)
        if max_nodes < 0:
            raise ValueError(f"max_nodes must be >= 0, got {max_nodes}")
        self.max_nodes = max_nodes

    def plan(self, requests: list[Request]) -> Plan:
        bound = lower_bound(requests)
        best = TflmPlanner().plan(requests)
        for planner in (GreedyPlanner(order, fit) for order in ORDERS for fit in (False, True)):
            if best.head == bound:
                break
            p = planner.plan(requests)
            if p.head < best.head:
                best = p
        notes = {"lower_bound": bound, "method": best.planner, "search_nodes": 0, "budget_exhausted": False}
        if best.head > bound and not any(r.offline is not None for r in requests):
            offsets = list(best.offsets)
            for group in components(requests):  # one node budget over all the sub-problems
                sub = [requests[i] for i in group]
                start = [best.offsets[i] for i in group]
                lo = min(start)
                s = _Search(sub, [o - lo for o in start], self.max_nodes - notes["search_nodes"])
                s.run()
                notes["search_nodes"] += s.nodes
                notes["budget_exhausted"] |= s.exhausted
                for i, o in zip(group, s.best):
                    offsets[i] = o
            searched = Plan(self.name, requests, offsets)
            if searched.head < best.head:
                best = searched
                notes["method"] = "search"
        notes["gap_bytes"] = best.head - bound
        return Plan(self.name, requests, best.offsets, notes)
