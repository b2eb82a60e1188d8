"""Multi-stage patching: a later stage slices an earlier stage's joined output. The chained model computes the
original's bytes on micronn and on the TFLM wheel, the later stage's slices are views of the earlier join, and the
search finds the two-stage plan ``benchmarks/memory.py`` prints for person_detect."""

from __future__ import annotations

import pytest
from test_patch_transform import chain

from micronn import Interpreter
from micronn.errors import MicronnError
from micronn.ir import Padding, random_inputs
from micronn.models import bundled_model
from micronn.patch import PatchError, Stage, macs, patch, patch_stages, search
from micronn.planners import Sharing
from micronn.testing import graph_ir, run_micronn, run_tflm
from micronn.tflite.reader import read
from micronn.tflite.writer import write

S, V = Padding.SAME, Padding.VALID
# two strided cuts, SAME padding throughout (odd sizes, so SAME pads unevenly), then a head
LAYERS = [("conv", 8, 3, 1, 1, S), ("dw", 3, 2, 1, S), ("conv", 16, 1, 1, 1, S), ("dw", 3, 1, 1, S),
          ("dw", 3, 2, 1, S), ("conv", 4, 1, 1, 1, V)]


@pytest.fixture(scope="module")
def synthetic():
    return graph_ir(chain(LAYERS, h=29, w=13, c=3))


def _bytes(data: bytes, xs: list) -> tuple[list[bytes], list[bytes]]:
    return [o.tobytes() for o in run_micronn(data, xs)], [o.tobytes() for o in run_tflm(data, xs)]


@pytest.mark.parametrize("splits", [(2, 2), (3, 5), (7, 4), ((1, 6, 8), (3, 1, 3, 1)), (10, 8)])
def test_two_stages_are_byte_identical_on_micronn_and_tflm(synthetic, splits) -> None:
    stages = [Stage(0, 1, splits[0]), Stage(2, 4, splits[1])]
    pm = patch_stages(synthetic, stages)
    assert [op.op for op in pm.main.operators].count("CONCATENATION") == 2
    data, orig = write(pm), write(synthetic)
    for seed in (0, 1):
        xs = random_inputs(synthetic, seed)
        want = [o.tobytes() for o in run_tflm(orig, xs)]
        got_micronn, got_tflm = _bytes(data, xs)
        assert got_micronn == want and got_tflm == want
        # also without the slice sharing (every slice a copy): the plan changes, the bytes must not
        it = Interpreter(pm, sharing=Sharing(slices=False))
        for i, x in enumerate(xs):
            it.set_input(x, i)
        it.invoke()
        assert it.get_output(0).tobytes() == want[0]


def test_stage_order_and_overlap(synthetic) -> None:
    a, b = Stage(0, 1, 3), Stage(2, 4, 2)
    assert write(patch_stages(synthetic, [b, a])) == write(patch_stages(synthetic, [a, b]))
    assert write(patch_stages(synthetic, [a])) == write(patch(synthetic, 0, 1, 3))
    with pytest.raises(PatchError, match="share operators"):
        patch_stages(synthetic, [Stage(0, 2, 2), Stage(2, 4, 2)])
    with pytest.raises(PatchError, match="no stage"):
        patch_stages(synthetic, [])


def _two_stage_person_detect():
    return patch_stages(read(bundled_model("person_detect")), [Stage(0, 3, 8), Stage(4, 7, 4)])


def test_later_stage_slices_are_views_of_the_earlier_join() -> None:
    """Stage 2's row slices of stage 1's joined output share its bytes (one group holds the join and the slices),
    and with them the head is below what layers 4-5 alone need after a single stage (19,232 B)."""
    pm = _two_stage_person_detect()
    it = Interpreter(pm)
    it.allocate_tensors()
    sg = it.model.main  # PADs folded: the interpreter's own graph
    first_join = next(op for op in sg.operators if op.op == "CONCATENATION").outputs[0]
    slices = [op.outputs[0] for op in sg.operators if op.op == "STRIDED_SLICE" and op.inputs[0] == first_join]
    assert len(slices) == 4
    group = next(set(g) for g in it.shared_groups if first_join in g)
    assert set(slices) <= group
    offsets = {m.tensor: m.rel for r in it.requests if r.members for m in r.members}
    rows = sg.tensors[first_join].shape[2] * sg.tensors[first_join].shape[3]
    for s in slices:  # a view sits at its first row's byte in the join
        op = next(o for o in sg.operators if o.outputs[0] == s)
        assert offsets[s] - offsets[first_join] == int(sg.tensors[op.inputs[1]].data[1]) * rows
    assert it.head < 19_232
    single = Interpreter(patch(read(bundled_model("person_detect")), 0, 3, 8))
    single.allocate_tensors()
    assert it.head < single.head


def test_two_stage_person_detect_is_byte_identical_on_micronn_and_tflm() -> None:
    data = bundled_model("person_detect")
    patched = write(_two_stage_person_detect())
    for seed in (0, 1):
        xs = random_inputs(read(data), seed)
        want = [o.tobytes() for o in run_tflm(data, xs)]
        got_micronn, got_tflm = _bytes(patched, xs)
        assert got_micronn == want and got_tflm == want


def test_search_chains_stages_on_person_detect() -> None:
    """``search`` with the benchmark's defaults (what ``benchmarks/memory.py`` prints as patched_head/tail/total):
    two stages, at most 40,000 B in all, within 20 % more MACs, and the stages rebuild the same plan and bytes."""
    data = bundled_model("person_detect")
    res = search(data)
    b = res.best
    assert len(b.stages) == 2 and b.stages[0].end < b.stages[1].start
    assert b.total <= 40_000 and b.total == b.head + b.tail < res.before.total
    assert b.extra_macs <= 0.2 * res.macs and b.extra_macs == macs(res.model) - res.macs
    rebuilt = patch_stages(read(data), b.stages)
    it = Interpreter(rebuilt)
    it.allocate_tensors()
    assert (it.head, it.tail) == (b.head, b.tail)
    assert write(rebuilt) == write(res.model)
    splits = [s.split if isinstance(s.split, int) else list(s.split) for s in b.stages]  # (JSON: heights as a list)
    want = [{"ops": [s.start, s.end], "split": sp} for s, sp in zip(b.stages, splits)]
    assert res.as_dict()["after"]["stages"] == want
    assert b.total < min(c.total for c in res.tried if len(c.stages) == 1)  # better than any single stage it tried
    xs = random_inputs(read(data), 3)
    assert _bytes(write(res.model), xs)[1] == [o.tobytes() for o in run_tflm(data, xs)]


def test_search_starts_runs_after_a_shrinking_layer() -> None:
    """vww_mobilenet's first convolution shrinks its 27,648 B input: running the stripes from the layer after it
    leaves the input's bytes as the only peak (at most half of TFLM's 103,536 B arena in all)."""
    from pathlib import Path

    data = (Path(__file__).resolve().parents[1] / "models" / "vww_mobilenet_96x96x3_int8.tflite").read_bytes()
    res = search(data, stripes=(5, 6), refine=0, stages=1)
    b = res.best
    assert (b.start, b.end) == (1, 3)
    assert b.total <= 103_536 // 2
    xs = random_inputs(read(data), 0)
    assert _bytes(write(res.model), xs)[1] == [o.tobytes() for o in run_tflm(data, xs)]


def test_search_stages_must_be_positive(synthetic) -> None:
    for bad in (0, True, 1.5):
        with pytest.raises(MicronnError, match="stages"):
            search(synthetic, stages=bad)


def test_two_stage_person_detect_runs_on_the_device_runtime() -> None:
    """The host-driven device runtime lowers both stages' in-place slices and joins (views of the earlier join
    need no copy) and computes the wheel's bytes."""
    pytest.importorskip("ziglang")
    from micronn.micro import run_model

    data = bundled_model("person_detect")
    xs = random_inputs(read(data), 2)
    got = run_model(write(_two_stage_person_detect()), "host", xs)["outputs"]
    assert [o.tobytes() for o in got] == [o.tobytes() for o in run_tflm(data, xs)]
