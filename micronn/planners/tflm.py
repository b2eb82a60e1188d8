"""TFLM's GreedyMemoryPlanner, reproduced decision for decision so that head bytes match TFLM's.

Order: offline-planned buffers keep their offsets and are placed first; online buffers are
sorted by size, largest first, with ties broken by *reverse* request order (TFLM fills its
sort array from the back and then runs a stable descending sort). Placement: each buffer goes
into the first gap, scanning the buffers already placed in offset order and considering only
those whose lifetimes overlap its own.
"""

from __future__ import annotations

from micronn.planners.base import Plan, Planner, Request


class TflmPlanner(Planner):
    name = "tflm"
    shares = False

    def plan(self, requests: list[Request]) -> Plan:
        offline = [i for i, r in enumerate(requests) if r.offline is not None]
        online = [i for i in reversed(range(len(requests))) if requests[i].offline is None]
        online.sort(key=lambda i: -requests[i].size)  # stable: equal sizes keep reverse request order
        offsets = [0] * len(requests)
        placed: list[tuple[int, int]] = []  # (offset, request index), kept sorted by offset, ties after
        for i in offline + online:
            r = requests[i]
            if r.offline is not None:
                offset = r.offline
            else:
                offset = 0
                for o, j in placed:
                    other = requests[j]
                    if not r.overlaps(other):
                        continue
                    if o - offset >= r.size:
                        break
                    offset = max(offset, o + other.size)
            offsets[i] = offset
            k = len(placed)
            while k > 0 and placed[k - 1][0] > offset:
                k -= 1
            placed.insert(k, (offset, i))
        return Plan(self.name, requests, offsets)
