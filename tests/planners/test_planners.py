"""TFLM's greedy planner decision for decision, the linear planner, lifetimes and the lower bound."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import model_path

from micronn import ModelError, planners, read
from micronn.planners import Request, lower_bound, offline_offsets, tensor_requests


def test_largest_first_then_first_fit() -> None:
    reqs = [Request(32, 0, 1), Request(64, 1, 2), Request(16, 2, 3)]
    plan = planners.get("tflm").plan(reqs)
    plan.check()
    # 64 at 0; 32 overlaps it in time -> above it at 64; 16 overlaps the 64 only -> at 64 (the 32 is dead by then)
    assert plan.offsets == [64, 0, 64] and plan.head == 96


def test_equal_sizes_break_ties_by_reverse_request_order() -> None:
    reqs = [Request(16, 0, 5), Request(16, 0, 5), Request(16, 0, 5)]
    assert planners.get("tflm").plan(reqs).offsets == [32, 16, 0]


def test_gap_between_placed_buffers_is_used() -> None:
    reqs = [Request(48, 0, 4), Request(32, 0, 1), Request(32, 3, 4), Request(16, 2, 2), Request(32, 0, 4)]
    plan = planners.get("tflm").plan(reqs)
    plan.check()
    assert plan.head == lower_bound(reqs) == 48 + 32 + 32


def test_offline_offsets_are_kept() -> None:
    reqs = [Request(64, 0, 1, offline=128), Request(64, 0, 1)]
    plan = planners.get("tflm").plan(reqs)
    assert plan.offsets == [128, 0]


def test_linear_planner_never_reuses() -> None:
    reqs = [Request(16, 0, 0), Request(32, 1, 1), Request(48, 2, 2)]
    plan = planners.get("linear").plan(reqs)
    assert plan.offsets == [0, 16, 48] and plan.head == 96 and lower_bound(reqs) == 48


def test_unknown_planner_is_a_clear_error() -> None:
    with pytest.raises(Exception, match="unknown planner 'nope'"):
        planners.get("nope")


def test_lifetimes_follow_tflm_rules() -> None:
    sg = read(model_path("hello_world_int8")).main
    reqs = {r.tensor: r for r in tensor_requests(sg)}
    n = len(sg.operators)
    assert (reqs[sg.inputs[0]].first, reqs[sg.inputs[0]].last) == (0, 1)  # input: from the start to its reader
    assert reqs[sg.outputs[0]].last == n  # output: to the end
    inner = sg.operators[0].outputs[0]
    assert (reqs[inner].first, reqs[inner].last) == (1, 2)
    assert all(r.size % 16 == 0 for r in reqs.values())


def test_scratch_lives_during_its_operator() -> None:
    sg = read(model_path("hello_world_int8")).main
    reqs = tensor_requests(sg, {1: [100]})
    s = reqs[-1]
    assert s.scratch == (1, 0) and (s.first, s.last, s.size) == (2, 2, 112)


def test_offline_metadata_parsing() -> None:
    m = read(model_path("hello_world_int8"))
    n = len(m.main.tensors)
    offs = [-1] * n
    offs[m.main.inputs[0]] = 64
    m.metadata["OfflineMemoryAllocation"] = np.array([1, 1, n, *offs], "<i4").tobytes()
    assert offline_offsets(m) == offs
    m.metadata["OfflineMemoryAllocation"] = np.array([1, 1, n + 1, *offs], "<i4").tobytes()
    with pytest.raises(ModelError, match="offsets"):
        offline_offsets(m)
