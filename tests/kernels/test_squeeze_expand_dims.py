"""SQUEEZE and EXPAND_DIMS against the TFLM wheel, byte for byte, and the models TFLM refuses."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import PrepareError, UnsupportedError
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_tflm, tflm_arena


def q(dtype: str) -> tuple:
    return (0.1, 3) if dtype == "int8" else (0.1, 0) if dtype == "int16" else (None, None)


def squeeze_model(dtype: str, shape, out_shape, dims=()) -> bytes:
    return op_model("SQUEEZE", [T(shape, dtype, *q(dtype))], [T(out_shape, dtype, *q(dtype))],
                    {"squeeze_dims": tuple(dims)})


def expand_model(dtype: str, shape, axis, out_shape, axis_spec: T | None = None) -> bytes:
    axis_t = axis_spec or T((1,), "int32", data=[axis])
    return op_model("EXPAND_DIMS", [T(shape, dtype, *q(dtype)), axis_t], [T(out_shape, dtype, *q(dtype))])


SQUEEZE_TYPES = ["float32", "float16", "int8", "int16", "int32", "int64", "uint8", "bool"]


@pytest.mark.parametrize("dtype", SQUEEZE_TYPES)
@pytest.mark.parametrize("shape,dims,out_shape", [
    ((1, 3, 1, 4), (), (3, 4)),
    ((1, 3, 1, 4), (0,), (3, 1, 4)),
    ((1, 3, 1, 4), (-2, 0), (3, 4)),
    ((2, 1), (-1,), (2,)),
    ((1, 1, 1, 2, 1, 1, 3, 1), (), (2, 3)),  # 8-D, TFLM's limit
], ids=str)
def test_squeeze_matches_tflm(dtype: str, shape: tuple, dims: tuple, out_shape: tuple) -> None:
    assert_same_as_tflm(squeeze_model(dtype, shape, out_shape, dims), runs=2)


@pytest.mark.parametrize("model", [
    squeeze_model("float32", (1, 3, 1, 4), (1, 1, 4), dims=(1,)),  # not a size-1 dimension
    squeeze_model("float32", (1, 3, 1, 4), (3, 4), dims=(4,)),  # out of range
    squeeze_model("float32", (1, 3, 1, 4), (12,)),  # the output is not what remains
    squeeze_model("float32", (1,) * 9, (1,), dims=(0,)),  # 9-D
], ids=["size 3", "dim 4", "wrong output", "9-D"])
def test_squeeze_rejects_what_tflm_rejects(model: bytes) -> None:
    with pytest.raises(TflmError):
        run_tflm(model, [])
    with pytest.raises(PrepareError):
        Interpreter(model).allocate_tensors()


@pytest.mark.parametrize("dtype", ["float32", "int8", "int16"])
@pytest.mark.parametrize("shape,axis,out_shape", [
    ((3, 4), 0, (1, 3, 4)),
    ((3, 4), 1, (3, 1, 4)),
    ((3, 4), 2, (3, 4, 1)),
    ((3, 4), -1, (3, 4, 1)),
    ((3, 4), -3, (1, 3, 4)),
    ((5,), -2, (1, 5)),
], ids=str)
def test_expand_dims_matches_tflm(dtype: str, shape: tuple, axis: int, out_shape: tuple) -> None:
    assert_same_as_tflm(expand_model(dtype, shape, axis, out_shape), runs=2)


def test_expand_dims_scalar_axis_and_extra_entries() -> None:
    """A 0-D axis works; so does a 1-D one with more entries (TFLM reads the first)."""
    assert_same_as_tflm(expand_model("float32", (3, 4), 1, (3, 1, 4), T((), "int32", data=1)), runs=1)
    assert_same_as_tflm(expand_model("float32", (3, 4), 1, (3, 1, 4), T((2,), "int32", data=[1, 0])), runs=1)


@pytest.mark.parametrize("model,inputs", [
    (expand_model("float32", (3, 4), 3, (3, 4, 1)), []),  # axis out of range
    (expand_model("float32", (3, 4), -4, (1, 3, 4)), []),
    (expand_model("float32", (3, 4), 1, (3, 4, 1)), []),  # the output does not match
    (expand_model("float32", (3, 4), 1, (3, 1, 4), T((1,), "int64", data=[1])), []),
    (expand_model("float32", (3, 4), 1, (3, 1, 4), T((1, 1), "int32", data=[[1]])), []),
    (expand_model("float32", (3, 4), 1, (3, 1, 4), T((1,), "int32")),
     [np.zeros((3, 4), np.float32), np.array([1], np.int32)]),  # a computed axis
], ids=["axis 3", "axis -4", "wrong output", "int64 axis", "2-D axis", "computed axis"])
def test_expand_dims_rejects_what_tflm_rejects(model: bytes, inputs: list) -> None:
    with pytest.raises(TflmError):
        run_tflm(model, inputs)
    with pytest.raises(PrepareError):
        Interpreter(model).allocate_tensors()


@pytest.mark.parametrize("model", [squeeze_model("int8", (1, 3, 1, 4), (3, 4)),
                                   expand_model("int16", (3, 4), 1, (3, 1, 4))], ids=["squeeze", "expand_dims"])
def test_head_equals_tflm(model: bytes) -> None:
    it = Interpreter(model, planner="tflm")
    it.allocate_tensors()
    assert it.head == tflm_arena(model)["head"]


@pytest.mark.parametrize("dtype", ["int32", "bool", "uint8"])
def test_expand_dims_unsupported_types(dtype: str) -> None:
    model = expand_model(dtype, (3, 4), 1, (3, 1, 4))
    with pytest.raises(TflmError):
        run_tflm(model, [np.zeros((3, 4), dtype)])
    with pytest.raises(UnsupportedError):
        Interpreter(model)
