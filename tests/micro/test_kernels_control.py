"""Device kernels for control flow and what loops use: WHILE (its subgraphs as lists of kernel calls), the
comparisons and logical ops of a condition, float32 ADD/SUB/MUL/LOGISTIC/TANH, GATHER and SPLIT.

Each model runs through the host-driven runtime (natively and on the emulated cores) and must give micronn's
interpreter's bytes; the Keras-3 LSTM (a WHILE loop over float gates) also the TFLM wheel's. A GATHER position
outside its axis ends the device run in an error, as the interpreter's invoke does.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import InvokeError
from micronn.ir import random_inputs
from micronn.micro import lower, run_model
from micronn.testing import Graph, Op, T, graph_model, op_model, run_tflm
from micronn.tflite.reader import read

ROOT = Path(__file__).resolve().parents[2]
WHILE_LSTM = ROOT / "tests" / "models" / "lstm_keras3_while_float.tflite"
EMULATED = ["cortex-m4", "riscv32"] if importlib.util.find_spec("unicorn") else []
pytestmark = pytest.mark.skipif(importlib.util.find_spec("ziglang") is None, reason="ziglang is not installed")


def interpreter_outputs(model: bytes, inputs: list[np.ndarray]) -> list[np.ndarray]:
    it = Interpreter(model)
    for i, x in enumerate(inputs):
        it.set_input(x, i)
    it.invoke()
    return [it.get_output(i).copy() for i in range(len(it.model.main.outputs))]


def check(model: bytes, target: str, inputs: list[np.ndarray] | None = None) -> list[np.ndarray]:
    xs = inputs if inputs is not None else random_inputs(read(model), seed=5)
    got = run_model(model, target, xs)["outputs"]
    want = interpreter_outputs(model, xs)
    assert [g.tobytes() for g in got] == [w.tobytes() for w in want]
    return got


def counted_loop(limit: int, width: int = 6) -> bytes:
    """i = 0; while i < limit and i < 100: x = tanh(x * w + b); i += 1 (int32 counter, float32 state)."""
    rng = np.random.default_rng(limit)
    main = Graph({"x": T((1, width), "float32"), "i0": T((1,), "int32", data=[0]),
                  "i_out": T((1,), "int32"), "x_out": T((1, width), "float32")},
                 [Op("WHILE", ["i0", "x"], ["i_out", "x_out"], {"cond_subgraph_index": 1, "body_subgraph_index": 2})],
                 ["x"], ["x_out", "i_out"])
    cond = Graph({"i": T((1,), "int32"), "s": T((1, width), "float32"), "n": T((1,), "int32", data=[limit]),
                  "cap": T((), "int32", data=100), "a": T((1,), "bool"), "b": T((1,), "bool"),
                  "go": T((1,), "bool")},
                 [Op("LESS", ["i", "n"], ["a"]), Op("LESS", ["i", "cap"], ["b"]),
                  Op("LOGICAL_AND", ["a", "b"], ["go"])], ["i", "s"], ["go"])
    body = Graph({"i": T((1,), "int32"), "s": T((1, width), "float32"),
                  "one": T((1,), "int32", data=[1]), "i2": T((1,), "int32"),
                  "w": T((1, width), "float32", data=rng.uniform(-2, 2, (1, width))),
                  "b": T((width,), "float32", data=rng.uniform(-1, 1, width)),
                  "p": T((1, width), "float32"), "q": T((1, width), "float32"), "s2": T((1, width), "float32")},
                 [Op("ADD", ["i", "one"], ["i2"]), Op("MUL", ["s", "w"], ["p"]), Op("ADD", ["p", "b"], ["q"]),
                  Op("TANH", ["q"], ["s2"])], ["i", "s"], ["i2", "s2"])
    return graph_model(main, cond, body)


def passed_loop(limit: int, width: int = 6) -> bytes:
    """i = 0; while i < limit and i < 100: x = tanh(x * v); i += 1, with v a state the body passes through unchanged
    (and reads every iteration) and the condition never reads."""
    main = Graph({"x": T((1, width), "float32"), "v": T((1, width), "float32"), "i0": T((1,), "int32", data=[0]),
                  "i_out": T((1,), "int32"), "x_out": T((1, width), "float32"), "v_out": T((1, width), "float32")},
                 [Op("WHILE", ["i0", "x", "v"], ["i_out", "x_out", "v_out"],
                     {"cond_subgraph_index": 1, "body_subgraph_index": 2})], ["x", "v"], ["x_out", "i_out"])
    cond = Graph({"i": T((1,), "int32"), "s": T((1, width), "float32"), "v": T((1, width), "float32"),
                  "n": T((1,), "int32", data=[limit]), "cap": T((), "int32", data=100), "a": T((1,), "bool"),
                  "b": T((1,), "bool"), "go": T((1,), "bool")},
                 [Op("LESS", ["i", "n"], ["a"]), Op("LESS", ["i", "cap"], ["b"]),
                  Op("LOGICAL_AND", ["a", "b"], ["go"])], ["i", "s", "v"], ["go"])
    body = Graph({"i": T((1,), "int32"), "s": T((1, width), "float32"), "v": T((1, width), "float32"),
                  "one": T((1,), "int32", data=[1]), "i2": T((1,), "int32"), "p": T((1, width), "float32"),
                  "s2": T((1, width), "float32")},
                 [Op("ADD", ["i", "one"], ["i2"]), Op("MUL", ["s", "v"], ["p"]), Op("TANH", ["p"], ["s2"])],
                 ["i", "s", "v"], ["i2", "s2", "v"])
    return graph_model(main, cond, body)


def while_elisions(model: bytes) -> list[tuple[int, int, int]]:
    it = Interpreter(model)
    it.allocate_tensors()
    index = next(i for i, op in enumerate(it.model.main.operators) if op.op == "WHILE")
    o = lower._Op(it, index, lower._placements(it, 0), 0)
    return lower._while_elisions(o, o.k.cond.index, o.k.body.index)


@pytest.mark.parametrize("target", ["host", *EMULATED[:1]])
def test_passed_state_loop(target: str) -> None:
    """The body's passed-through input v is copied in once; the bytes of it the loop writes over between body runs
    (here the condition's counter, which this plan places over part of it) are restored every iteration, as v is
    read every iteration: the interpreter's and the wheel's bytes. The condition never reads v or x: no copies."""
    model = passed_loop(5)
    flags = [f for f, _, _ in while_elisions(model)]
    assert flags == [0, 1, 3]
    _, lo, hi = while_elisions(model)[2]
    assert 0 <= lo < hi <= 24  # a restore is needed: dropping it fails the bytes below
    xs = random_inputs(read(model), seed=3)
    got = check(model, target, xs)
    assert [g.tobytes() for g in got] == [w.tobytes() for w in run_tflm(model, xs)]


def test_keras_lstm_while_loop_copies_its_sequence_once() -> None:
    """The Keras-3 LSTM's 28-step sequence (3136 bytes) is a state the body passes through: after the first
    iteration only the bytes the condition's temporaries share with it are copied in again, none back, none into
    the condition (which reads only its counters)."""
    if not WHILE_LSTM.exists():
        pytest.skip(f"{WHILE_LSTM} is not here")
    *_, (flags, lo, hi) = while_elisions(WHILE_LSTM.read_bytes())
    assert flags == 3 and hi - lo < 3136


@pytest.mark.parametrize("target", ["host", *EMULATED])
def test_keras_lstm_while_loop_matches_the_wheel(target: str) -> None:
    """The Keras-3 LSTM: a WHILE over 28 time steps whose body gathers a step, runs the float gates (FC, ADD,
    SPLIT, LOGISTIC, TANH, MUL) and whose condition compares int32 counters: the wheel's bytes on every core."""
    if not WHILE_LSTM.exists():
        pytest.skip(f"{WHILE_LSTM} is not here")
    model = WHILE_LSTM.read_bytes()
    xs = random_inputs(read(model), seed=2)
    got = check(model, target, xs)
    assert [g.tobytes() for g in got] == [w.tobytes() for w in run_tflm(model, xs)]


@pytest.mark.parametrize("limit", [0, 1, 7])
@pytest.mark.parametrize("target", ["host", *EMULATED[:1]])
def test_counted_loop(limit: int, target: str) -> None:
    """Zero, one and several iterations; the counter comes back as an output."""
    got = check(counted_loop(limit), target)
    assert int(got[1][0]) == limit


def test_while_lowers_to_one_task_with_its_subgraphs() -> None:
    it = Interpreter(counted_loop(3))
    it.allocate_tensors()
    (task,) = lower.lower_model(it)
    assert task.symbol == "mn_while"
    cond, body = task.args[1], task.args[2]
    assert [t.symbol for t in cond.tasks] == ["mn_compare", "mn_compare", "mn_logical"]
    assert [t.symbol for t in body.tasks] == ["mn_add_s32", "mn_mul_f32", "mn_add_f32", "mn_tanh_f32"]
    assert {a.subgraph for t in body.tasks for a in t.args if isinstance(a, lower.TensorRef)} == {2}


COMPARE = ["EQUAL", "NOT_EQUAL", "LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL"]


def compare_model(op: str, dtype: str, a: tuple[int, ...], b: tuple[int, ...], out: tuple[int, ...]) -> bytes:
    return op_model(op, [T(a, dtype), T(b, dtype)], [T(out, "bool")])


@pytest.mark.parametrize("target", ["host", *EMULATED])
def test_comparisons_and_logical_ops(target: str) -> None:
    """Every comparison over int16, int32, int64 and float32 (NaNs and equal values included) with broadcasting,
    and LOGICAL_AND/OR over bools."""
    rng = np.random.default_rng(0)
    ran = 0
    for op in COMPARE:
        for dtype in ("int16", "int32", "int64", "float32"):
            if op == "GREATER" and dtype == "int16":
                continue  # micronn refuses it (TFLM's kernel does not compute it)
            if dtype in ("int16", "int64") and op not in ("EQUAL", "NOT_EQUAL", "LESS"):
                continue
            model = compare_model(op, dtype, (2, 3, 4), (3, 1), (2, 3, 4))
            a = rng.integers(-3, 3, (2, 3, 4)).astype(dtype)
            b = rng.integers(-3, 3, (3, 1)).astype(dtype)
            if dtype == "float32":
                a.reshape(-1)[:3] = [np.nan, -0.0, np.inf]
                b.reshape(-1)[:2] = [0.0, np.nan]
            try:
                Interpreter(model).allocate_tensors()
            except Exception:  # noqa: BLE001 - a pair the interpreter refuses has nothing to compare
                continue
            check(model, target, [a, b])
            ran += 1
    assert ran >= 14  # every comparison over int32 and float32 at least
    for op in ("LOGICAL_AND", "LOGICAL_OR"):
        model = op_model(op, [T((4, 5), "bool"), T((5,), "bool")], [T((4, 5), "bool")])
        check(model, target, [rng.random((4, 5)) < 0.5, rng.random(5) < 0.5])


@pytest.mark.parametrize("target", ["host", *EMULATED])
def test_float_elementwise(target: str) -> None:
    """ADD/SUB/MUL with each activation and broadcasting (infinities clamp to +-FLT_MAX without one), LOGISTIC
    and TANH over their whole range (the C library's expf and tanhf, bit for bit)."""
    rng = np.random.default_rng(1)
    for op in ("ADD", "SUB", "MUL"):
        for act, shapes in ((0, ((2, 5), (2, 5))), (1, ((2, 5), (5,))), (3, ((3, 1, 4), (2, 1))),
                            (0, ((1,), (4, 3)))):
            out = tuple(np.broadcast_shapes(*shapes))
            model = op_model(op, [T(shapes[0], "float32"), T(shapes[1], "float32")], [T(out, "float32")],
                             {"fused_activation_function": act})
            a = (rng.standard_normal(shapes[0]) * 4).astype(np.float32)
            b = (rng.standard_normal(shapes[1]) * 4).astype(np.float32)
            a.reshape(-1)[0] = np.float32(3e38)
            b.reshape(-1)[0] = np.float32(3e38)
            check(model, target, [a, b])
    x = np.concatenate([np.linspace(-30, 30, 997), [0.0, -0.0, 16.619047, 16.62, -9.0, -9.01, 1e-30, np.inf, -np.inf]])
    x = x.astype(np.float32).reshape(1, -1)
    for op in ("LOGISTIC", "TANH"):
        check(op_model(op, [T(x.shape, "float32")], [T(x.shape, "float32")]), target, [x])


@pytest.mark.parametrize("target", ["host", *EMULATED[:1]])
def test_gather_and_split(target: str) -> None:
    """GATHER along an inner axis with batch dimensions and along axis 0 (int8, float32); SPLIT and SPLIT_V."""
    rng = np.random.default_rng(2)
    model = op_model("GATHER", [T((2, 3, 5, 4), "float32"), T((2, 3), "int32")], [T((2, 3, 3, 4), "float32")],
                     {"axis": 2, "batch_dims": 1})
    check(model, target, [rng.standard_normal((2, 3, 5, 4)).astype(np.float32),
                          rng.integers(0, 5, (2, 3)).astype(np.int32)])
    model = op_model("GATHER", [T((6, 3), "int8", 0.1, 0), T((4,), "int32")], [T((4, 3), "int8", 0.1, 0)])
    check(model, target, [rng.integers(-128, 128, (6, 3)).astype(np.int8), np.array([5, 0, 5, 2], np.int32)])
    model = op_model("SPLIT", [T((), "int32", data=1), T((2, 6, 3), "float32")],
                     [T((2, 2, 3), "float32")] * 3, {"num_splits": 3})
    check(model, target)
    model = op_model("SPLIT_V", [T((2, 7), "int16", 1 / 128, 0), T((3,), "int32", data=[2, 4, 1]),
                                 T((), "int32", data=-1)],
                     [T((2, 2), "int16", 1 / 128, 0), T((2, 4), "int16", 1 / 128, 0), T((2, 1), "int16", 1 / 128, 0)],
                     {"num_splits": 3})
    check(model, target)


@pytest.mark.parametrize("target", ["host", *EMULATED[:1]])
def test_gather_position_outside_the_axis_fails_the_device_run(target: str) -> None:
    """The interpreter raises on a position outside the axis; the device kernel stops and the runtime raises too
    (not outputs from memory the kernel never wrote). A good invoke afterwards works."""
    model = op_model("GATHER", [T((6, 3), "float32"), T((2,), "int32")], [T((2, 3), "float32")])
    x = np.arange(18, dtype=np.float32).reshape(6, 3)
    with pytest.raises(InvokeError):
        interpreter_outputs(model, [x, np.array([1, 6], np.int32)])
    with pytest.raises(InvokeError, match="GATHER position lies outside its axis"):
        run_model(model, target, [x, np.array([1, 6], np.int32)])
    check(model, target, [x, np.array([1, 5], np.int32)])
