"""FILL, ZEROS_LIKE and BROADCAST_TO against the TFLM wheel, byte for byte, and what TFLM refuses."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import PrepareError, UnsupportedError
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, random_inputs, run_tflm, tflm_arena


def q(dtype: str) -> tuple:
    return (0.1, 3) if dtype == "int8" else (None, None)


def fill_model(dtype: str, shape, value, dims=None, dims_dtype: str = "int32", value_shape=()) -> bytes:
    dims = list(shape) if dims is None else dims
    return op_model("FILL", [T((len(dims),), dims_dtype, data=dims), T(value_shape, dtype, *q(dtype), data=value)],
                    [T(shape, dtype, *q(dtype))])


def broadcast_model(dtype: str, shape, target, out_shape=None, shape_dtype: str = "int32") -> bytes:
    qq = (0.5, 2) if dtype == "int8" else (None, None)
    return op_model("BROADCAST_TO", [T(shape, dtype, *qq), T((len(target),), shape_dtype, data=target)],
                    [T(out_shape or tuple(target), dtype, *qq)])


@pytest.mark.parametrize("dtype,value", [("float32", -1.5), ("float32", np.nan), ("int8", -7), ("int32", 123456)],
                         ids=str)
@pytest.mark.parametrize("dims_dtype", ["int8", "int16", "int32", "int64"])
def test_fill_matches_tflm(dtype: str, value, dims_dtype: str) -> None:
    assert_same_as_tflm(fill_model(dtype, (2, 3, 4), value, dims_dtype=dims_dtype), runs=1)
    assert_same_as_tflm(fill_model(dtype, (5,), value, dims_dtype=dims_dtype), runs=1)


@pytest.mark.parametrize("model,inputs", [
    (fill_model("float32", (2, 3), 2.0, value_shape=(1,)), []),  # the value must be 0-D
    (fill_model("float32", (2, 3), 2.0, dims=[2, 4]), []),  # dims must equal the output shape
    (op_model("FILL", [T((2,), "int32", data=[2, 3]), T((), "int32", data=2)], [T((2, 3), "float32")]), []),
    (op_model("FILL", [T((2,), "int32"), T((), "float32", data=2.0)], [T((2, 3), "float32")]),
     [np.array([2, 3], np.int32)]),  # computed dims
], ids=["1-D value", "dims differ", "types differ", "computed dims"])
def test_fill_rejects_what_tflm_rejects(model: bytes, inputs: list) -> None:
    with pytest.raises(TflmError):
        run_tflm(model, inputs)
    with pytest.raises(PrepareError):
        Interpreter(model).allocate_tensors()


@pytest.mark.parametrize("dtype", ["float32", "int8", "int32", "int64"])
@pytest.mark.parametrize("shape", [(2, 3), (7,), (1, 2, 3, 4, 1)], ids=str)
def test_zeros_like_matches_tflm(dtype: str, shape: tuple) -> None:
    """Raw zeros, whatever the zero point."""
    model = op_model("ZEROS_LIKE", [T(shape, dtype, *q(dtype))], [T(shape, dtype, *q(dtype))])
    assert_same_as_tflm(model, runs=2)


BROADCAST_TYPES = ["float32", "float16", "int8", "int16", "int32", "int64", "uint8", "bool"]


@pytest.mark.parametrize("dtype", BROADCAST_TYPES)
@pytest.mark.parametrize("shape,target", [
    ((3, 1, 2), [2, 3, 4, 2]),
    ((1,), [2, 3, 4]),
    ((3, 4), [3, 4]),
    ((4, 1), [2, 4, 5]),
    ((1, 2, 1, 3, 1), [2, 2, 4, 3, 2]),  # 5-D, TFLM's limit
], ids=str)
def test_broadcast_to_matches_tflm(dtype: str, shape: tuple, target: list) -> None:
    assert_same_as_tflm(broadcast_model(dtype, shape, target), runs=2)


def test_broadcast_to_int64_shape() -> None:
    assert_same_as_tflm(broadcast_model("float32", (3, 1), [2, 3, 4], shape_dtype="int64"), runs=1)


@pytest.mark.parametrize("model", [
    broadcast_model("float32", (3, 2, 2), [3, 4, 2]),  # 2 cannot become 4
    broadcast_model("float32", (3, 1, 2), [3, 4, 2], out_shape=(3, 5, 2)),  # the output differs from the shape
    broadcast_model("float32", (3, 1, 2), [1, 1, 2, 3, 4, 2]),  # 6-D
    broadcast_model("float32", (2, 3), [3]),  # fewer dimensions than the input
], ids=["not broadcastable", "wrong output", "6-D", "rank shrinks"])
def test_broadcast_to_rejects_what_tflm_rejects(model: bytes) -> None:
    with pytest.raises(TflmError):
        run_tflm(model, [])
    with pytest.raises(PrepareError):
        Interpreter(model).allocate_tensors()


@pytest.mark.parametrize("model", [
    fill_model("int8", (2, 3, 4), 5),
    op_model("ZEROS_LIKE", [T((2, 3), "int64")], [T((2, 3), "int64")]),
    broadcast_model("int16", (3, 1, 2), [2, 3, 4, 2]),
], ids=["fill", "zeros_like", "broadcast_to"])
def test_head_equals_tflm(model: bytes) -> None:
    it = Interpreter(model, planner="tflm")
    it.allocate_tensors()
    assert it.head == tflm_arena(model)["head"]


@pytest.mark.parametrize("model", [
    fill_model("int16", (2, 3), 4),
    fill_model("int64", (2, 3), 4),
    fill_model("bool", (2, 3), True),
    op_model("ZEROS_LIKE", [T((2, 3), "int16")], [T((2, 3), "int16")]),
    op_model("ZEROS_LIKE", [T((2, 3), "bool")], [T((2, 3), "bool")]),
], ids=["fill int16", "fill int64", "fill bool", "zeros_like int16", "zeros_like bool"])
def test_unsupported_types(model: bytes) -> None:
    with pytest.raises(TflmError):
        run_tflm(model, random_inputs(model))
    with pytest.raises(UnsupportedError):
        Interpreter(model)
