"""BROADCAST_ARGS against the TFLM wheel, byte for byte: int32/int64 shapes, outputs shorter or longer than the
broadcast rank, int64 entries truncated to C ints, and the incompatible shapes on which TFLM aborts."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import InvokeError, PrepareError, UnsupportedError
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_tflm, tflm_arena


def args_model(dtype: str, n1: int, n2: int, n_out: int, s1=None, s2=None) -> bytes:
    return op_model("BROADCAST_ARGS", [T((n1,), dtype, data=s1), T((n2,), dtype, data=s2)], [T((n_out,), dtype)])


CASES = [
    ([2, 1], [4, 1, 3], 3),
    ([2, 1], [4, 1, 3], 2),  # a shorter output keeps the last entries
    ([2, 1], [4, 1, 3], 5),  # a longer one starts with 1s
    ([5], [1], 1),
    ([1, 1], [7, 1], 2),
    ([1, 2, 3, 1, 5, 1], [6, 1, 3, 4, 1, 2], 6),
    ([0, 1], [1, 3], 2),  # zero-size dimensions broadcast like any other
    ([-3, 1], [1, -1], 2),  # so do negative ones
    ([8], [8], 1),
]


@pytest.mark.parametrize("dtype", ["int32", "int64"])
@pytest.mark.parametrize("s1,s2,n_out", CASES, ids=str)
def test_matches_tflm(dtype: str, s1: list, s2: list, n_out: int) -> None:
    model = args_model(dtype, len(s1), len(s2), n_out)
    assert_same_as_tflm(model, [np.array(s1, dtype), np.array(s2, dtype)])
    assert_same_as_tflm(args_model(dtype, len(s2), len(s1), n_out), [np.array(s2, dtype), np.array(s1, dtype)])
    assert_same_as_tflm(args_model(dtype, len(s1), len(s2), n_out, s1, s2), [])


def test_int64_entries_are_truncated_to_32_bits() -> None:
    """TFLM compares and stores the entries as C ints: 2**32 + 1 acts as 1, 2**32 + 3 as 3."""
    model = args_model("int64", 2, 2, 2)
    out = assert_same_as_tflm(model, [np.array([2**32 + 1, 3], np.int64), np.array([5, 2**32 + 3], np.int64)])
    assert out[0][0].tolist() == [5, 3]
    assert_same_as_tflm(model, [np.array([2**33 + 7, -(2**40)], np.int64), np.array([7, 1], np.int64)])


def test_incompatible_shapes_fail_at_invoke() -> None:
    """TFLM aborts the process on 2 vs 3 (TFLITE_CHECK_EQ): micronn fails the invoke instead (the wheel is not
    run on such shapes)."""
    it = Interpreter(args_model("int32", 2, 2, 2))
    it.set_input(np.array([2, 3], np.int32), 0)
    it.set_input(np.array([2, 4], np.int32), 1)
    with pytest.raises(InvokeError, match="do not broadcast"):
        it.invoke()


def test_incompatible_constant_shapes_fail_at_prepare() -> None:
    with pytest.raises(PrepareError, match="do not broadcast"):
        Interpreter(args_model("int64", 2, 1, 2, [4, 3], [2])).allocate_tensors()


def test_head_equals_tflm() -> None:
    model = args_model("int32", 2, 3, 3, [2, 1], [4, 1, 3])
    it = Interpreter(model, planner="tflm")
    it.allocate_tensors()
    assert it.head == tflm_arena(model)["head"]


@pytest.mark.parametrize("model", [
    op_model("BROADCAST_ARGS", [T((1, 2), "int32"), T((2,), "int32")], [T((2,), "int32")]),
    op_model("BROADCAST_ARGS", [T((2,), "int32"), T((2,), "int32")], [T((1, 2), "int32")]),
    op_model("BROADCAST_ARGS", [T((2,), "int32"), T((2,), "int64")], [T((2,), "int32")]),
    op_model("BROADCAST_ARGS", [T((2,), "int32"), T((2,), "int32")], [T((2,), "int64")]),
], ids=["2-D shape", "2-D output", "mixed types", "output type"])
def test_rejects_what_tflm_rejects(model: bytes) -> None:
    with pytest.raises(TflmError):
        run_tflm(model, [])
    with pytest.raises(PrepareError):
        Interpreter(model).allocate_tensors()


@pytest.mark.parametrize("dtype", ["int16", "int8"])
def test_unsupported_types(dtype: str) -> None:
    model = args_model(dtype, 2, 2, 2)
    with pytest.raises(TflmError):
        run_tflm(model, [])
    with pytest.raises(UnsupportedError):
        Interpreter(model)
