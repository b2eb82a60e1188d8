"""micronn's default planner: never above TFLM, exact on small instances, at the bound on the real models."""

from __future__ import annotations

import itertools
import random

import pytest
from conftest import ALL_MODELS, model_bytes

from micronn import Interpreter, planners
from micronn.planners import Plan, Request, lower_bound
from micronn.planners.greedy import GreedyPlanner, place
from micronn.planners.optimal import components


def _random_requests(rng: random.Random, n: int, horizon: int = 8) -> list[Request]:
    reqs = []
    for _ in range(n):
        a = rng.randint(0, horizon - 2)
        reqs.append(Request(16 * rng.randint(1, 6), a, rng.randint(a, min(a + 3, horizon))))
    return reqs


def test_exact_against_brute_force_on_small_instances() -> None:
    rng = random.Random(7)
    for _ in range(120):
        reqs = _random_requests(rng, rng.randint(3, 6))
        plan = planners.get("optimal").plan(reqs)
        plan.check()
        brute = min(Plan("b", reqs, place(reqs, list(p))).head for p in itertools.permutations(range(len(reqs))))
        assert plan.head == brute
        assert plan.head <= planners.get("tflm").plan(reqs).head


def test_greedy_variants_are_valid() -> None:
    rng = random.Random(3)
    for order in ("size", "area", "lifetime", "start"):
        for best_fit in (False, True):
            reqs = _random_requests(rng, 30, 20)
            plan = GreedyPlanner(order, best_fit).plan(reqs)
            plan.check()
            assert plan.head >= lower_bound(reqs)


def test_search_beats_tflm_where_its_order_fails() -> None:
    # TFLM's reverse-index tie-break puts the later 64-byte buffer at 0, and the 16 lands above the 48.
    reqs = [Request(48, 2, 3), Request(64, 4, 6), Request(16, 3, 4), Request(64, 1, 2)]
    assert planners.get("tflm").plan(reqs).head > lower_bound(reqs)
    plan = planners.get("optimal").plan(reqs)
    plan.check()
    assert plan.head == lower_bound(reqs) and plan.notes["gap_bytes"] == 0


def test_independent_time_sections_split() -> None:
    reqs = [Request(16, 0, 1), Request(16, 1, 2), Request(16, 4, 5), Request(16, 5, 6)]
    assert components(reqs) == [[0, 1], [2, 3]]


@pytest.mark.parametrize("name", ALL_MODELS)
def test_unshared_default_plan_reaches_the_bound_and_never_exceeds_tflm(name: str) -> None:
    ours = Interpreter(model_bytes(name), sharing=False)
    ours.allocate_tensors()
    theirs = Interpreter(model_bytes(name), planner="tflm")
    theirs.allocate_tensors()
    ours.plan.check()
    assert ours.head == lower_bound(ours.requests) <= theirs.head


def test_large_random_graph_plans_within_budget() -> None:
    rng = random.Random(11)
    reqs = []
    for _ in range(300):
        a = rng.randint(0, 250)
        reqs.append(Request(16 * rng.randint(1, 300), a, a + rng.choice([1, 1, 2, 3, 40])))
    plan = planners.OptimalPlanner(budget_s=0.3).plan(reqs)
    plan.check()
    assert plan.head <= planners.get("tflm").plan(reqs).head
    assert plan.notes["gap_bytes"] == plan.head - lower_bound(reqs) >= 0
