"""GATHER and GATHER_ND against the TFLM wheel, byte for byte, out-of-range indices, and what TFLM refuses."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import InvokeError, PrepareError, UnsupportedError
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_tflm, tflm_arena


def q(dtype: str) -> tuple:
    return (0.1, 3) if dtype in ("int8", "int16") else (None, None)


def gather_model(dtype: str, shape, coords_shape, axis: int = 0, batch_dims: int = 0, coords=None,
                 coords_dtype: str = "int32", out_shape=None) -> bytes:
    """Positions are a model input unless ``coords`` gives them as a constant."""
    a = axis % len(shape)
    b = batch_dims + len(coords_shape) if batch_dims < 0 else batch_dims
    if out_shape is None:
        out_shape = tuple(shape[:a]) + tuple(coords_shape[b:]) + tuple(shape[a + 1:])
    return op_model("GATHER", [T(shape, dtype, *q(dtype)), T(coords_shape, coords_dtype, data=coords)],
                    [T(out_shape, dtype, *q(dtype))], {"axis": axis, "batch_dims": batch_dims})


def gather_nd_model(dtype: str, shape, indices_shape, indices=None, indices_dtype: str = "int32",
                    out_shape=None) -> bytes:
    if out_shape is None:
        out_shape = tuple(indices_shape[:-1]) + tuple(shape[indices_shape[-1]:])
    return op_model("GATHER_ND", [T(shape, dtype, *q(dtype)), T(indices_shape, indices_dtype, data=indices)],
                    [T(out_shape, dtype, *q(dtype))])


def values(dtype: str, shape, rng: np.random.Generator) -> np.ndarray:
    return rng.integers(-100, 100, shape).astype(dtype) if dtype == "int8" else rng.standard_normal(shape).astype(dtype)


GATHER_CASES = [
    ((3, 4), (2,), 0, 0),
    ((3, 4), (5,), 1, 0),
    ((3, 4), (2, 3), -1, 0),
    ((2, 3, 4), (2, 5), 1, 1),
    ((2, 3, 4, 2), (2, 3, 2), 2, 2),
    ((2, 3, 4), (2, 5), 2, -1),
    ((5,), (3, 2), 0, 0),
]


@pytest.mark.parametrize("dtype", ["float32", "int8"])
@pytest.mark.parametrize("shape,coords_shape,axis,batch_dims", GATHER_CASES, ids=str)
def test_gather_matches_tflm(dtype: str, shape: tuple, coords_shape: tuple, axis: int, batch_dims: int) -> None:
    rng = np.random.default_rng(len(shape) + axis)
    x = values(dtype, shape, rng)
    for _ in range(2):
        coords = rng.integers(0, shape[axis], coords_shape).astype(np.int32)
        assert_same_as_tflm(gather_model(dtype, shape, coords_shape, axis, batch_dims), [x, coords])
    assert_same_as_tflm(gather_model(dtype, shape, coords_shape, axis, batch_dims, coords=coords), [x])


def test_gather_scalar_position() -> None:
    """A 0-D position drops the axis (a constant here: the harness cannot feed 0-D model inputs)."""
    model = gather_model("float32", (3, 4), (), axis=1, coords=2)
    assert_same_as_tflm(model, runs=2)


@pytest.mark.parametrize("coords", [[3, 0], [0, -1], [1, 2**31 - 1]], ids=str)
def test_gather_out_of_range_fails_at_invoke(coords: list) -> None:
    """TFLM fails at invoke on a position outside [0, axis size); micronn raises an InvokeError then."""
    model = gather_model("float32", (3, 4), (2,))
    inputs = [np.zeros((3, 4), np.float32), np.array(coords, np.int32)]
    with pytest.raises(TflmError):
        run_tflm(model, inputs)
    it = Interpreter(model)
    for i, x in enumerate(inputs):
        it.set_input(x, i)
    with pytest.raises(InvokeError, match="outside"):
        it.invoke()


def test_gather_out_of_range_per_batch() -> None:
    """With batch_dims, each batch's positions are checked (here the second batch's)."""
    model = gather_model("float32", (2, 3, 4), (2, 2), axis=1, batch_dims=1)
    inputs = [np.zeros((2, 3, 4), np.float32), np.array([[0, 0], [0, 3]], np.int32)]
    with pytest.raises(TflmError):
        run_tflm(model, inputs)
    it = Interpreter(model)
    for i, x in enumerate(inputs):
        it.set_input(x, i)
    with pytest.raises(InvokeError):
        it.invoke()


def test_gather_constant_out_of_range_fails_at_prepare() -> None:
    with pytest.raises(PrepareError, match="outside"):
        Interpreter(gather_model("int8", (3, 4), (2,), coords=[1, 3])).allocate_tensors()


@pytest.mark.parametrize("model", [
    gather_model("float32", (3, 4), (2,), coords_dtype="int64", coords=[0, 1]),
    gather_model("float32", (3, 4), (2,), axis=2, out_shape=(3, 4)),
    gather_model("float32", (2, 3, 4), (2, 2), axis=0, batch_dims=1, out_shape=(2, 2, 3, 4)),
    gather_model("float32", (2, 3, 4), (3, 2), axis=1, batch_dims=1, out_shape=(2, 2, 4)),
], ids=["int64 positions", "axis out of range", "batch_dims > axis", "batch dims differ"])
def test_gather_rejects_what_tflm_rejects(model: bytes) -> None:
    with pytest.raises(TflmError):
        run_tflm(model, [])
    with pytest.raises(PrepareError):
        Interpreter(model).allocate_tensors()


def test_gather_rejects_wrong_output_shape() -> None:
    """TFLM rewrites the output's shape (and overruns its dims array when the rank grows; the wheel crashes)."""
    with pytest.raises(PrepareError, match="shape"):
        Interpreter(gather_model("float32", (3, 4), (2,), out_shape=(8,))).allocate_tensors()


GATHER_ND_CASES = [((3, 4), (2, 2)), ((3, 4), (2, 1)), ((2, 3, 4), (5, 2)), ((2, 3, 4), (2, 2, 3)),
                   ((2, 3, 4, 1, 2), (3, 5)), ((6,), (4, 1))]


@pytest.mark.parametrize("dtype", ["float32", "int8"])
@pytest.mark.parametrize("shape,indices_shape", GATHER_ND_CASES, ids=str)
def test_gather_nd_matches_tflm(dtype: str, shape: tuple, indices_shape: tuple) -> None:
    rng = np.random.default_rng(len(shape) * 10 + indices_shape[-1])
    x = values(dtype, shape, rng)
    nd = indices_shape[-1]
    model = gather_nd_model(dtype, shape, indices_shape)
    for _ in range(2):
        indices = np.stack([rng.integers(0, shape[j], indices_shape[:-1]) for j in range(nd)], -1).astype(np.int32)
        assert_same_as_tflm(model, [x, indices])
    assert_same_as_tflm(gather_nd_model(dtype, shape, indices_shape, indices=indices), [x])


@pytest.mark.parametrize("indices", [[[0, 5]], [[1, -1]], [[-1, 4]], [[2, 3]], [[1073741824, 1]]], ids=str)
def test_gather_nd_checks_only_the_flat_offset(indices: list) -> None:
    """TFLM accepts any row whose flat offset (C int arithmetic, wrapping) lies inside params; so does micronn."""
    model = gather_nd_model("float32", (3, 4), (1, 2))
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert_same_as_tflm(model, [x, np.array(indices, np.int32)])


@pytest.mark.parametrize("indices", [[[3, 0]], [[0, -1]], [[2, 4]]], ids=str)
def test_gather_nd_out_of_bounds_fails_at_invoke(indices: list) -> None:
    model = gather_nd_model("float32", (3, 4), (1, 2))
    inputs = [np.zeros((3, 4), np.float32), np.array(indices, np.int32)]
    with pytest.raises(TflmError, match="out of bounds"):
        run_tflm(model, inputs)
    it = Interpreter(model)
    for i, x in enumerate(inputs):
        it.set_input(x, i)
    with pytest.raises(InvokeError, match="out of bounds"):
        it.invoke()


@pytest.mark.parametrize("model", [
    gather_nd_model("float32", (3, 4), (2, 2), indices_dtype="int64", indices=[[0, 1], [1, 0]]),
    gather_nd_model("float32", (3, 4), (2, 3), out_shape=(2,)),  # more coordinates than params dimensions
    gather_nd_model("float32", (1, 1, 1, 1, 1, 2), (1, 6), out_shape=(1,)),  # more than 5 coordinates
], ids=["int64 indices", "nd > rank", "nd > 5"])
def test_gather_nd_rejects_what_tflm_rejects(model: bytes) -> None:
    with pytest.raises(TflmError):
        run_tflm(model, [])
    with pytest.raises(PrepareError):
        Interpreter(model).allocate_tensors()


@pytest.mark.parametrize("model", [
    gather_model("int8", (3, 4), (2, 3), axis=1, coords=[[0, 1, 2], [3, 2, 1]]),
    gather_nd_model("float32", (2, 3, 4), (5, 2), indices=[[0, 0], [1, 2], [0, 1], [1, 1], [0, 2]]),
], ids=["gather", "gather_nd"])
def test_head_equals_tflm(model: bytes) -> None:
    it = Interpreter(model, planner="tflm")
    it.allocate_tensors()
    assert it.head == tflm_arena(model)["head"]


@pytest.mark.parametrize("dtype", ["int16", "int32", "bool"])
@pytest.mark.parametrize("make", [lambda d: gather_model(d, (3, 4), (2,), coords=[0, 1]),
                                  lambda d: gather_nd_model(d, (3, 4), (2, 1), indices=[[0], [1]])],
                         ids=["gather", "gather_nd"])
def test_unsupported_types(dtype: str, make) -> None:
    model = make(dtype)
    with pytest.raises(TflmError):
        run_tflm(model, [])
    with pytest.raises(UnsupportedError):
        Interpreter(model)
