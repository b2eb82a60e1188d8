"""CUMSUM against the TFLM wheel, byte for byte: exclusive/reverse, int8 rescaling, float specials."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import InvokeError, PrepareError, UnsupportedError
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_tflm, tflm_arena

FLAGS = list(itertools.product([False, True], [False, True]))  # (exclusive, reverse)


def cumsum_model(dtype: str, shape, axis, exclusive: bool = False, reverse: bool = False, qin=(0.1, 5),
                 qout=(0.3, -7), axis_spec: T | None = None) -> bytes:
    qi, qo = (qin, qout) if dtype == "int8" else ((None, None), (None, None))
    axis_t = axis_spec or T((), "int32", data=axis)
    return op_model("CUMSUM", [T(shape, dtype, *qi), axis_t], [T(shape, dtype, *qo)],
                    {"exclusive": exclusive, "reverse": reverse})


@pytest.mark.parametrize("dtype", ["float32", "int8"])
@pytest.mark.parametrize("exclusive,reverse", FLAGS, ids=str)
@pytest.mark.parametrize("shape,axis", [((3, 5), 1), ((3, 5), 0), ((2, 3, 4), -2), ((7,), 0), ((2, 2, 3, 2, 3), 4)],
                         ids=str)
def test_matches_tflm(dtype: str, exclusive: bool, reverse: bool, shape: tuple, axis: int) -> None:
    assert_same_as_tflm(cumsum_model(dtype, shape, axis, exclusive, reverse), runs=2)


@pytest.mark.parametrize("qin,qout", [((0.1, 0), (0.1, 0)), ((0.02, -128), (0.5, 127)), ((0.5, 3), (0.01, 0)),
                                      ((0.05, 127), (0.2, -128))], ids=str)
@pytest.mark.parametrize("exclusive,reverse", FLAGS, ids=str)
def test_int8_rescaling(qin: tuple, qout: tuple, exclusive: bool, reverse: bool) -> None:
    """TFLM's running total starts at the scaled -zero point (as if a 0 came first): exclusive shows it."""
    model = cumsum_model("int8", (3, 6), 1, exclusive, reverse, qin, qout)
    assert_same_as_tflm(model, runs=2)
    assert_same_as_tflm(model, [np.zeros((3, 6), np.int8)])


@pytest.mark.parametrize("exclusive,reverse", FLAGS, ids=str)
def test_int8_long_rows_wrap(exclusive: bool, reverse: bool) -> None:
    """Forty extreme values overflow TFLM's int32 running total, which wraps; micronn wraps the same way."""
    model = cumsum_model("int8", (2, 40), -1, exclusive, reverse, (0.1, -128), (0.5, 0))
    x = np.full((2, 40), 127, np.int8)
    x[1] = -128
    assert_same_as_tflm(model, [x])


@pytest.mark.parametrize("exclusive,reverse", FLAGS, ids=str)
def test_float_special_values(exclusive: bool, reverse: bool) -> None:
    """The total keeps its first NaN, starts at +0.0 (so -0.0 inputs give +0.0), and overflows to inf."""
    x = np.zeros((4, 6), np.float32)
    bits = x.view(np.uint32)
    bits[0, 1], bits[0, 3] = 0x7FC00001, 0xFFC00002
    x[1] = -0.0
    x[2, :2] = np.inf, -np.inf
    x[3] = [3e38, 3e38, -3e38, 1, -0.0, 2]
    model = cumsum_model("float32", (4, 6), 1, exclusive, reverse)
    assert_same_as_tflm(model, [x])
    assert_same_as_tflm(model, [-x])


def test_float_sum_is_sequential() -> None:
    x = (np.random.default_rng(4).standard_normal((2, 3000)) * 1000).astype(np.float32)
    assert_same_as_tflm(cumsum_model("float32", (2, 3000), 1), [x])


def test_computed_axis() -> None:
    """TFLM reads the axis at invoke; it may be a model input (1-element, 1-D here)."""
    model = cumsum_model("float32", (3, 4), 0, axis_spec=T((1,), "int32"))
    x = np.random.default_rng(5).standard_normal((3, 4)).astype(np.float32)
    for axis in (0, 1, -1, -2):
        assert_same_as_tflm(model, [x, np.array([axis], np.int32)])
    inputs = [x, np.array([2], np.int32)]
    with pytest.raises(TflmError, match="Invalid axis"):
        run_tflm(model, inputs)
    it = Interpreter(model)
    for i, v in enumerate(inputs):
        it.set_input(v, i)
    with pytest.raises(InvokeError, match="out of range"):
        it.invoke()


def test_head_equals_tflm() -> None:
    model = cumsum_model("int8", (2, 3, 4), 1)
    it = Interpreter(model, planner="tflm")
    it.allocate_tensors()
    assert it.head == tflm_arena(model)["head"]


@pytest.mark.parametrize("model", [
    cumsum_model("float32", (3, 4), 0, axis_spec=T((), "int64", data=0)),
    cumsum_model("float32", (3, 4), 0, axis_spec=T((2,), "int32", data=[0, 1])),
], ids=["int64 axis", "two axes"])
def test_rejects_what_tflm_rejects(model: bytes) -> None:
    with pytest.raises(TflmError):
        run_tflm(model, [])
    with pytest.raises(PrepareError):
        Interpreter(model).allocate_tensors()


def test_rejects_constant_axis_out_of_range() -> None:
    """TFLM fails at invoke; micronn already at prepare."""
    model = cumsum_model("float32", (3, 4), 2)
    with pytest.raises(TflmError):
        run_tflm(model, [np.zeros((3, 4), np.float32)])
    with pytest.raises(PrepareError, match="out of range"):
        Interpreter(model).allocate_tensors()


def test_rejects_output_rescale_of_one_or_more() -> None:
    """2 * input scale / (2**20 * output scale) must stay below 1 (TFLM only asserts it in debug builds)."""
    with pytest.raises(PrepareError, match="rescale"):
        Interpreter(cumsum_model("int8", (3, 4), 1, qin=(1.0, 0), qout=(1e-7, 0))).allocate_tensors()


@pytest.mark.parametrize("dtype", ["int16", "int32", "int64"])
def test_unsupported_types(dtype: str) -> None:
    model = op_model("CUMSUM", [T((3, 4), dtype), T((), "int32", data=1)], [T((3, 4), dtype)])
    with pytest.raises(TflmError):
        run_tflm(model, [])
    with pytest.raises(UnsupportedError):
        Interpreter(model)
