"""micronn.testing: model builders run by the TFLM wheel, arena parsing, input generation and the comparison."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest import model_bytes, model_path

import micronn
from micronn import testing
from micronn.testing import (
    Graph,
    Op,
    T,
    TflmError,
    assert_identical,
    assert_same_as_tflm,
    graph_model,
    op_model,
    random_inputs,
    run_tflm,
    tflm_arena,
    tflm_min_arena,
)
from micronn.tflite.reader import read

# ---- building models -------------------------------------------------------------------------------------------


def test_op_model_float_add_broadcasts_exactly() -> None:
    model = op_model("ADD", [T((2, 3), "float32"), T((1, 3), "float32")], [T((2, 3), "float32")])
    a, b = random_inputs(model, seed=4)
    assert b.shape == (1, 3)
    assert_identical(run_tflm(model, [a, b])[0], a + b)


def test_op_model_conv_with_constant_weights_and_omitted_bias() -> None:
    rng = np.random.default_rng(0)
    w = rng.uniform(-1, 1, (4, 3, 3, 2)).astype(np.float32)
    model = op_model(
        "CONV_2D",
        [T((1, 7, 7, 2), "float32"), T(w.shape, "float32", data=w), None],
        [T((1, 3, 3, 4), "float32")],
        {"padding": micronn.ir.Padding.VALID, "stride_w": 2, "stride_h": 2},
    )
    ir_model = read(model)
    assert ir_model.main.operators[0].inputs == [0, 1, -1]
    assert ir_model.main.inputs == [0]  # the weights are a constant, not a model input
    (x,) = random_inputs(model, seed=1)
    windows = np.lib.stride_tricks.sliding_window_view(x, (3, 3), axis=(1, 2))[:, ::2, ::2]  # n,h,w,c,kh,kw
    expected = np.einsum("nhwcij,oijc->nhwo", windows.astype(np.float64), w.astype(np.float64))
    np.testing.assert_allclose(run_tflm(model, [x])[0], expected, rtol=1e-5, atol=1e-5)


def test_op_model_per_channel_int8_conv_is_close_to_float() -> None:
    rng = np.random.default_rng(2)
    w = rng.integers(-127, 128, (3, 1, 1, 4), dtype=np.int8)
    w_scale = np.array([0.01, 0.02, 0.04], np.float32)
    bias = np.array([100, -50, 0], np.int32)
    model = op_model(
        "CONV_2D",
        [T((1, 2, 2, 4), "int8", 0.05, 3), T(w.shape, "int8", w_scale, 0, data=w),
         T((3,), "int32", 0.05 * w_scale, 0, data=bias)],
        [T((1, 2, 2, 3), "int8", 0.5, -1)],
        {"stride_w": 1, "stride_h": 1},
    )
    assert read(model).main.tensors[1].quant.per_channel
    (x,) = random_inputs(model, seed=3)
    real = (x.astype(np.float64) - 3) * 0.05
    acc = np.einsum("nhwc,oc->nhwo", real, w[:, 0, 0, :] * w_scale.astype(np.float64)[:, None]) + bias * 0.05 * w_scale
    expected = np.clip(np.round(acc / 0.5) - 1, -128, 127)
    got = run_tflm(model, [x])[0]
    assert got.dtype == np.int8
    assert np.abs(got.astype(np.int64) - expected).max() <= 1


def test_graph_model_runs_several_ops_over_named_tensors() -> None:
    graph = Graph(
        tensors={"a": T((4,), "float32"), "b": T((4,), "float32"), "c": T((4,), "float32", data=[1, 2, 3, 4]),
                 "s": T((4,), "float32"), "out": T((4,), "float32", name="product")},
        ops=[Op("ADD", ["a", "b"], ["s"]), Op("MUL", ["s", "c"], ["out"])],
        inputs=["a", "b"],
        outputs=["out"],
    )
    model = graph_model(graph)
    main = read(model).main
    assert [t.name for t in main.tensors] == ["a", "b", "c", "s", "product"]
    a, b = random_inputs(model, seed=0)
    assert_identical(run_tflm(model, [a, b])[0], (a + b) * np.float32([1, 2, 3, 4]))


def test_tensor_spec_quantization_and_data() -> None:
    t = T((2, 3), "int8", [0.5, 0.25], 7, axis=0, data=1).tensor("t", 0)
    assert t.quant is not None and t.quant.per_channel
    assert t.quant.zero_point.tolist() == [7, 7] and t.quant.scale.dtype == np.float32
    assert_identical(t.data, np.ones((2, 3), np.int8))
    assert not t.data.flags.writeable
    with pytest.raises(ValueError, match="zero_point needs a scale"):
        T((1,), "int8", zero_point=1).tensor("t", 0)


def test_custom_op_without_registration_is_a_clean_error() -> None:
    model = op_model("MY_CUSTOM", [T((2,), "float32")], [T((2,), "float32")], custom_options=b"\x01")
    op = read(model).main.operators[0]
    assert (op.op, op.custom, op.custom_options) == ("MY_CUSTOM", True, b"\x01")
    with pytest.raises(TflmError, match="registration"):
        run_tflm(model, [np.zeros(2, np.float32)])


def test_tiny_arena_is_refused_instead_of_crashing() -> None:
    model = op_model("ADD", [T((4,), "float32"), T((4,), "float32")], [T((4,), "float32")])
    with pytest.raises(TflmError, match="crashes"):
        run_tflm(model, random_inputs(model), arena_size=100)
    with pytest.raises(TflmError, match="allocate"):
        run_tflm(model, random_inputs(model), arena_size=600)


# ---- inputs and arena ------------------------------------------------------------------------------------------


def test_random_inputs_cover_the_types() -> None:
    model = op_model("CONCATENATION", [T((64, 64), "int8", 0.1, 0), T((64, 64), "int8", 0.1, 0)],
                     [T((128, 64), "int8", 0.1, 0)], {"axis": 0})
    a, b = random_inputs(model, seed=5)
    assert a.dtype == np.int8 and a.shape == (64, 64)
    assert a.min() == -128 and a.max() == 127  # the full range, extremes included
    assert not np.array_equal(a, b)
    assert_identical(random_inputs(model, seed=5)[0], a)  # deterministic
    (f,) = random_inputs(op_model("RELU", [T((1000,), "float32")], [T((1000,), "float32")]), seed=0)
    assert f.dtype == np.float32 and -1 <= f.min() < -0.9 and 0.9 < f.max() <= 1
    (i16,) = random_inputs(read(model_path("keyword_scrambled")), seed=0)
    assert i16.dtype == np.int16 and i16.shape == (1, 96)


def test_tflm_arena_of_person_detect() -> None:
    arena = tflm_arena(model_bytes("person_detect"))
    assert arena == {"head": 55_296, "tail": 29_968, "total": 85_264}


def test_tflm_arena_and_smallest_arena_of_hello_world() -> None:
    model = model_bytes("hello_world_int8")
    assert tflm_arena(model) == {"head": 32, "tail": 1_472, "total": 1_504}
    # planning needs temporary space beyond what print_allocations() reports afterwards
    assert tflm_min_arena(model) == 1_936


# ---- comparison ------------------------------------------------------------------------------------------------


def test_assert_identical_explains_the_difference() -> None:
    expected = np.arange(20, dtype=np.int8).reshape(4, 5)
    actual = expected.copy()
    actual[1, 2] += 3
    actual[3, 4] -= 1
    with pytest.raises(AssertionError) as e:
        assert_identical(actual, expected, "out")
    message = str(e.value)
    assert "out: 2 of 20 elements differ (max abs difference 3)" in message
    assert "at [1, 2]: got np.int8(10), expected np.int8(7)" in message
    with pytest.raises(AssertionError, match="dtype int16, expected int8"):
        assert_identical(expected.astype(np.int16), expected)
    with pytest.raises(AssertionError, match=r"shape \(5, 4\), expected \(4, 5\)"):
        assert_identical(expected.reshape(5, 4), expected)
    with pytest.raises(AssertionError, match="1 of 1 elements differ"):
        assert_identical(np.float32(-0.0), np.float32(0.0))  # bytes, not values
    assert_identical(np.float32([np.nan]), np.float32([np.nan]))


class _TflmAsMicronn:
    """Stands in for micronn's interpreter with TFLM itself, optionally corrupting one output element."""

    def __init__(self, model: bytes, corrupt_on_run: int | None):
        self.tflm = testing._Tflm(model)
        self.inputs: list[np.ndarray] = []
        self.outputs: list[np.ndarray] = []
        self.runs = 0
        self.corrupt_on_run = corrupt_on_run

    def set_input(self, x: np.ndarray, i: int) -> None:
        self.inputs[i:i + 1] = [x]

    def invoke(self) -> None:
        self.outputs = self.tflm.run(self.inputs)
        if self.runs == self.corrupt_on_run:
            self.outputs[0].reshape(-1)[-1] ^= 1
        self.runs += 1

    def get_output(self, i: int) -> np.ndarray:
        return self.outputs[i]


@pytest.mark.parametrize("corrupt", [None, 2])
def test_assert_same_as_tflm_compares_every_run(monkeypatch: pytest.MonkeyPatch, corrupt: int | None) -> None:
    model = model_bytes("keyword_scrambled")  # stateful: runs depend on earlier runs
    monkeypatch.setattr(testing, "_micronn", lambda m: _TflmAsMicronn(m, corrupt))
    if corrupt is None:
        outputs = assert_same_as_tflm(model, runs=3)
        assert len(outputs) == 3 and outputs[0][0].shape == (1, 2)
    else:
        with pytest.raises(AssertionError, match=r"run 2, output 0 \(''\): 1 of 2 elements differ"):
            assert_same_as_tflm(model, runs=3)


def test_assert_same_as_tflm_on_micronn() -> None:
    pytest.importorskip("micronn.interpreter")
    model = model_bytes("hello_world_float")
    try:
        outputs: Any = assert_same_as_tflm(model, runs=2)
    except micronn.UnsupportedError as e:
        pytest.skip(f"micronn lacks a kernel: {e}")
    assert len(outputs) == 2
    x = np.array([[0.5]], np.float32)
    assert_identical(testing.run_micronn(model, [x])[0], run_tflm(model, [x])[0])
