"""Chains of elementwise ops against the TFLM wheel: results, in-place planning and TFLM's arena head."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.testing import Graph, Op, T, assert_same_as_tflm, graph_model, run_micronn, run_tflm, tflm_arena
from micronn.tflite import schema


def float_graph() -> bytes:
    """A gated residual: where(x > y, relu(x + y) * w, max(x, y) - y), then round and cast to int32 and back."""
    shape = (1, 4, 4, 3)
    f = {n: T(shape, "float32") for n in ("x", "y", "s", "p", "m", "d", "g", "r", "o")}
    tensors = {
        **f, "w": T((3,), "float32", data=np.array([0.5, -2.0, 3.0], np.float32)),
        "c": T(shape, "bool"), "nc": T(shape, "bool"), "i": T(shape, "int32"),
    }
    ops = [
        Op("ADD", ["x", "y"], ["s"], schema.options("ADD", fused_activation_function=1)),
        Op("MUL", ["s", "w"], ["p"]),
        Op("MAXIMUM", ["x", "y"], ["m"]),
        Op("SUB", ["m", "y"], ["d"]),
        Op("GREATER", ["x", "y"], ["c"]),
        Op("LOGICAL_NOT", ["c"], ["nc"]),
        Op("SELECT_V2", ["nc", "d", "p"], ["g"]),
        Op("ROUND", ["g"], ["r"]),
        Op("CAST", ["r"], ["i"]),
        Op("CAST", ["i"], ["o"]),
    ]
    return graph_model(Graph(tensors, ops, ["x", "y"], ["o", "c"]))


def int8_graph() -> bytes:
    """int8: (x + y) * x - y, squared difference with x, compared and selected, PReLU at the end."""
    shape = (1, 8, 8, 4)
    q = {"x": (0.05, 3), "y": (0.02, -7), "s": (0.06, 1), "p": (0.01, -5), "d": (0.03, 2), "q": (0.2, -128),
         "g": (0.03, 2), "o": (0.04, 0)}
    tensors = {n: T(shape, "int8", *sz) for n, sz in q.items()}
    tensors["c"] = T(shape, "bool")
    tensors["a"] = T((4,), "int8", 0.01, 0, data=np.array([10, -20, 30, 100], np.int8))
    ops = [
        Op("ADD", ["x", "y"], ["s"]),
        Op("MUL", ["s", "x"], ["p"]),
        Op("SUB", ["p", "y"], ["d"]),
        Op("SQUARED_DIFFERENCE", ["d", "x"], ["q"]),
        Op("LESS_EQUAL", ["d", "x"], ["c"]),
        Op("SELECT_V2", ["c", "d", "d"], ["g"]),
        Op("PRELU", ["g", "a"], ["o"]),
    ]
    return graph_model(Graph(tensors, ops, ["x", "y"], ["o", "q"]))


@pytest.mark.parametrize("build", [float_graph, int8_graph], ids=["float", "int8"])
def test_graph_matches_tflm(build) -> None:
    assert_same_as_tflm(build(), runs=3)


@pytest.mark.parametrize("build", [float_graph, int8_graph], ids=["float", "int8"])
@pytest.mark.parametrize("planner", ["tflm", "optimal"])
def test_every_planner_computes_tflms_bytes(build, planner: str) -> None:
    """micronn's own planner lets outputs overwrite dying inputs; the kernels must not care."""
    model = build()
    rng = np.random.default_rng(5)
    xs = [rng.uniform(-3, 3, (1, 4, 4, 3)).astype(np.float32) for _ in range(2)] if build is float_graph else \
        [rng.integers(-128, 128, (1, 8, 8, 4)).astype(np.int8) for _ in range(2)]
    it = Interpreter(model, planner=planner)
    it.allocate_tensors()
    for i, x in enumerate(xs):
        it.set_input(x, i)
    it.invoke()
    expected = run_tflm(model, xs)
    for k, e in enumerate(expected):
        assert it.get_output(k).tobytes() == e.tobytes()
    assert [o.tobytes() for o in run_micronn(model, xs)] == [e.tobytes() for e in expected]


@pytest.mark.parametrize("build", [float_graph, int8_graph], ids=["float", "int8"])
def test_head_equals_tflm(build) -> None:
    model = build()
    it = Interpreter(model, planner="tflm")
    it.allocate_tensors()
    assert it.head == tflm_arena(model)["head"]
