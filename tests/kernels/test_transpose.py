"""TRANSPOSE against the TFLM wheel, byte for byte, and the models TFLM refuses."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import PrepareError, UnsupportedError
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_tflm, tflm_arena


def transpose_model(dtype: str, shape, perm, out_shape=None, perm_spec: T | None = None) -> bytes:
    q = (0.1, -2) if dtype == "int8" else (0.1, 0) if dtype == "int16" else (None, None)
    out_shape = out_shape or tuple(shape[p] for p in perm)
    perm_t = perm_spec or T((len(perm),), "int32", data=perm)
    return op_model("TRANSPOSE", [T(shape, dtype, *q), perm_t], [T(out_shape, dtype, *q)])


@pytest.mark.parametrize("dtype", ["float32", "int8", "int16"])
@pytest.mark.parametrize("shape,perm", [
    ((3, 4), [1, 0]),
    ((3, 4), [0, 1]),
    ((7,), [0]),
    ((2, 3, 4), [2, 0, 1]),
    ((2, 3, 4, 5), [0, 3, 1, 2]),
    ((1, 4, 5, 3), [0, 3, 1, 2]),
    ((2, 3, 1, 4, 5), [4, 2, 0, 3, 1]),  # 5-D, TFLM's limit
], ids=str)
def test_matches_tflm(dtype: str, shape: tuple, perm: list) -> None:
    assert_same_as_tflm(transpose_model(dtype, shape, perm), runs=2)


def test_int64_perm_is_read_as_int32_words() -> None:
    """TFLM reads perm's first int32 words: the int64 [1, 0] reads as [1, 0] and works."""
    assert_same_as_tflm(transpose_model("float32", (3, 4), [1, 0], perm_spec=T((2,), "int64", data=[1, 0])), runs=1)
    # the int64 [0, 2, 1] reads as [0, 0, 2], which TFLM accepts and micronn refuses
    model = transpose_model("float32", (2, 3, 4), [0, 2, 1], perm_spec=T((3,), "int64", data=[0, 2, 1]))
    with pytest.raises(PrepareError, match="not a permutation"):
        Interpreter(model).allocate_tensors()


def test_head_equals_tflm() -> None:
    model = transpose_model("int8", (2, 3, 4, 5), [0, 3, 1, 2])
    it = Interpreter(model, planner="tflm")
    it.allocate_tensors()
    assert it.head == tflm_arena(model)["head"]


@pytest.mark.parametrize("model,inputs", [
    (transpose_model("float32", (3, 4), [-1, 0], out_shape=(4, 3)), []),
    (transpose_model("float32", (3, 4), [2, 0], out_shape=(4, 3)), []),
    (transpose_model("float32", (3, 4), [1, 0], perm_spec=T((3,), "int32", data=[1, 0, 2])), []),
    (transpose_model("float32", (1, 2, 1, 2, 1, 2), [5, 4, 3, 2, 1, 0]), []),  # 6-D
    (transpose_model("float32", (3, 4), [1, 0], perm_spec=T((2,), "int32")),
     [np.zeros((3, 4), np.float32), np.array([1, 0], np.int32)]),  # a computed perm
], ids=["negative", "too large", "too long", "6-D", "computed"])
def test_rejects_what_tflm_rejects(model: bytes, inputs: list) -> None:
    with pytest.raises(TflmError):
        run_tflm(model, inputs)
    with pytest.raises(PrepareError):
        Interpreter(model).allocate_tensors()


@pytest.mark.parametrize("model", [
    transpose_model("float32", (3, 4), [0, 0], out_shape=(3, 3)),  # repeats: TFLM computes nonsense
    transpose_model("float32", (3, 4), [1, 0], out_shape=(3, 4)),  # the output shape does not match
], ids=["repeated axis", "wrong output"])
def test_rejects_what_tflm_does_not_check(model: bytes) -> None:
    with pytest.raises(PrepareError):
        Interpreter(model).allocate_tensors()


@pytest.mark.parametrize("dtype", ["int32", "int64", "bool"])
def test_unsupported_types(dtype: str) -> None:
    model = transpose_model(dtype, (3, 4), [1, 0])
    with pytest.raises(TflmError):
        run_tflm(model, [np.zeros((3, 4), dtype)])
    with pytest.raises(UnsupportedError):
        Interpreter(model)
