"""MAXIMUM and MINIMUM against the TFLM wheel, byte for byte."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import PrepareError, UnsupportedError
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_tflm

OPS = ["MAXIMUM", "MINIMUM"]
DTYPES = ["float32", "int8", "int16", "int32", "int64"]
QUANT = {"int8": (0.05, 3), "int16": (0.001, 0)}
SHAPES = [
    ((2, 3), (2, 3), (2, 3)),
    ((2, 3, 4), (4,), (2, 3, 4)),
    ((3, 1), (1, 4), (3, 4)),
    ((1,), (2, 2, 3), (2, 2, 3)),
    ((2, 1, 3, 1, 2, 1), (1, 3, 1, 2, 1, 2), (2, 3, 3, 2, 2, 2)),
    ((2, 3), (2, 3), (6,)),
]


def model(op: str, dtype: str, shapes=((2, 3), (2, 3), (2, 3)), quant: list | None = None) -> bytes:
    q = quant or [QUANT.get(dtype, (None, None))] * 3
    a, b, o = (T(s, dtype, *qq) for s, qq in zip(shapes, q))
    return op_model(op, [a, b], [o])


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_matches_tflm(op: str, dtype: str, shapes: tuple) -> None:
    assert_same_as_tflm(model(op, dtype, shapes), runs=2)


@pytest.mark.parametrize("op", OPS)
def test_quantized_operands_are_compared_raw(op: str) -> None:
    """TFLM does not rescale: different (scale, zero point) per operand still compare the stored integers."""
    assert_same_as_tflm(model(op, "int8", quant=[(0.05, 3), (0.5, -3), (0.1, 0)]), runs=3)


@pytest.mark.parametrize("op", OPS)
def test_nan_and_signed_zeros(op: str) -> None:
    """``x1 > x2 ? x1 : x2``: a NaN first operand loses, a NaN second one wins; ties keep the second."""
    x = np.array([np.nan, 1, 0.0, -0.0, np.nan, np.inf, -np.inf], np.float32)
    y = np.array([1, np.nan, -0.0, 0.0, np.nan, -np.inf, 3], np.float32)
    assert_same_as_tflm(model(op, "float32", ((7,), (7,), (7,))), inputs=[x, y])


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", ["uint8", "bool"])
def test_unsupported_types(op: str, dtype: str) -> None:
    m = model(op, dtype, quant=[(None, None)] * 3)
    with pytest.raises(TflmError):
        run_tflm(m, [np.zeros((2, 3), dtype)] * 2)
    with pytest.raises(UnsupportedError):
        Interpreter(m)


@pytest.mark.parametrize("shapes", [
    ((2, 3), (2, 4), (2, 4)),
    ((2, 3), (2, 3), (2, 4)),
    ((1, 1, 1, 1, 1, 1, 2), (2,), (1, 1, 1, 1, 1, 1, 2)),
], ids=str)
def test_rejects_bad_shapes(shapes: tuple) -> None:
    with pytest.raises(PrepareError):
        Interpreter(model("MAXIMUM", "float32", shapes)).allocate_tensors()
