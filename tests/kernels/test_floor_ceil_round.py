"""FLOOR, CEIL and ROUND against the TFLM wheel, byte for byte."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import PrepareError, UnsupportedError
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_tflm

OPS = ["FLOOR", "CEIL", "ROUND"]
SPECIAL = np.array([
    -0.3, -0.0, 0.0, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, 2.4999998, -2.5000002, np.inf, -np.inf, np.nan,
    3e9, -3e9, 8388607.5, -8388607.5, 4194303.5, 1e-40, -1e-40, 3.4e38, -3.4e38, 0.7, -0.7,
], np.float32)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("shape", [(2, 3), (1, 4, 4, 3), (1, 2, 1, 1, 1, 1, 1, 3), (5,)], ids=str)
def test_matches_tflm(op: str, shape: tuple) -> None:
    m = op_model(op, [T(shape, "float32")], [T(shape, "float32")])
    rng = np.random.default_rng(0)
    assert_same_as_tflm(m, runs=2)
    assert_same_as_tflm(m, inputs=[(rng.standard_normal(shape) * 10).astype(np.float32)])
    assert_same_as_tflm(m, inputs=[(np.round(rng.standard_normal(shape) * 20) / 2).astype(np.float32)])  # halves


@pytest.mark.parametrize("op", OPS)
def test_special_values(op: str) -> None:
    """ROUND takes halves to even and -0.3 to +0.0 (floor + 1), unlike numpy's rint."""
    m = op_model(op, [T(SPECIAL.shape, "float32")], [T(SPECIAL.shape, "float32")])
    assert_same_as_tflm(m, inputs=[SPECIAL])


def test_floor_needs_only_the_element_count() -> None:
    assert_same_as_tflm(op_model("FLOOR", [T((2, 3), "float32")], [T((6,), "float32")]), runs=2)


@pytest.mark.parametrize("op", ["CEIL", "ROUND"])
def test_ceil_and_round_need_equal_shapes(op: str) -> None:
    m = op_model(op, [T((2, 3), "float32")], [T((6,), "float32")])
    with pytest.raises(TflmError, match="dims"):
        run_tflm(m, [np.zeros((2, 3), np.float32)])
    with pytest.raises(PrepareError, match="shape"):
        Interpreter(m).allocate_tensors()


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", ["int8", "int32"])
def test_unsupported_types(op: str, dtype: str) -> None:
    q = (0.1, 0) if dtype == "int8" else (None, None)
    m = op_model(op, [T((2, 3), dtype, *q)], [T((2, 3), dtype, *q)])
    with pytest.raises(TflmError):
        run_tflm(m, [np.zeros((2, 3), dtype)])
    with pytest.raises(UnsupportedError):
        Interpreter(m)


@pytest.mark.parametrize("out", [T((2, 3), "int32"), T((2, 4), "float32")], ids=["type", "count"])
def test_floor_rejects_bad_outputs(out: T) -> None:
    """TFLM's FLOOR writes floats into whatever the output is (garbage); micronn refuses."""
    with pytest.raises(PrepareError):
        Interpreter(op_model("FLOOR", [T((2, 3), "float32")], [out])).allocate_tensors()
