"""LOGICAL_AND, LOGICAL_OR and LOGICAL_NOT against the TFLM wheel, byte for byte."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import PrepareError, UnsupportedError
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_tflm

SHAPES = [
    ((2, 3), (2, 3), (2, 3)),
    ((2, 3, 4), (4,), (2, 3, 4)),
    ((3, 1), (1, 4), (3, 4)),
    ((1,), (2, 2, 3), (2, 2, 3)),
    ((2, 1, 3, 1, 2, 1), (1, 3, 1, 2, 1, 2), (2, 3, 3, 2, 2, 2)),
    ((2, 3), (2, 3), (6,)),
]


@pytest.mark.parametrize("op", ["LOGICAL_AND", "LOGICAL_OR"])
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_binary_matches_tflm(op: str, shapes: tuple) -> None:
    m = op_model(op, [T(shapes[0], "bool"), T(shapes[1], "bool")], [T(shapes[2], "bool")])
    assert_same_as_tflm(m, runs=3)


@pytest.mark.parametrize("shape,out", [((2, 3), (2, 3)), ((1, 2, 1, 1, 1, 1, 1, 1, 3), (6,)), ((7,), (7,))], ids=str)
def test_not_matches_tflm(shape: tuple, out: tuple) -> None:
    """LOGICAL_NOT counts elements only: any rank, any output shape with as many elements."""
    assert_same_as_tflm(op_model("LOGICAL_NOT", [T(shape, "bool")], [T(out, "bool")]), runs=3)


@pytest.mark.parametrize("op", ["LOGICAL_AND", "LOGICAL_OR"])
@pytest.mark.parametrize("dtype", ["int8", "float32"])
def test_binary_non_bool_is_refused(op: str, dtype: str) -> None:
    """TFLM checks no types and reads the bytes as bools (garbage); micronn accepts bool only."""
    with pytest.raises(UnsupportedError):
        Interpreter(op_model(op, [T((2, 3), dtype), T((2, 3), dtype)], [T((2, 3), dtype)]))


@pytest.mark.parametrize("dtype", ["int8", "float32"])
def test_not_non_bool_is_refused(dtype: str) -> None:
    m = op_model("LOGICAL_NOT", [T((2, 3), dtype)], [T((2, 3), dtype)])
    with pytest.raises(TflmError):
        run_tflm(m, [np.zeros((2, 3), dtype)])
    with pytest.raises(UnsupportedError):
        Interpreter(m)


def test_not_output_type_mismatch() -> None:
    m = op_model("LOGICAL_NOT", [T((2, 3), "bool")], [T((2, 3), "int8")])
    with pytest.raises(TflmError, match="type"):
        run_tflm(m, [np.zeros((2, 3), bool)])
    with pytest.raises(PrepareError):
        Interpreter(m).allocate_tensors()


@pytest.mark.parametrize("specs", [
    ([T((2, 3), "bool"), T((2, 4), "bool")], [T((2, 4), "bool")]),
    ([T((2, 3), "bool"), T((2, 3), "bool")], [T((3, 3), "bool")]),
    ([T((2, 3), "bool")], [T((2, 4), "bool")]),
], ids=["no broadcast", "output too large", "not: output too large"])
def test_rejects_bad_shapes(specs: tuple) -> None:
    op = "LOGICAL_AND" if len(specs[0]) == 2 else "LOGICAL_NOT"
    with pytest.raises(PrepareError):
        Interpreter(op_model(op, *specs)).allocate_tensors()
