"""A chain of ADD_N, SIN, COS, FLOOR_MOD, REVERSE_V2, DYNAMIC_UPDATE_SLICE, FLOOR_DIV, EMBEDDING_LOOKUP,
BROADCAST_ARGS and REDUCE_ALL against the TFLM wheel: results under TFLM's plan and micronn's own, and the
arena head of TFLM's plan."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.testing import Graph, Op, T, graph_model, run_tflm, tflm_arena

SHAPE = (2, 3, 4)


def chain() -> bytes:
    f = {n: T(SHAPE, "float32") for n in ("x", "y", "s", "a", "b", "m", "r", "d", "o")}
    tensors = {
        **f,
        "c": T((4,), "float32", data=np.array([0.75, -1.5, 2.0, 0.3], np.float32)),
        "axes": T((2,), "int32", data=np.array([1, 2], np.int32)),
        "u": T((1, 2, 4), "float32"),
        "start": T((3,), "int32"),
        "ids": T((5,), "int32", data=np.array([3, 0, 7, 7, 1], np.int32)),
        "table": T((8, 3), "int8", 0.125, 0, data=np.arange(24, dtype=np.int8).reshape(8, 3) - 12),
        "e": T((5, 3), "float32"),
        "s1": T((2,), "int32", data=np.array([3, 1], np.int32)),
        "s2": T((3,), "int32", data=np.array([2, 1, 4], np.int32)),
        "bshape": T((3,), "int32"),
        "gt": T(SHAPE, "bool"),
        "all_axes": T((1,), "int32", data=np.array([-1], np.int32)),
        "every": T((2, 3), "bool"),
    }
    ops = [
        Op("ADD_N", ["x", "y", "x"], ["s"]),
        Op("SIN", ["s"], ["a"]),
        Op("COS", ["a"], ["b"]),
        Op("FLOOR_MOD", ["b", "c"], ["m"]),
        Op("REVERSE_V2", ["m", "axes"], ["r"]),
        Op("DYNAMIC_UPDATE_SLICE", ["r", "u", "start"], ["d"]),
        Op("FLOOR_DIV", ["d", "c"], ["o"]),
        Op("EMBEDDING_LOOKUP", ["ids", "table"], ["e"]),
        Op("BROADCAST_ARGS", ["s1", "s2"], ["bshape"]),
        Op("GREATER", ["o", "x"], ["gt"]),
        Op("REDUCE_ALL", ["gt", "all_axes"], ["every"]),
    ]
    return graph_model(Graph(tensors, ops, ["x", "y", "u", "start"], ["o", "e", "bshape", "every"]))


def inputs(seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(-4, 4, SHAPE).astype(np.float32), rng.uniform(-4, 4, SHAPE).astype(np.float32),
            rng.uniform(-9, 9, (1, 2, 4)).astype(np.float32), rng.integers(-2, 4, 3).astype(np.int32)]


@pytest.mark.parametrize("planner", ["tflm", "optimal"])
def test_chain_matches_tflm(planner: str) -> None:
    model = chain()
    it = Interpreter(model, planner=planner)
    it.allocate_tensors()
    for seed in range(3):
        xs = inputs(seed)
        for i, x in enumerate(xs):
            it.set_input(x, i)
        it.invoke()
        for k, e in enumerate(run_tflm(model, xs)):
            assert it.get_output(k).tobytes() == e.tobytes(), f"output {k}, seed {seed}"


def test_chain_head_equals_tflm() -> None:
    model = chain()
    it = Interpreter(model, planner="tflm")
    it.allocate_tensors()
    assert it.head == tflm_arena(model)["head"]
