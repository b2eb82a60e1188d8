"""The sharing patch-based execution relies on (row slices as views, CONCATENATION inputs in their slot, the joined
output streamed over the sliced image) changes no plan of a model without it, and is used on patched ones."""

from __future__ import annotations

from pathlib import Path

import pytest

import micronn
from micronn import Interpreter
from micronn.models import bundled_model
from micronn.patch import patch
from micronn.planners import OptimalPlanner, Sharing, sharing
from micronn.tflite.reader import read

ROOT = Path(__file__).resolve().parents[2]
ALL = sorted((Path(micronn.__file__).parent / "models").glob("*.tflite")) + sorted((ROOT / "tests" / "models")
                                                                                      .glob("*.tflite"))


def _plan(model, sharing: Sharing) -> tuple:
    it = Interpreter(model, sharing=sharing)
    it.allocate_tensors()
    return it.head, [(r.label, o) for r, o in zip(it.plan.requests, it.plan.offsets)]


@pytest.mark.parametrize("path", ALL, ids=[p.stem for p in ALL])
def test_unpatched_plans_are_unchanged(path: Path) -> None:
    try:
        before = _plan(path.read_bytes(), Sharing(slices=False))
    except micronn.MicronnError:
        pytest.skip("micronn does not run this model")
    assert _plan(path.read_bytes(), Sharing()) == before


def test_none_shares_nothing() -> None:
    assert not Sharing.none().slices and not Sharing.none().any


def test_patched_model_writes_stripes_into_the_joined_output() -> None:
    pm = patch(read(bundled_model("person_detect")), 0, 3, 10)
    on, off = Interpreter(pm), Interpreter(pm, sharing=Sharing(slices=False))
    on.allocate_tensors()
    off.allocate_tensors()
    concat = next(op for op in pm.main.operators if op.op == "CONCATENATION")
    joined = next(set(g) for g in on.shared_groups if concat.outputs[0] in g)
    assert set(concat.inputs) <= joined  # every stripe written in its slot of the joined output
    assert on.head < off.head


def test_views_and_streaming_place_the_output_over_the_consumed_input() -> None:
    """Merged by hand (the quick planners decide whether the interpreter keeps them): one rigid group holds the
    input, its row slices (views: same bytes), the stripes and the joined output, and a real plan of it is valid."""
    pm = patch(read(bundled_model("person_detect")), 0, 7, 4)
    it = Interpreter(pm, sharing=False)
    it.allocate_tensors()
    sg, reqs = pm.main, it.base_requests
    concats = sharing.concat_candidates(sg, reqs, Sharing())
    views = sharing.view_candidates(sg, reqs, Sharing())
    streams = sharing.stream_candidates(sg, concats)
    assert len(concats) == 1 and len(views) == 4 and streams == [(sg.inputs[0], concats[0][0])]
    merged, groups = sharing.merge(reqs, [], concats, streams, views)
    group = next(g for g in groups if sg.inputs[0] in g)
    assert {concats[0][0], *(v[1] for v in views), *(p for p, _ in concats[0][1])} <= set(group)
    compound = next(r for r in merged if r.members and r.members[0].tensor in group)
    x = sg.tensors[sg.inputs[0]].nbytes
    assert compound.size < x + sg.tensors[concats[0][0]].nbytes  # the output streams over the input
    plan = OptimalPlanner().plan(merged)
    plan.check()
    assert plan.head < OptimalPlanner().plan(reqs).head
