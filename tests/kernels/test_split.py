"""SPLIT, SPLIT_V and UNPACK against the TFLM wheel, byte for byte, and the models TFLM refuses."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import PrepareError, UnsupportedError
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_tflm, tflm_arena

DTYPES = ["float32", "int8", "int16", "int32"]


def q(dtype: str) -> tuple:
    return (0.1, 2) if dtype == "int8" else (0.1, 0) if dtype == "int16" else (None, None)


def part_shape(shape: tuple[int, ...], axis: int, size: int) -> tuple[int, ...]:
    axis %= len(shape)
    return tuple(size if k == axis else d for k, d in enumerate(shape))


def split_model(dtype: str, shape: tuple[int, ...], axis: int, n: int, axis_dtype: str = "int32",
                constant_axis: bool = True, out_shapes: list | None = None) -> bytes:
    outs = out_shapes or [part_shape(shape, axis, shape[axis] // n)] * n
    axis_t = T((1,), axis_dtype, data=[axis] if constant_axis else None)
    return op_model("SPLIT", [axis_t, T(shape, dtype, *q(dtype))], [T(s, dtype, *q(dtype)) for s in outs],
                    {"num_splits": n})


def split_v_model(dtype: str, shape: tuple[int, ...], axis: int, sizes: list[int], size_splits=None,
                  constant_axis: bool = True) -> bytes:
    outs = [T(part_shape(shape, axis, s), dtype, *q(dtype)) for s in sizes]
    splits = T((len(sizes),), "int32", data=sizes if size_splits is None else size_splits)
    axis_t = T((1,), "int32", data=[axis] if constant_axis else None)
    return op_model("SPLIT_V", [T(shape, dtype, *q(dtype)), splits, axis_t], outs, {"num_splits": len(sizes)})


def unpack_model(dtype: str, shape: tuple[int, ...], axis: int, num: int | None = None) -> bytes:
    a = axis % len(shape)
    out = tuple(d for k, d in enumerate(shape) if k != a)
    n = shape[a]
    return op_model("UNPACK", [T(shape, dtype, *q(dtype))], [T(out, dtype, *q(dtype))] * n,
                    {"num": n if num is None else num, "axis": axis})


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,axis,n", [((2, 6), 1, 3), ((4, 3), 0, 2), ((2, 3, 4), -1, 4), ((6,), 0, 1),
                                          ((1, 2, 2, 6), -3, 2), ((2, 2, 1, 2, 2, 4), 5, 2)], ids=str)
def test_split_matches_tflm(dtype: str, shape: tuple, axis: int, n: int) -> None:
    assert_same_as_tflm(split_model(dtype, shape, axis, n), runs=2)


@pytest.mark.parametrize("axis", [1, -1])
def test_split_reads_an_int64_axis_as_int32_words(axis: int) -> None:
    """TFLM reads the first int32 word of the axis whatever its type: a small int64 axis still works."""
    assert_same_as_tflm(split_model("float32", (2, 4), axis, 2, axis_dtype="int64"), runs=1)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,axis,sizes", [((2, 6), 1, [1, 3, 2]), ((5, 3), 0, [4, 1]), ((2, 3, 4), -1, [2, 2]),
                                              ((2, 3, 4), -2, [3]), ((1, 3, 2, 8), 3, [1, 1, 5, 1])], ids=str)
def test_split_v_matches_tflm(dtype: str, shape: tuple, axis: int, sizes: list) -> None:
    assert_same_as_tflm(split_v_model(dtype, shape, axis, sizes), runs=2)


def test_split_v_ignores_size_splits() -> None:
    """TFLM takes each part's extent from the output shapes; the size_splits values (even -1) change nothing."""
    assert_same_as_tflm(split_v_model("float32", (2, 6), 1, [1, 5], size_splits=[3, 3]), runs=1)
    assert_same_as_tflm(split_v_model("int8", (2, 6), 1, [2, 4], size_splits=[2, -1]), runs=1)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,axis", [((3, 4), 0), ((3, 4), 1), ((2, 3, 4), -1), ((2, 3, 4), -2), ((5,), 0),
                                        ((1, 2, 1, 2, 3), 3)], ids=str)
def test_unpack_matches_tflm(dtype: str, shape: tuple, axis: int) -> None:
    assert_same_as_tflm(unpack_model(dtype, shape, axis), runs=2)


@pytest.mark.parametrize("model", [
    split_model("int8", (2, 6), 1, 3),
    split_v_model("float32", (2, 6), 1, [1, 5]),
    unpack_model("int16", (3, 4), 1),
], ids=["split", "split_v", "unpack"])
def test_head_equals_tflm(model: bytes) -> None:
    it = Interpreter(model, planner="tflm")
    it.allocate_tensors()
    assert it.head == tflm_arena(model)["head"]


@pytest.mark.parametrize("model", [
    split_model("float32", (2, 4), 1, 2, constant_axis=False),
    split_v_model("float32", (2, 4), 1, [1, 3], constant_axis=False),
], ids=["split", "split_v"])
def test_rejects_computed_axis(model: bytes) -> None:
    with pytest.raises(TflmError, match="Non-constant"):
        run_tflm(model, [])  # fails in prepare, before any input is needed
    with pytest.raises(PrepareError, match="constant"):
        Interpreter(model).allocate_tensors()


def test_split_rejects_axis_out_of_range() -> None:
    """TFLM fails at invoke; micronn already at prepare."""
    model = split_model("float32", (2, 4), 2, 2, out_shapes=[(2, 2), (2, 2)])
    with pytest.raises(TflmError):
        run_tflm(model, [np.zeros((2, 4), np.float32)])
    with pytest.raises(PrepareError, match="out of range"):
        Interpreter(model).allocate_tensors()


@pytest.mark.parametrize("model", [
    split_model("float32", (2, 6), 1, 2, out_shapes=[(2, 2), (2, 4)]),  # unequal parts: TFLM sizes all as output 0
    split_model("float32", (2, 6), 1, 2, out_shapes=[(2, 2), (2, 2)]),  # the parts do not cover the input
    split_v_model("float32", (2, 6), 1, [1, 3]),
    unpack_model("float32", (3, 4), 0, num=0),  # TFLM would leave every output unwritten
    unpack_model("float32", (3, 4), 0, num=2),
], ids=["split unequal", "split short", "split_v short", "unpack num 0", "unpack num 2"])
def test_rejects_inconsistent_models(model: bytes) -> None:
    """TFLM does not check these (it leaves outputs unwritten or copies out of bounds); micronn refuses."""
    with pytest.raises(PrepareError):
        Interpreter(model).allocate_tensors()


@pytest.mark.parametrize("dtype", ["int64", "bool"])
@pytest.mark.parametrize("make", [lambda d: split_model(d, (2, 4), 1, 2), lambda d: split_v_model(d, (2, 4), 1, [1, 3]),
                                  lambda d: unpack_model(d, (2, 4), 0)], ids=["split", "split_v", "unpack"])
def test_unsupported_types(dtype: str, make) -> None:
    model = make(dtype)
    with pytest.raises(TflmError):
        run_tflm(model, [np.zeros((2, 4), dtype)])
    with pytest.raises(UnsupportedError):
        Interpreter(model)
