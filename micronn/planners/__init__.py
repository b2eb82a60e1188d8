"""Arena memory planners, by name. ``get("tflm")`` is TFLM's greedy planner, bit for bit."""

from __future__ import annotations

from micronn.errors import MicronnError
from micronn.planners.base import (
    ALIGN,
    OFFLINE_KEY,
    Member,
    Plan,
    Planner,
    Request,
    align,
    lower_bound,
    offline_offsets,
    tensor_requests,
)
from micronn.planners.fold import fold_pads
from micronn.planners.greedy import GreedyPlanner
from micronn.planners.linear import LinearPlanner
from micronn.planners.optimal import OptimalPlanner
from micronn.planners.sharing import Sharing, share
from micronn.planners.tflm import TflmPlanner

PLANNERS: dict[str, type[Planner]] = {p.name: p for p in (TflmPlanner, LinearPlanner, OptimalPlanner)}


def get(name: str | Planner) -> Planner:
    """A planner instance by name (or pass one through)."""
    if isinstance(name, Planner):
        return name
    if name not in PLANNERS:
        raise MicronnError(f"unknown planner {name!r}; choose from {', '.join(sorted(PLANNERS))}")
    return PLANNERS[name]()


__all__ = [
    "ALIGN", "OFFLINE_KEY", "PLANNERS", "GreedyPlanner", "OptimalPlanner", "Plan", "Planner", "Request", "align",
    "get", "lower_bound", "offline_offsets", "tensor_requests", "Member", "Sharing", "share", "fold_pads",
]
