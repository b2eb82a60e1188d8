"""SLICE against the TFLM wheel, byte for byte: int32/int64 begin and size, -1 sizes, computed bounds."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import InvokeError, PrepareError, UnsupportedError
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_tflm, tflm_arena

DTYPES = ["float32", "int8", "int16", "int32", "bool"]


def slice_model(dtype: str, shape, begin, size, out_shape=None, index_dtype: str = "int32",
                constant: bool = True) -> bytes:
    q = (0.1, -4) if dtype == "int8" else (0.1, 0) if dtype == "int16" else (None, None)
    if out_shape is None:
        out_shape = tuple(d - b if s == -1 else s for d, b, s in zip(shape, begin, size))
    n = len(begin)
    inputs = [T(shape, dtype, *q), T((n,), index_dtype, data=begin if constant else None),
              T((n,), index_dtype, data=size if constant else None)]
    return op_model("SLICE", inputs, [T(out_shape, dtype, *q)])


CASES = [
    ((3, 4), [1, 1], [2, 3]),
    ((3, 4), [0, 2], [-1, -1]),
    ((5,), [2], [3]),
    ((2, 3, 4), [1, 0, 1], [1, 3, 2]),
    ((2, 3, 4, 5), [0, 1, 2, 3], [2, -1, 1, 2]),
    ((2, 1, 2, 3, 2), [1, 0, 0, 1, 0], [1, 1, 2, 2, -1]),  # 5-D, TFLM's limit
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
@pytest.mark.parametrize("shape,begin,size", CASES, ids=str)
def test_matches_tflm(dtype: str, index_dtype: str, shape: tuple, begin: list, size: list) -> None:
    assert_same_as_tflm(slice_model(dtype, shape, begin, size, index_dtype=index_dtype), runs=2)


def test_extra_begin_entries_are_ignored() -> None:
    """TFLM reads one begin/size entry per input dimension; later entries change nothing."""
    assert_same_as_tflm(slice_model("float32", (3, 4), [1, 1, 7], [2, 3, 9], out_shape=(2, 3)), runs=1)


@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
def test_computed_begin_and_size(index_dtype: str) -> None:
    """TFLM reads begin and size at invoke; the output keeps its static shape."""
    model = slice_model("float32", (3, 4), [0, 0], [2, 3], index_dtype=index_dtype, constant=False)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    for begin, size in (([1, 0], [-1, 3]), ([0, 1], [2, -1]), ([1, 1], [2, 3])):
        assert_same_as_tflm(model, [x, np.array(begin, index_dtype), np.array(size, index_dtype)])
    it = Interpreter(model)
    for i, v in enumerate([x, np.array([2, 0], index_dtype), np.array([2, 3], index_dtype)]):
        it.set_input(v, i)
    with pytest.raises(InvokeError, match="outside the input"):
        it.invoke()


def test_head_equals_tflm() -> None:
    model = slice_model("int8", (2, 3, 4, 5), [0, 1, 2, 3], [2, -1, 1, 2])
    it = Interpreter(model, planner="tflm")
    it.allocate_tensors()
    assert it.head == tflm_arena(model)["head"]


@pytest.mark.parametrize("kw", [
    dict(shape=(3, 4), begin=[2, 1], size=[2, 3], out_shape=(2, 3)),  # past the end: TFLM reads out of bounds
    dict(shape=(3, 4), begin=[-1, 0], size=[1, 4], out_shape=(1, 4)),
    dict(shape=(3, 4), begin=[1, 1], size=[2, 3], out_shape=(2, 2)),  # the slice does not fit the output
    dict(shape=(3, 4), begin=[1], size=[2], out_shape=(2, 4)),  # TFLM reads past begin and size
], ids=["past end", "negative begin", "wrong output", "short begin"])
def test_rejects_what_tflm_gets_wrong(kw: dict) -> None:
    with pytest.raises(PrepareError):
        Interpreter(slice_model("float32", **kw)).allocate_tensors()


def test_rejects_mixed_index_types() -> None:
    """TFLM reads size with begin's type: an int64 size read as int32 words is garbage."""
    model = op_model("SLICE", [T((3, 4), "float32"), T((2,), "int32", data=[1, 1]), T((2,), "int64", data=[2, 3])],
                     [T((2, 3), "float32")])
    with pytest.raises(PrepareError, match="begin's type"):
        Interpreter(model).allocate_tensors()


def test_rejects_6d() -> None:
    """TFLM's SLICE allows 5 dimensions (the wheel aborts the process on a 6-D one, so it is not run here)."""
    model = slice_model("float32", (1,) * 6, [0] * 6, [1] * 6)
    with pytest.raises(PrepareError, match="at most 5"):
        Interpreter(model).allocate_tensors()


@pytest.mark.parametrize("dtype", ["int64", "uint8"])
def test_unsupported_types(dtype: str) -> None:
    model = slice_model(dtype, (3, 4), [1, 1], [2, 3])
    with pytest.raises(TflmError):
        run_tflm(model, [np.zeros((3, 4), dtype)])
    with pytest.raises(UnsupportedError):
        Interpreter(model)
