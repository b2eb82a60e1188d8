"""DIV against the TFLM wheel, byte for byte, including TFLM's behaviour on zero divisors."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import InvokeError, PrepareError, UnsupportedError
from micronn.ir import Activation
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_micronn, run_tflm
from micronn.tflite import schema

QUANT = [(0.05, 3), (0.02, -7), (0.06, 1)]
SHAPES = [
    ((2, 3), (2, 3), (2, 3)),
    ((2, 3, 4), (4,), (2, 3, 4)),
    ((3, 1), (1, 4), (3, 4)),
    ((2, 1, 3, 1, 2, 1), (1, 3, 1, 2, 1, 2), (2, 3, 3, 2, 2, 2)),
    ((2, 3), (2, 3), (6,)),
]


def model(dtype: str, shapes=((2, 3), (2, 3), (2, 3)), act: int = Activation.NONE, quant: list | None = None) -> bytes:
    q = quant or (QUANT if dtype == "int8" else [(None, None)] * 3)
    a, b, o = (T(s, dtype, *qq) for s, qq in zip(shapes, q))
    return op_model("DIV", [a, b], [o], schema.options("DIV", fused_activation_function=act))


def nonzero_int32(shape: tuple, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).integers(-1000, 1000, shape).astype(np.int32)
    x[x == 0] = 7
    return x


@pytest.mark.parametrize("dtype", ["float32", "int8"])
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_matches_tflm(dtype: str, shapes: tuple) -> None:
    assert_same_as_tflm(model(dtype, shapes), runs=2)


@pytest.mark.parametrize("shapes", SHAPES, ids=str)
@pytest.mark.parametrize("act", list(Activation), ids=lambda a: a.name)
def test_int32_truncates_toward_zero(shapes: tuple, act: Activation) -> None:
    xs = [nonzero_int32(shapes[0], 0) * 37, nonzero_int32(shapes[1], 1)]
    assert_same_as_tflm(model("int32", shapes, act), inputs=xs)


@pytest.mark.parametrize("dtype", ["float32", "int8"])
@pytest.mark.parametrize("act", list(Activation), ids=lambda a: a.name)
def test_fused_activations(dtype: str, act: Activation) -> None:
    assert_same_as_tflm(model(dtype, ((3, 1, 4), (5, 4), (3, 5, 4)), act), runs=2)


@pytest.mark.parametrize("quant", [
    [(0.1, 3), (0.1, 3), (0.1, 0)],
    [(0.02, -7), (0.5, 100), (0.3, -128)],
    [(0.5, 0), (0.01, 0), (0.9, 0)],  # large quotients saturate
    [(0.05, 1), (0.07, -1), (0.00011, 2)],
    [(0.003, -128), (0.2, 127), (0.004, 0)],
], ids=str)
@pytest.mark.parametrize("act", [Activation.NONE, Activation.RELU])
def test_int8_every_pair_of_values(quant: list, act: Activation) -> None:
    """All 65,536 pairs, the divisor's zero point included: TFLM returns finite values for x / 0 (its fixed-point
    reciprocal of 0 wraps), and shifts past 31 bits follow x86's masked shifts; micronn reproduces both."""
    x = np.arange(-128, 128, dtype=np.int8)
    m = model("int8", ((256, 1), (1, 256), (256, 256)), act, quant)
    assert_same_as_tflm(m, inputs=[x.reshape(256, 1), x.reshape(1, 256)])


def test_float_special_values() -> None:
    """x / 0 is +-inf, clamped to +-FLT_MAX; 0 / 0 and inf / inf are NaN."""
    x = np.array([1, -1, 0, 1, np.inf, 3, -0.0, 3e38], np.float32)
    y = np.array([0, 0, 0, -0.0, np.inf, 7, 5, 1e-30], np.float32)
    assert_same_as_tflm(model("float32", ((8,), (8,), (8,))), inputs=[x, y])


def test_int32_zero_divisor_fails_the_invoke() -> None:
    m = model("int32")
    xs = [np.full((2, 3), 5, np.int32), np.array([[1, 2, 3], [0, 1, 1]], np.int32)]
    with pytest.raises(TflmError, match="invoke"):
        run_tflm(m, xs)
    with pytest.raises(InvokeError, match="division by zero"):
        run_micronn(m, xs)


def test_int32_min_over_minus_one_is_refused() -> None:
    """TFLM dies of SIGFPE (not run on the wheel); micronn raises."""
    xs = [np.full((2, 3), -(2**31), np.int32), np.full((2, 3), -1, np.int32)]
    with pytest.raises(InvokeError, match="overflows"):
        run_micronn(model("int32"), xs)


@pytest.mark.parametrize("dtype", ["int16", "int64", "uint8"])
def test_unsupported_types(dtype: str) -> None:
    q = (0.1, 0) if dtype == "int16" else (None, None)
    m = op_model("DIV", [T((2, 3), dtype, *q), T((2, 3), dtype, *q)], [T((2, 3), dtype, *q)])
    with pytest.raises(TflmError):
        run_tflm(m, [np.ones((2, 3), dtype)] * 2)
    with pytest.raises(UnsupportedError):
        Interpreter(m)


def test_rejects_int8_without_quantization() -> None:
    """TFLM divides by a zero scale and computes garbage; micronn refuses."""
    m = op_model("DIV", [T((2, 3), "int8"), T((2, 3), "int8")], [T((2, 3), "int8")])
    with pytest.raises(PrepareError, match="quantization"):
        Interpreter(m).allocate_tensors()


def test_rejects_a_huge_output_multiplier() -> None:
    """TFLM's final shift would turn into a left shift by a negative count (undefined); micronn refuses."""
    with pytest.raises(PrepareError, match="too large"):
        Interpreter(model("int8", quant=[(1.0, 0), (1e-4, 0), (1e-4, 0)])).allocate_tensors()


@pytest.mark.parametrize("shapes", [((2, 3), (2, 4), (2, 4)), ((2, 3), (2, 3), (2, 4))], ids=str)
def test_rejects_bad_shapes(shapes: tuple) -> None:
    with pytest.raises(PrepareError):
        Interpreter(model("float32", shapes)).allocate_tensors()
