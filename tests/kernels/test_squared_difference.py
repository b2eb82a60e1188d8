"""SQUARED_DIFFERENCE against the TFLM wheel, byte for byte, and the models TFLM refuses."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import PrepareError, UnsupportedError
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_tflm

OP = "SQUARED_DIFFERENCE"
QUANT = {
    "int8": [(0.05, 3), (0.02, -7), (0.06, 1)],
    "int16": [(0.001, 0), (0.0004, 0), (0.0012, 0)],
}
SHAPES = [
    ((2, 3), (2, 3), (2, 3)),
    ((2, 3, 4), (4,), (2, 3, 4)),
    ((3, 1), (1, 4), (3, 4)),
    ((2, 1, 3, 1, 2, 1), (1, 3, 1, 2, 1, 2), (2, 3, 3, 2, 2, 2)),
    ((2, 3), (2, 3), (6,)),
]


def model(dtype: str, shapes=((2, 3), (2, 3), (2, 3)), quant: list | None = None) -> bytes:
    q = quant or QUANT.get(dtype, [(None, None)] * 3)
    a, b, o = (T(s, dtype, *qq) for s, qq in zip(shapes, q))
    return op_model(OP, [a, b], [o])


@pytest.mark.parametrize("dtype", ["float32", "int8", "int16", "int32"])
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_matches_tflm(dtype: str, shapes: tuple) -> None:
    assert_same_as_tflm(model(dtype, shapes), runs=2)


@pytest.mark.parametrize("quant", [
    [(0.1, 3), (0.1, 3), (0.1, 0)],
    [(0.02, -7), (0.5, 100), (0.3, -128)],
    [(0.05, 1), (0.07, -1), (0.00011, 2)],  # saturates
    [(1.0, 0), (1.0, 0), (1e-9, 0)],  # a huge output multiplier is fine (QuantizeMultiplier, not < 1)
], ids=str)
def test_int8_every_pair_of_values(quant: list) -> None:
    """Operands shifted left by 7 bits, rescaled, difference squared and rescaled: all 65,536 pairs."""
    x = np.arange(-128, 128, dtype=np.int8)
    assert_same_as_tflm(model("int8", ((256, 1), (1, 256), (256, 256)), quant),
                        inputs=[x.reshape(256, 1), x.reshape(1, 256)])


@pytest.mark.parametrize("quant", [
    [(0.001, 0), (0.002, 0), (0.0004, 0)],
    [(0.0003, 0), (0.0001, 0), (0.5, 0)],
], ids=str)
def test_int16_wide_grid(quant: list) -> None:
    """int16 operands are not shifted (left shift 0)."""
    rng = np.random.default_rng(0)
    xs = [rng.integers(-32768, 32768, shape).astype(np.int16) for shape in ((128, 1), (1, 128))]
    assert_same_as_tflm(model("int16", ((128, 1), (1, 128), (128, 128)), quant), inputs=xs)


def test_float_and_int32_overflow() -> None:
    x, y = np.array([3e38, -3e38, np.inf, np.nan], np.float32), np.array([-3e38, 0, 1, 0], np.float32)
    assert_same_as_tflm(model("float32", ((4,), (4,), (4,))), inputs=[x, y])
    i, j = np.array([2**31 - 1, 65536, -(2**31), 3], np.int32), np.array([-1, 0, 1, 5], np.int32)
    assert_same_as_tflm(model("int32", ((4,), (4,), (4,))), inputs=[i, j])


@pytest.mark.parametrize("which", [0, 1, 2])
def test_int16_needs_zero_points_of_zero(which: int) -> None:
    quant = [(0.01, 0)] * 3
    quant[which] = (0.01, 5)
    m = model("int16", quant=quant)
    with pytest.raises(TflmError, match="zero_point"):
        run_tflm(m, [np.zeros((2, 3), np.int16)] * 2)
    with pytest.raises(PrepareError, match="zero points"):
        Interpreter(m).allocate_tensors()


@pytest.mark.parametrize("dtype", ["int64", "uint8"])
def test_unsupported_types(dtype: str) -> None:
    m = model(dtype)
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
        Interpreter(model("float32", shapes)).allocate_tensors()
