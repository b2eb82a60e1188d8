"""REDUCE_ALL against the TFLM wheel, byte for byte: axes (negative, repeated, computed), keep_dims, scalars,
the reducers' scratch requests, and what TFLM refuses (bool only, int32 axes)."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import InvokeError, PrepareError, UnsupportedError
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_tflm, tflm_arena


def reduced_shape(shape, axes, keep_dims: bool) -> tuple:
    resolved = {a % len(shape) for a in axes}
    return tuple(1 if k in resolved else d for k, d in enumerate(shape) if keep_dims or k not in resolved)


def all_model(shape, axes=None, keep_dims: bool = False, n_axes: int | None = None, out_shape=None,
              dtype: str = "bool", axes_dtype: str = "int32") -> bytes:
    """Constant ``axes``, or a computed axes input of ``n_axes`` entries (then ``out_shape`` is needed)."""
    axes_spec = T((len(axes),), axes_dtype, data=axes) if axes is not None else T((n_axes,), axes_dtype)
    out_shape = out_shape if out_shape is not None else reduced_shape(shape, axes, keep_dims)
    return op_model("REDUCE_ALL", [T(shape, dtype), axes_spec], [T(out_shape, dtype)], {"keep_dims": keep_dims})


def mostly_true(shape, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).random(shape) < 0.85


CASES = [((2, 3, 4), [1]), ((2, 3, 4), [0, -1]), ((2, 3, 4), [2, 0, 1]), ((2, 3, 4), [1, 1, -2]), ((7,), [0]),
         ((3, 4), [-1]), ((2, 1, 3, 2, 2), [1, 3]), ((2, 2, 1, 2, 2, 2, 2), [0, 6])]


@pytest.mark.parametrize("keep_dims", [False, True])
@pytest.mark.parametrize("shape,axes", CASES, ids=str)
def test_matches_tflm(shape: tuple, axes: list, keep_dims: bool) -> None:
    model = all_model(shape, axes, keep_dims)
    for seed in range(3):
        assert_same_as_tflm(model, [mostly_true(shape, seed)])
    assert_same_as_tflm(model, [np.ones(shape, bool)])


def test_computed_axes() -> None:
    """TFLM reads the axes at every invoke; they may be a model input."""
    model = all_model((3, 4), n_axes=1, out_shape=(3,))
    x = mostly_true((3, 4), 4)
    for axes in ([1], [-1]):
        assert_same_as_tflm(model, [x, np.array(axes, np.int32)])
    square = all_model((4, 4), n_axes=1, out_shape=(4,))
    y = mostly_true((4, 4), 5)
    for axes in ([0], [1], [-2]):
        assert_same_as_tflm(square, [y, np.array(axes, np.int32)])
    inputs = [x, np.array([2], np.int32)]
    with pytest.raises(TflmError):
        run_tflm(model, inputs)
    it = Interpreter(model)
    for i, v in enumerate(inputs):
        it.set_input(v, i)
    with pytest.raises(InvokeError, match="out of range"):
        it.invoke()


def test_scalar_input() -> None:
    """A 0-D input ignores the axes (TFLM short-cuts scalars)."""
    assert_same_as_tflm(op_model("REDUCE_ALL", [T((), "bool", data=False), T((1,), "int32", data=[0])],
                                 [T((), "bool")]), [])


@pytest.mark.parametrize("shape,axes", [((2, 3, 4), [1]), ((5,), [0]), ((2, 3, 4, 5, 6), [1, 3]),
                                        ((2, 3, 4), [0, 1, 2, -1])], ids=str)
def test_head_equals_tflm(shape: tuple, axes: list) -> None:
    """Two scratch requests: 4 bytes per input dimension and 4 per axis entry."""
    model = all_model(shape, axes)
    it = Interpreter(model, planner="tflm")
    it.allocate_tensors()
    assert it.head == tflm_arena(model)["head"]


@pytest.mark.parametrize("model", [
    all_model((2, 3), [1], axes_dtype="int64"),
], ids=["int64 axes"])
def test_rejects_what_tflm_rejects(model: bytes) -> None:
    with pytest.raises(TflmError):
        run_tflm(model, [])
    with pytest.raises(PrepareError):
        Interpreter(model).allocate_tensors()


def test_constant_axis_out_of_range_fails_at_prepare() -> None:
    """TFLM fails at invoke; micronn already at prepare."""
    model = all_model((2, 3), [2], out_shape=(2,))
    with pytest.raises(TflmError):
        run_tflm(model, [np.ones((2, 3), bool)])
    with pytest.raises(PrepareError, match="out of range"):
        Interpreter(model).allocate_tensors()


def test_output_type_must_match() -> None:
    """TFLM fails the invoke on a float32 output; micronn refuses the model."""
    model = op_model("REDUCE_ALL", [T((2, 3), "bool"), T((1,), "int32", data=[1])], [T((2,), "float32")])
    with pytest.raises(TflmError):
        run_tflm(model, [np.ones((2, 3), bool)])
    with pytest.raises(PrepareError):
        Interpreter(model).allocate_tensors()


@pytest.mark.parametrize("dtype", ["float32", "int8", "int32"])
def test_unsupported_types(dtype: str) -> None:
    model = all_model((2, 3), [1], dtype=dtype)
    with pytest.raises(TflmError):
        run_tflm(model, [])
    with pytest.raises(UnsupportedError):
        Interpreter(model)
