"""SELECT_V2 against the TFLM wheel, byte for byte, and the models TFLM refuses."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import PrepareError, UnsupportedError
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_tflm

QUANT = {"int8": (0.05, 3), "int16": (0.001, 0)}
SHAPES = [
    ((2, 3), (2, 3), (2, 3), (2, 3)),
    ((3, 1), (1, 4), (3, 4), (3, 4)),
    ((4,), (3, 1), (1,), (3, 4)),
    ((2, 1, 3), (4, 1), (1,), (2, 4, 3)),
    ((1, 2, 1, 2, 1, 2), (2, 1, 2, 1, 2, 1), (1,), (2, 2, 2, 2, 2, 2)),  # 6-D
    ((2, 3), (2, 3), (2, 3), (6,)),
]


def model(dtype: str, shapes: tuple, cond_data=None) -> bytes:
    q = QUANT.get(dtype, (None, None))
    cond = T(shapes[0], "bool", data=cond_data)
    return op_model("SELECT_V2", [cond, T(shapes[1], dtype, *q), T(shapes[2], dtype, *q)], [T(shapes[3], dtype, *q)])


@pytest.mark.parametrize("dtype", ["float32", "int8", "int16"])
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_matches_tflm(dtype: str, shapes: tuple) -> None:
    assert_same_as_tflm(model(dtype, shapes), runs=3)


@pytest.mark.parametrize("value", [True, False])
def test_constant_scalar_condition(value: bool) -> None:
    assert_same_as_tflm(model("float32", ((), (2, 3), (2, 3), (2, 3)), cond_data=value), runs=2)


def test_values_are_copied_raw() -> None:
    """No requantization between x, y and the output, whatever their scales."""
    specs = [T((2, 3), "bool"), T((2, 3), "int8", 0.1, 0), T((2, 3), "int8", 0.2, 5)]
    assert_same_as_tflm(op_model("SELECT_V2", specs, [T((2, 3), "int8", 0.3, 1)]), runs=3)


@pytest.mark.parametrize("dtype", ["int32", "bool"])
def test_unsupported_types(dtype: str) -> None:
    m = model(dtype, SHAPES[0])
    with pytest.raises(TflmError):
        run_tflm(m, [np.zeros((2, 3), bool), np.zeros((2, 3), dtype), np.zeros((2, 3), dtype)])
    with pytest.raises(UnsupportedError):
        Interpreter(m)


@pytest.mark.parametrize("specs", [
    [T((2, 3), "int8", 0.1, 0), T((2, 3), "float32"), T((2, 3), "float32")],  # condition not bool
    [T((2, 3), "bool"), T((2, 3), "int8", 0.1, 0), T((2, 3), "int16", 0.1, 0)],  # x and y differ
    [T((2, 3), "bool"), T((2, 4), "float32"), T((2, 3), "float32")],  # no broadcast
], ids=["condition type", "value types", "broadcast"])
def test_rejects_what_tflm_rejects(specs: list) -> None:
    m = op_model("SELECT_V2", specs, [T(specs[1].shape, specs[1].dtype, specs[1].scale, specs[1].zero_point)])
    with pytest.raises(TflmError):
        run_tflm(m, [np.zeros(s.shape, s.dtype) for s in specs])
    with pytest.raises(PrepareError):
        Interpreter(m).allocate_tensors()


@pytest.mark.parametrize("out", [T((2, 3), "int16", 0.1, 0), T((2, 4), "int8", 0.1, 0)], ids=["type", "shape"])
def test_rejects_bad_outputs(out: T) -> None:
    """TFLM writes x's bytes into whatever the output is (garbage); micronn refuses."""
    specs = [T((2, 3), "bool"), T((2, 3), "int8", 0.1, 0), T((2, 3), "int8", 0.1, 0)]
    with pytest.raises(PrepareError):
        Interpreter(op_model("SELECT_V2", specs, [out])).allocate_tensors()


def test_rejects_7d() -> None:
    shape = (1, 1, 1, 1, 1, 2, 3)
    with pytest.raises(PrepareError, match="dimensions"):
        Interpreter(model("float32", (shape, shape, (1,), shape))).allocate_tensors()
