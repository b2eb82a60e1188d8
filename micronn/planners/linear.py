"""The linear planner: every buffer gets its own bytes, no reuse. The upper bound, and a debugging aid."""

from __future__ import annotations

from micronn.planners.base import Plan, Planner, Request


class LinearPlanner(Planner):
    name = "linear"
    shares = False

    def plan(self, requests: list[Request]) -> Plan:
        offsets, end = [], 0
        for r in requests:
            offsets.append(end)
            end += r.size
        return Plan(self.name, requests, offsets)
