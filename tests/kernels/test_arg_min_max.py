"""ARG_MAX and ARG_MIN against the TFLM wheel, byte for byte: ties, NaNs, axes, and what TFLM refuses."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import InvokeError, PrepareError, UnsupportedError
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_tflm, tflm_arena

OPS = ["ARG_MAX", "ARG_MIN"]


def arg_model(op: str, dtype: str, shape: tuple[int, ...], axis: int | None, out_dtype: str = "int32",
              axis_dtype: str = "int32") -> bytes:
    """``axis=None`` makes the axis a model input."""
    q = (0.1, 3) if dtype == "int8" else (None, None)
    a = (axis if axis is not None else 0) % len(shape)
    out_shape = tuple(d for k, d in enumerate(shape) if k != a) or (1,)
    axis_t = T((1,), axis_dtype, data=None if axis is None else [axis])
    code = {"int32": 2, "int64": 4}.get(out_dtype, 2)
    return op_model(op, [T(shape, dtype, *q), axis_t], [T(out_shape, out_dtype)], {"output_type": code})


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", ["float32", "int8"])
@pytest.mark.parametrize("shape,axis", [((3, 4, 5), 0), ((3, 4, 5), 1), ((3, 4, 5), -1), ((9,), 0),
                                        ((2, 1, 3, 2, 4), 3), ((2, 3, 1, 2, 2, 3), -2)], ids=str)
def test_matches_tflm(op: str, dtype: str, shape: tuple, axis: int) -> None:
    model = arg_model(op, dtype, shape, axis)
    assert_same_as_tflm(model, runs=2)


@pytest.mark.parametrize("op", OPS)
def test_int8_ties_keep_the_first_index(op: str) -> None:
    model = arg_model(op, "int8", (6, 20), 1)
    rng = np.random.default_rng(0)
    assert_same_as_tflm(model, [rng.integers(-2, 2, (6, 20)).astype(np.int8)])
    assert_same_as_tflm(model, [np.full((6, 20), -128, np.int8)])


@pytest.mark.parametrize("op", OPS)
def test_float_nan_inf_and_signed_zeros(op: str) -> None:
    """A NaN is never picked, except that a NaN first element keeps index 0; -0.0 ties with 0.0."""
    x = np.array([[np.nan, 1, 2, 3], [1, np.nan, 5, 2], [-np.inf, np.nan, -np.inf, -np.inf],
                  [-0.0, 0.0, -0.0, -1], [3, 3, 3, 3], [np.inf, np.nan, np.inf, 1]], np.float32)
    model = arg_model(op, "float32", (6, 4), 1)
    assert_same_as_tflm(model, [x])
    assert_same_as_tflm(model, [-x])


@pytest.mark.parametrize("op", OPS)
def test_computed_axis(op: str) -> None:
    """TFLM reads the axis at invoke, so it may be a model input."""
    model = arg_model(op, "float32", (3, 3), None)
    x = np.random.default_rng(2).standard_normal((3, 3)).astype(np.float32)
    for axis in (0, 1, -1):
        assert_same_as_tflm(model, [x, np.array([axis], np.int32)])
    it = Interpreter(model)
    it.set_input(x, 0)
    it.set_input(np.array([2], np.int32), 1)
    with pytest.raises(InvokeError, match="out of range"):
        it.invoke()


@pytest.mark.parametrize("op", OPS)
def test_head_equals_tflm(op: str) -> None:
    model = arg_model(op, "int8", (3, 4, 5), 1)
    it = Interpreter(model, planner="tflm")
    it.allocate_tensors()
    assert it.head == tflm_arena(model)["head"]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("kw", [{"out_dtype": "int64"}, {"axis_dtype": "int64"}], ids=str)
def test_rejects_what_tflm_fails_on(op: str, kw: dict) -> None:
    """TFLM writes only int32 indices and reads only int32 axes (it fails at invoke); micronn refuses at prepare."""
    model = arg_model(op, "float32", (3, 4), 1, **kw)
    with pytest.raises(TflmError):
        run_tflm(model, [np.zeros((3, 4), np.float32)])
    with pytest.raises(PrepareError, match="int32"):
        Interpreter(model).allocate_tensors()


@pytest.mark.parametrize("op", OPS)
def test_rejects_constant_axis_out_of_range(op: str) -> None:
    model = op_model(op, [T((3, 4), "float32"), T((1,), "int32", data=[2])], [T((3,), "int32")])
    with pytest.raises(PrepareError, match="out of range"):
        Interpreter(model).allocate_tensors()


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", ["int16", "int32", "uint8"])
def test_unsupported_types(op: str, dtype: str) -> None:
    q = (0.1, 0) if dtype != "int32" else (None, None)
    model = op_model(op, [T((3, 4), dtype, *q), T((1,), "int32", data=[1])], [T((3,), "int32")])
    with pytest.raises(TflmError):
        run_tflm(model, [np.zeros((3, 4), dtype)])
    with pytest.raises(UnsupportedError):
        Interpreter(model)
