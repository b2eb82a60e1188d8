"""Plans do not depend on the clock: the same model gets the same plan, arena and offline file on a busy machine.

The searches are bounded by counts (nodes, trials), never by seconds, so a clock that races ahead (each read
10 s later than the last) must change nothing; and ``allocate_tensors()`` plans once, so a second prepare can
never reach a different plan than the one its arena was sized for (issue 12).
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from conftest import MODELS

import micronn
from micronn import ArenaTooSmallError, Interpreter, OpResolver, PrepareError, planners
from micronn.analyze import plan_report
from micronn.planners import Request, Sharing
from micronn.testing import T, op_model
from micronn.tflite.reader import read

TEST_MODELS = Path(__file__).resolve().parents[1] / "models"
# bundled and test models with memory sharing, PAD folding, skip connections and control flow
PLANNED = [MODELS / "person_detect.tflite", MODELS / "tiny_unet.tflite", MODELS / "micro_speech_quantized.tflite",
           TEST_MODELS / "mobilenet_v2_pad_int8.tflite", TEST_MODELS / "vnet_like_int8.tflite",
           TEST_MODELS / "kws_ds_cnn_int16x8.tflite", TEST_MODELS / "lstm_keras3_while_float.tflite"]
CLOCKS = ["perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "time", "time_ns", "process_time",
          "process_time_ns", "thread_time", "thread_time_ns"]


class _RacingClock:
    """Every read of any clock is 10 s after the previous one: a machine so loaded that any deadline has passed."""

    def __init__(self) -> None:
        self.now, self.reads = time.time(), 0

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        for name in CLOCKS:
            ns = name.endswith("_ns")
            monkeypatch.setattr(time, name, lambda ns=ns: self._read(ns))

    def _read(self, ns: bool) -> float | int:
        self.reads += 1
        self.now += 10.0
        return int(self.now * 1e9) if ns else self.now


@pytest.fixture
def racing_clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[_RacingClock]:
    clock = _RacingClock()
    clock.install(monkeypatch)
    yield clock


def _large_instance() -> list[Request]:
    """The 300-buffer instance whose exact search runs out of budget (test_optimal uses the same one)."""
    rng = random.Random(11)
    reqs = []
    for _ in range(300):
        a = rng.randint(0, 250)
        reqs.append(Request(16 * rng.randint(1, 300), a, a + rng.choice([1, 1, 2, 3, 40])))
    return reqs


def _allocated(path: Path, **kw) -> Interpreter:
    it = Interpreter(path.read_bytes(), **kw)
    it.allocate_tensors()
    return it


def _layout(it: Interpreter) -> tuple:
    return it.head, it.tail, it.arena_size, it.plan.offsets, it.requests, it.shared_groups, it.plan.notes


def test_optimal_search_stops_on_its_node_budget_not_the_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    reqs = _large_instance()
    calm = planners.OptimalPlanner().plan(reqs)
    assert calm.notes["budget_exhausted"] and calm.notes["search_nodes"] == planners.optimal.SEARCH_NODES
    clock = _RacingClock()
    clock.install(monkeypatch)
    busy = planners.OptimalPlanner().plan(reqs)
    assert (busy.offsets, busy.head, busy.notes) == (calm.offsets, calm.head, calm.notes)
    assert clock.reads == 0  # the planner never looks at a clock
    assert calm.notes["gap_bytes"] == calm.head - planners.lower_bound(reqs) > 0  # stopped early, and says so


def test_legacy_budget_in_seconds_is_a_node_count() -> None:
    assert planners.OptimalPlanner(0.5).max_nodes == round(0.5 * planners.optimal.NODES_PER_SECOND)
    reqs = _large_instance()
    assert planners.OptimalPlanner(max_nodes=0).plan(reqs).head == planners.get("tflm").plan(reqs).head
    with pytest.raises(ValueError):
        planners.OptimalPlanner(0.5, max_nodes=10)


def test_sharing_tries_candidates_by_count_not_the_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    it = _allocated(TEST_MODELS / "mobilenet_v2_pad_int8.tflite")
    sg, base = it.subgraph, it.base_requests
    calm = planners.share(sg, base, Sharing())
    clock = _RacingClock()
    clock.install(monkeypatch)
    assert planners.share(sg, base, Sharing()) == calm
    assert clock.reads == 0
    assert calm[1]  # this model shares memory, so the budget mattered to the result
    assert planners.share(sg, base, Sharing(), budget=0) == (base, [])  # no trials: nothing shared


@pytest.mark.parametrize("path", PLANNED, ids=lambda p: p.stem)
def test_allocate_gives_the_same_plan_under_a_racing_clock(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calm = _layout(_allocated(path))
    _RacingClock().install(monkeypatch)
    busy = _allocated(path)
    assert _layout(busy) == calm
    x = [np.zeros(d["shape"], d["dtype"]) for d in busy.get_input_details()]
    for i, v in enumerate(x):
        busy.set_input(v, i)
    busy.invoke()


@pytest.mark.parametrize("name", ["person_detect.tflite", "mobilenet_v2_pad_int8.tflite"])
def test_offline_plan_file_is_the_same_under_a_racing_clock(name: str, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    path = MODELS / name if (MODELS / name).exists() else TEST_MODELS / name
    calm = plan_report(read(path.read_bytes()), offline_out=str(tmp_path / "calm.tflite"))
    _RacingClock().install(monkeypatch)
    busy = plan_report(read(path.read_bytes()), offline_out=str(tmp_path / "busy.tflite"))
    assert (tmp_path / "calm.tflite").read_bytes() == (tmp_path / "busy.tflite").read_bytes()
    assert busy["head_bytes"] == calm["head_bytes"] and busy["offline"]["head_bytes"] == calm["offline"]["head_bytes"]


def _count_planning(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Count calls of the optimal planner and of the sharing search."""
    calls = {"plan": 0, "share": 0}
    plan, share = planners.OptimalPlanner.plan, planners.share

    def counted_plan(self, requests):
        calls["plan"] += 1
        return plan(self, requests)

    def counted_share(*a, **kw):
        calls["share"] += 1
        return share(*a, **kw)

    monkeypatch.setattr(planners.OptimalPlanner, "plan", counted_plan)
    monkeypatch.setattr(planners, "share", counted_share)
    return calls


@pytest.mark.parametrize("path", PLANNED[:2] + PLANNED[3:4], ids=lambda p: p.stem)
def test_allocate_plans_once(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _count_planning(monkeypatch)
    sized = _allocated(path, sharing=False)  # sized by a measuring prepare: still one plan
    assert calls == {"plan": 1, "share": 1}
    calls.update(plan=0, share=0)
    _allocated(path, arena_size=sized.arena_size, sharing=False)
    assert calls == {"plan": 1, "share": 1}
    # with sharing the planner also plans the unshared requests once, to compare: the same with or without arena
    calls.update(plan=0, share=0)
    sized = _allocated(path)
    without_arena = dict(calls)
    calls.update(plan=0, share=0)
    _allocated(path, arena_size=sized.arena_size)
    assert calls == without_arena and calls["share"] == 1 and calls["plan"] <= 2


def test_a_starved_second_planning_cannot_break_allocate(monkeypatch: pytest.MonkeyPatch) -> None:
    # The old crash: the arena was sized by a first planning, and a second one (on a busy machine, out of time)
    # shared less, overflowed that arena and left every tensor view unset. Any later planning now gets nothing.
    path = MODELS / "person_detect.tflite"
    calm = _allocated(path)
    share, calls = planners.share, []

    def starved_after_the_first(*a, **kw):
        calls.append(1)
        return share(*a[:4], 0) if len(calls) > 1 else share(*a, **kw)  # 0: no budget (old or new spelling)

    monkeypatch.setattr(planners, "share", starved_after_the_first)
    it = Interpreter(path.read_bytes())
    it.allocate_tensors()
    assert len(calls) == 1 and _layout(it) == _layout(calm)
    x = np.zeros((1, 96, 96, 1), np.int8)
    for interp in (it, calm):
        interp.set_input(x, 0)
        interp.invoke()
    assert it.get_output(0).tobytes() == calm.get_output(0).tobytes()


def _fickle_model(what: str) -> tuple[bytes, OpResolver]:
    """A one-op model whose kernel asks for more memory each time it is prepared."""

    class Fickle(micronn.Kernel):
        op, dtypes = "FICKLE", frozenset({"float32"})
        prepared = 0

        def prepare(self, node: micronn.Node) -> None:
            Fickle.prepared += 1
            if what == "scratch":
                node.request_scratch(16 * Fickle.prepared)
            else:
                node.persistent(np.zeros(16 * Fickle.prepared, np.uint8))

        def invoke(self, node: micronn.Node) -> None:
            node.output(0)[...] = node.input(0)

    return op_model("FICKLE", [T((1, 4), "float32")], [T((1, 4), "float32")]), OpResolver.all().add(Fickle)


def test_prepare_asking_for_other_head_memory_is_a_clear_error() -> None:
    model, resolver = _fickle_model("scratch")
    it = Interpreter(model, resolver=resolver)
    with pytest.raises(PrepareError, match="prepared a second time"):
        it.allocate_tensors()
    with pytest.raises(PrepareError):  # still not half built: using it tries again and fails the same way
        it.set_input(np.zeros((1, 4), np.float32), 0)
    Interpreter(model, 1024, resolver=resolver).allocate_tensors()  # a given arena prepares once: fine


def test_prepare_taking_more_tail_is_arena_too_small_not_a_half_built_interpreter() -> None:
    model, resolver = _fickle_model("persistent")
    it = Interpreter(model, resolver=resolver)
    with pytest.raises(ArenaTooSmallError):
        it.allocate_tensors()
    with pytest.raises(ArenaTooSmallError):
        it.set_input(np.zeros((1, 4), np.float32), 0)
