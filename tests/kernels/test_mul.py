"""MUL against the TFLM wheel, byte for byte, and the models TFLM refuses."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import PrepareError, UnsupportedError
from micronn.ir import Activation
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_tflm, tflm_arena
from micronn.tflite import schema

DTYPES = ["float32", "int8", "int16", "int32"]
QUANT = {
    "int8": [(0.05, 3), (0.02, -7), (0.006, 1)],
    "int16": [(0.001, 0), (0.0004, 0), (0.00002, 0)],
}
SHAPES = [
    ((2, 3), (2, 3), (2, 3)),
    ((2, 3, 4), (4,), (2, 3, 4)),
    ((1, 4, 4, 3), (1, 1, 1, 3), (1, 4, 4, 3)),
    ((3, 1), (1, 4), (3, 4)),
    ((1,), (2, 2, 3), (2, 2, 3)),
    ((2, 1, 3, 1, 2, 1), (1, 3, 1, 2, 1, 2), (2, 3, 3, 2, 2, 2)),
    ((2, 3), (2, 3), (3, 2)),
]


def model(dtype: str, shapes=((2, 3), (2, 3), (2, 3)), act: int = Activation.NONE, quant: list | None = None) -> bytes:
    q = quant or QUANT.get(dtype, [(None, None)] * 3)
    a, b, o = (T(s, dtype, *qq) for s, qq in zip(shapes, q))
    return op_model("MUL", [a, b], [o], schema.options("MUL", fused_activation_function=act))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_matches_tflm(dtype: str, shapes: tuple) -> None:
    assert_same_as_tflm(model(dtype, shapes), runs=2)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("act", list(Activation), ids=lambda a: a.name)
def test_fused_activations(dtype: str, act: Activation) -> None:
    assert_same_as_tflm(model(dtype, ((3, 1, 4), (5, 4), (3, 5, 4)), act), runs=2)


@pytest.mark.parametrize("quant", [
    [(0.02, -7), (0.03, 9), (0.0001, 4)],  # multiplier above one
    [(0.5, 0), (0.7, 0), (0.01, 0)],
    [(0.001, -128), (0.002, 127), (0.3, -128)],  # tiny multiplier
], ids=str)
@pytest.mark.parametrize("act", [Activation.NONE, Activation.RELU6])
def test_int8_every_pair_of_values(quant: list, act: Activation) -> None:
    x = np.arange(-128, 128, dtype=np.int8)
    m = model("int8", ((256, 1), (1, 256), (256, 256)), act, quant)
    assert_same_as_tflm(m, inputs=[x.reshape(256, 1), x.reshape(1, 256)])


@pytest.mark.parametrize("quant", [
    [(0.0002, 0), (0.0003, 0), (1e-8, 0)],
    [(0.005, 0), (0.007, 0), (0.0001, 0)],
    [(1.0, 0), (1.0, 0), (1.0, 0)],  # products saturate: TFLM's int16 MUL rescales, it is not a Q15 product
], ids=str)
def test_int16_wide_grid(quant: list) -> None:
    rng = np.random.default_rng(3)
    xs = [rng.integers(-32768, 32768, shape).astype(np.int16) for shape in ((128, 1), (1, 128))]
    xs[0][:2, 0] = [-32768, 32767]
    assert_same_as_tflm(model("int16", ((128, 1), (1, 128), (128, 128)), quant=quant), inputs=xs)


def test_float_saturates_and_keeps_special_values() -> None:
    x = np.array([3e38, -3e38, np.inf, np.nan, -0.0, 2.0, np.inf, 1.0], np.float32)
    y = np.array([3e38, 3e38, 1.0, 1.0, 5.0, -0.0, 0.0, np.nan], np.float32)
    assert_same_as_tflm(model("float32", ((8,), (8,), (8,))), inputs=[x, y])


@pytest.mark.parametrize("act", [Activation.NONE, Activation.RELU])
def test_int32_wraps(act: Activation) -> None:
    x = np.array([2**31 - 1, -(2**31), 65536, -5, 7, 46341], np.int32)
    y = np.array([2, -1, 65536, 3, -8, 46341], np.int32)
    assert_same_as_tflm(model("int32", ((6,), (6,), (6,)), act), inputs=[x, y])


def test_head_equals_tflm() -> None:
    m = model("int8", ((2, 3, 4), (4,), (2, 3, 4)))
    it = Interpreter(m, planner="tflm")
    it.allocate_tensors()
    assert it.head == tflm_arena(m)["head"]


@pytest.mark.parametrize("dtype", ["int64", "uint8"])
def test_unsupported_types(dtype: str) -> None:
    m = op_model("MUL", [T((2, 3), dtype), T((2, 3), dtype)], [T((2, 3), dtype)])
    with pytest.raises(TflmError):
        run_tflm(m, [np.zeros((2, 3), dtype)] * 2)
    with pytest.raises(UnsupportedError):
        Interpreter(m)


@pytest.mark.parametrize("which", [0, 1, 2])
def test_int16_needs_zero_points_of_zero(which: int) -> None:
    quant = [(0.01, 0)] * 3
    quant[which] = (0.01, 5)
    m = model("int16", quant=quant)
    with pytest.raises(TflmError, match="zero_point"):
        run_tflm(m, [np.zeros((2, 3), np.int16)] * 2)
    with pytest.raises(PrepareError, match="zero points"):
        Interpreter(m).allocate_tensors()


@pytest.mark.parametrize("shapes", [
    ((2, 3), (2, 4), (2, 4)),
    ((2, 3), (2, 3), (2, 4)),
    ((1, 1, 1, 1, 1, 1, 2), (2,), (1, 1, 1, 1, 1, 1, 2)),
], ids=str)
def test_rejects_bad_shapes(shapes: tuple) -> None:
    with pytest.raises(PrepareError):
        Interpreter(model("float32", shapes)).allocate_tensors()


@pytest.mark.parametrize("op", ["MUL", "ADD", "SUB"])
@pytest.mark.parametrize("sa,sb", [((6,), (6,)), ((6,), (1,)), ((1,), (6,)), ((2, 3), (1, 3)), ((2, 3), (2, 1)),
                                   ((2, 1), (1, 3)), ((3,), ()), ((), (3,)), ((3, 1), (3, 1)),
                                   ((2, 1, 1, 1, 1, 3), (1, 1, 1, 1, 1, 3))], ids=str)
def test_float_two_nans_keep_tflms_operand(op: str, sa: tuple, sb: tuple) -> None:
    """Of two NaNs TFLM returns the one its compiled loop puts first; the sign bit tells them apart (a fuzz find)."""
    x, y = np.full(sa, np.nan, np.float32), np.full(sb, -np.nan, np.float32)
    out = np.broadcast_shapes(sa, sb)
    assert_same_as_tflm(op_model(op, [T(sa, "float32"), T(sb, "float32")], [T(out, "float32")]), [x, y])
