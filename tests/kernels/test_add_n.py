"""ADD_N against the TFLM wheel, byte for byte: float32 summation order and signed zeros, int8 rescaling,
int32 wrap-around of the quantized total, scratch (one pointer per input), and what TFLM refuses."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import PrepareError, UnsupportedError
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_tflm, tflm_arena


def add_n_model(dtype: str, shape, n: int, qin=(0.1, 3), qout=(0.3, -5), out_shape=None) -> bytes:
    qi, qo = (qin, qout) if dtype == "int8" else ((None, None), (None, None))
    return op_model("ADD_N", [T(shape, dtype, *qi)] * n, [T(out_shape or shape, dtype, *qo)])


@pytest.mark.parametrize("dtype", ["float32", "int8"])
@pytest.mark.parametrize("shape,n", [((2, 3, 4), 2), ((7,), 3), ((1, 2, 1, 3, 2), 5), ((3, 4), 9)], ids=str)
def test_matches_tflm(dtype: str, shape: tuple, n: int) -> None:
    assert_same_as_tflm(add_n_model(dtype, shape, n), runs=2)


def test_float_order_and_specials() -> None:
    """float32 adds in input order from +0.0: -0.0 sums to +0.0, the first NaN wins, overflow gives inf."""
    x = np.array([-0.0, 1e38, 3e38, np.inf, 1.0, 1e-45, 16777216.0, 2.5], np.float32)
    nan1 = np.array([0x7FC00001], np.uint32).view(np.float32)[0]
    nan2 = np.array([0xFFC00002], np.uint32).view(np.float32)[0]
    y = np.array([-0.0, 3e38, 1e38, -np.inf, nan1, -1e-45, 1.0, -2.5], np.float32)
    z = np.array([-0.0, -1e38, 3e38, 1.0, nan2, 0.0, 1.0, 1e-8], np.float32)
    model = add_n_model("float32", (8,), 3)
    out = assert_same_as_tflm(model, [x, y, z])[0][0]
    assert out.view(np.uint32)[0] == 0  # +0.0
    assert_same_as_tflm(model, [z, x, y])


@pytest.mark.parametrize("qin,qout", [((0.1, 0), (0.1, 0)), ((0.02, -128), (0.5, 127)), ((0.5, 3), (0.01, 0)),
                                      ((0.05, 127), (0.2, -128)), ((0.0173, -7), (0.0174, 9))], ids=str)
def test_int8_rescaling(qin: tuple, qout: tuple) -> None:
    model = add_n_model("int8", (4, 64), 3, qin, qout)
    values = np.arange(-128, 128, dtype=np.int64).astype(np.int8).reshape(4, 64)
    assert_same_as_tflm(model, [values, values[::-1], np.roll(values, 7)])
    assert_same_as_tflm(model, runs=2)


def test_int8_total_starts_at_a_quantized_zero() -> None:
    """TFLM's total starts at the scaled -zero point, as if a quantized 0 were one more input."""
    model = add_n_model("int8", (2, 4), 2, (0.1, 100), (0.1, 0))
    zeros = np.full((2, 4), 100, np.int8)  # real 0.0 in every input
    out = assert_same_as_tflm(model, [zeros, zeros])[0][0]
    assert (out != 0).all()


def test_int8_total_wraps() -> None:
    """Twenty inputs at the extremes overflow TFLM's int32 total, which wraps; micronn wraps the same way."""
    model = add_n_model("int8", (2, 3), 20, (0.1, -128), (0.5, 0))
    high = np.full((2, 3), 127, np.int8)
    low = np.full((2, 3), -128, np.int8)
    assert_same_as_tflm(model, [high] * 20)
    assert_same_as_tflm(model, [high] * 10 + [low] * 10)


def test_output_shape_needs_only_the_element_count() -> None:
    assert_same_as_tflm(add_n_model("float32", (2, 6), 3, out_shape=(3, 4)), runs=1)


@pytest.mark.parametrize("dtype,n", [("float32", 2), ("float32", 7), ("int8", 3)])
def test_head_equals_tflm(dtype: str, n: int) -> None:
    """TFLM requests one scratch buffer of sizeof(T*) (8 bytes on the host) per input."""
    model = add_n_model(dtype, (3, 5), n)
    it = Interpreter(model, planner="tflm")
    it.allocate_tensors()
    assert it.head == tflm_arena(model)["head"]


@pytest.mark.parametrize("model", [
    op_model("ADD_N", [T((2, 3), "int8", 0.1, 0), T((2, 3), "int8", 0.2, 0)], [T((2, 3), "int8", 0.1, 0)]),
    op_model("ADD_N", [T((2, 3), "int8", 0.1, 0), T((2, 3), "int8", 0.1, 1)], [T((2, 3), "int8", 0.1, 0)]),
    op_model("ADD_N", [T((2, 3), "float32"), T((3, 2), "float32")], [T((2, 3), "float32")]),
    op_model("ADD_N", [T((2, 3), "float32")], [T((2, 3), "float32")]),
    op_model("ADD_N", [T((2, 3), "float32")] * 2, [T((2, 3), "int32")]),
], ids=["scales differ", "zero points differ", "shapes differ", "one input", "output type"])
def test_rejects_what_tflm_rejects(model: bytes) -> None:
    with pytest.raises(TflmError):
        run_tflm(model, [])
    with pytest.raises(PrepareError):
        Interpreter(model).allocate_tensors()


@pytest.mark.parametrize("model", [
    add_n_model("int8", (2, 3), 2, (1.0, 0), (1e-7, 0)),  # output multiplier >= 1: TFLM aborts
    op_model("ADD_N", [T((2, 3), "int8")] * 2, [T((2, 3), "int8")]),  # no quantization: a NaN multiplier, abort
    add_n_model("float32", (2, 3), 2, out_shape=(7,)),  # TFLM would read past the inputs
], ids=["output multiplier >= 1", "unquantized int8", "output larger"])
def test_refuses_what_crashes_tflm(model: bytes) -> None:
    with pytest.raises(PrepareError):
        Interpreter(model).allocate_tensors()


@pytest.mark.parametrize("dtype", ["int16", "int32"])
def test_unsupported_types(dtype: str) -> None:
    model = op_model("ADD_N", [T((2, 3), dtype)] * 2, [T((2, 3), dtype)])
    with pytest.raises(TflmError):
        run_tflm(model, [])
    with pytest.raises(UnsupportedError):
        Interpreter(model)
