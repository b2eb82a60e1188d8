"""The search keeps within its MAC budget, never returns a bigger arena, and its answer computes the same bytes."""

from __future__ import annotations

import pytest
from test_patch_transform import chain, outputs

from micronn.errors import MicronnError
from micronn.ir import Padding, random_inputs
from micronn.patch import search
from micronn.testing import graph_ir
from micronn.tflite.writer import write

S = Padding.SAME
# large early layers, then a strided cut: the shape patch-based execution is for
LAYERS = [("conv", 16, 3, 1, 1, S), ("dw", 3, 1, 1, S), ("conv", 16, 1, 1, 1, S), ("dw", 3, 2, 1, S),
          ("conv", 4, 1, 1, 1, S)]


@pytest.fixture(scope="module")
def model():
    return graph_ir(chain(LAYERS, h=40, w=24, c=3))


@pytest.mark.parametrize("budget", [0.0, 0.05, 0.5])
def test_search_respects_max_extra_macs(model, budget: float) -> None:
    res = search(model, budget)
    assert res.tried or budget == 0.0
    assert all(c.extra_macs <= budget * res.macs for c in res.tried)
    assert res.best.extra_macs <= budget * res.macs
    assert res.best.total <= res.before.total
    xs = random_inputs(model, 3)
    assert outputs(res.model, xs) == outputs(model, xs)


def test_search_finds_a_smaller_arena(model) -> None:
    res = search(model, 0.5)
    assert res.patched and res.best.total < res.before.total
    assert res.as_dict()["after"]["stripes"] == res.best.n >= 2


def test_search_from_a_file_and_bad_budgets(model) -> None:
    assert search(write(model), 0.5).best.total == search(model, 0.5).best.total
    for bad in (-0.1, True, "0.2", float("nan")):
        with pytest.raises(MicronnError, match="max_extra_macs"):
            search(model, bad)


def test_unequal_stripes_on_person_detect_are_smaller_and_exact() -> None:
    """The refinement moves rows between stripes: on person_detect it beats every equal split it started from, and
    the model it returns (and the same split rebuilt from ``Choice.split``) computes the original's bytes on micronn
    and on the TFLM wheel."""
    from micronn import Interpreter
    from micronn.models import bundled_model
    from micronn.patch import patch
    from micronn.testing import run_micronn, run_tflm
    from micronn.tflite.reader import read

    data = bundled_model("person_detect")
    equal = search(data, 0.05, stripes=(8,), refine=0, stages=1)
    res = search(data, 0.05, stripes=(8,), refine=6, stages=1)
    b = res.best
    assert equal.best.heights is None and b.heights is not None and sum(b.heights) == 24 and len(b.heights) == 8
    assert b.total < equal.best.total and b.extra_macs <= 0.05 * res.macs
    assert len(res.tried) <= len(equal.tried) + 6
    rebuilt = patch(read(data), b.start, b.end, b.split)
    it = Interpreter(rebuilt)
    assert (it.head, it.tail) == (b.head, b.tail)
    for seed in (0, 1):
        xs = random_inputs(read(data), seed)
        want = [o.tobytes() for o in run_tflm(data, xs)]
        assert [o.tobytes() for o in run_micronn(write(res.model), xs)] == want
        assert [o.tobytes() for o in run_tflm(write(rebuilt), xs)] == want
