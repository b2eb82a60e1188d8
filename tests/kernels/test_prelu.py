"""PRELU against the TFLM wheel, byte for byte, and the models TFLM refuses."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import PrepareError, UnsupportedError
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_tflm

SHAPES = [
    ((2, 3), (2, 3), (2, 3)),
    ((1, 4, 4, 3), (3,), (1, 4, 4, 3)),
    ((1, 4, 4, 3), (1, 1, 3), (1, 4, 4, 3)),
    ((2, 3), (3, 1, 1), (3, 2, 3)),  # alpha broadcasts the input too
    ((1, 2, 2, 3), (2, 1, 3), (1, 2, 2, 3)),
    ((5,), (1,), (5,)),
]
QUANT = [(0.05, 3), (0.02, -7), (0.04, 1)]


def model(dtype: str, shapes: tuple, quant: list | None = None, alpha=None) -> bytes:
    q = quant or (QUANT if dtype == "int8" else [(None, None)] * 3)
    x, a, o = (T(s, dtype, *qq) for s, qq in zip(shapes, q))
    if alpha is not None:
        a = T(shapes[1], dtype, *q[1], data=alpha)
    return op_model("PRELU", [x, a], [o])


@pytest.mark.parametrize("dtype", ["float32", "int8"])
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_matches_tflm(dtype: str, shapes: tuple) -> None:
    assert_same_as_tflm(model(dtype, shapes), runs=3)


def test_constant_alpha() -> None:
    alpha = np.array([0.1, -0.5, 2.0], np.float32)
    assert_same_as_tflm(model("float32", ((1, 4, 4, 3), (3,), (1, 4, 4, 3)), alpha=alpha), runs=2)


@pytest.mark.parametrize("quant", [
    [(0.1, 3), (0.1, 3), (0.1, 0)],
    [(0.02, -7), (0.5, 100), (0.3, -128)],
    [(0.05, 1), (0.07, -1), (0.00011, 2)],
    [(0.5, 0), (0.01, 0), (0.01, 0)],
], ids=str)
def test_int8_every_pair_of_values(quant: list) -> None:
    x = np.arange(-128, 128, dtype=np.int8)
    m = model("int8", ((256, 1), (1, 256), (256, 256)), quant)
    assert_same_as_tflm(m, inputs=[x.reshape(256, 1), x.reshape(1, 256)])


def test_float_special_values() -> None:
    x = np.array([-0.0, 0.0, np.nan, -np.inf, np.inf, -3e38, -1.0], np.float32)
    a = np.array([2.0, 2.0, 2.0, 0.5, 0.5, 10.0, np.nan], np.float32)
    assert_same_as_tflm(model("float32", ((7,), (7,), (7,))), inputs=[x, a])


@pytest.mark.parametrize("dtype", ["int16", "int32"])
def test_unsupported_types(dtype: str) -> None:
    q = [(0.1, 0)] * 3 if dtype == "int16" else None
    m = model(dtype, SHAPES[0], q)
    with pytest.raises(TflmError):
        run_tflm(m, [np.zeros((2, 3), dtype)] * 2)
    with pytest.raises(UnsupportedError):
        Interpreter(m)


def test_rejects_5d() -> None:
    """TFLM's PRELU is 4-D only: float32 crashes, int8 computes garbage; micronn refuses both."""
    for dtype in ("float32", "int8"):
        with pytest.raises(PrepareError, match="dimensions"):
            Interpreter(model(dtype, ((1, 2, 2, 2, 3), (3,), (1, 2, 2, 2, 3)))).allocate_tensors()


@pytest.mark.parametrize("specs", [
    [T((2, 3), "int8", 0.1, 0), T((3,), "float32"), T((2, 3), "int8", 0.1, 0)],
    [T((2, 3), "float32"), T((3,), "float32"), T((2, 3), "int8", 0.1, 0)],
    [T((2, 3), "float32"), T((4,), "float32"), T((2, 3), "float32")],
], ids=["alpha type", "output type", "alpha shape"])
def test_rejects_invalid_models(specs: list) -> None:
    with pytest.raises(PrepareError):
        Interpreter(op_model("PRELU", specs[:2], specs[2:])).allocate_tensors()
