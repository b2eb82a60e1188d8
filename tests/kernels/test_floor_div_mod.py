"""FLOOR_DIV and FLOOR_MOD against the TFLM wheel, byte for byte: floor of the double quotient, fmodf plus
the divisor on a sign mismatch, special values, broadcasting (4-D at most), division by zero."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import InvokeError, MicronnError, PrepareError, UnsupportedError
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_tflm, tflm_arena

OPS = ["FLOOR_DIV", "FLOOR_MOD"]

SHAPES = [
    ((2, 3), (2, 3), (2, 3)),
    ((2, 3), (3,), (2, 3)),
    ((3,), (2, 3), (2, 3)),
    ((2, 1, 4), (3, 1), (2, 3, 4)),
    ((1, 2, 3, 4), (4,), (1, 2, 3, 4)),
    ((2, 1, 3, 1), (1, 4, 1, 5), (2, 4, 3, 5)),
    ((2, 3), (1,), (2, 3)),
    ((1, 2, 1, 3, 1, 2, 2), (1, 2, 1, 3, 1, 2, 2), (24,)),  # identical shapes: flat, any rank up to 6... or more
]


def binary(op: str, s1, s2, so) -> bytes:
    return op_model(op, [T(s1, "float32"), T(s2, "float32")], [T(so, "float32")])


def values(shape, rng: np.random.Generator, scale: float) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def nonzero(shape, rng: np.random.Generator) -> np.ndarray:
    x = values(shape, rng, 3.0)
    return np.where(x == 0, np.float32(1), x)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("s1,s2,so", SHAPES[:-1], ids=str)
def test_matches_tflm(op: str, s1: tuple, s2: tuple, so: tuple) -> None:
    rng = np.random.default_rng(len(s1) * 7 + len(s2))
    model = binary(op, s1, s2, so)
    for scale in (1.0, 100.0):
        assert_same_as_tflm(model, [values(s1, rng, scale), nonzero(s2, rng)])


@pytest.mark.parametrize("op", OPS)
def test_flat_path_takes_any_output_shape_of_the_same_size(op: str) -> None:
    """Identical input shapes skip broadcasting; only the output's element count matters (6-D here)."""
    s = (1, 2, 1, 3, 2, 2)
    rng = np.random.default_rng(2)
    assert_same_as_tflm(binary(op, s, s, (24,)), [values(s, rng, 10.0), nonzero(s, rng)])


def special_operands() -> tuple[np.ndarray, np.ndarray]:
    """Every pair of special values: zeros, infinities, NaN payloads, extremes, integers and halves."""
    nan = np.array([0x7FC00001, 0xFFC12345], np.uint32).view(np.float32)
    v = np.concatenate([nan, np.array([0.0, -0.0, np.inf, -np.inf, 1e-45, -1e-45, 1.0, -1.0, 2.5, -2.5, 3.0, 7.0,
                                       -7.0, 0.1, 16777217.0, 3.4028235e38, -3.4028235e38, 1e-30, 5e-39],
                                      np.float32)])
    a, b = np.meshgrid(v, v, indexing="ij")
    return a.astype(np.float32), b.astype(np.float32)


def test_floor_div_specials() -> None:
    a, b = special_operands()
    b = np.where(b == 0, np.float32(0.5), b)  # a zero divisor fails the invoke (tested below)
    assert_same_as_tflm(binary("FLOOR_DIV", a.shape, b.shape, a.shape), [a, b])


def test_floor_div_uses_the_double_quotient() -> None:
    """Quotients just below an integer round up to it in float32 but not in double: TFLM floors the double."""
    rng = np.random.default_rng(5)
    b = rng.uniform(0.1, 10, 4000).astype(np.float32)
    q = rng.integers(1, 1000, 4000).astype(np.float32)
    a = (q * b).astype(np.float32)  # a / b lands on or next to the integer q
    a = np.concatenate([a, np.nextafter(a, np.float32(0))]).reshape(2, -1)
    b = np.concatenate([b, b]).reshape(2, -1)
    out = assert_same_as_tflm(binary("FLOOR_DIV", a.shape, b.shape, a.shape), [a, b])[0][0]
    assert (out != np.floor(a / b)).any()  # the float32 quotient would floor differently somewhere


def test_floor_mod_specials() -> None:
    """Zero divisors give NaN (no check), zero remainders keep their sign, infinities give NaN."""
    a, b = special_operands()
    assert_same_as_tflm(binary("FLOOR_MOD", a.shape, b.shape, a.shape), [a, b])


NAN_PAIRS = [(0x7FC00001, 0xFFC12345), (0x7FC00005, 0x7FC00003), (0x7FC00003, 0xFFC00003), (0xFFC00000, 0x7FC00000),
             (0x7F800001, 0x7FC00000), (0x7F800005, 0x7F800003), (0x7F800003, 0x7FC00003), (0x7FA00000, 0x7FC00001),
             (0x7F800001, 0x40000000), (0x40000000, 0xFF800002), (0xFFC00002, 0xC0000000)]


@pytest.mark.parametrize("op", OPS)
def test_nan_pairs(op: str) -> None:
    """FLOOR_MOD's fmod is x87 fprem in the wheel: of two NaNs the larger significand wins (quieted first)."""
    pairs = np.array(NAN_PAIRS + [(b, a) for a, b in NAN_PAIRS], np.uint32)
    a, b = pairs[:, 0].view(np.float32).reshape(1, -1), pairs[:, 1].view(np.float32).reshape(1, -1)
    assert_same_as_tflm(binary(op, a.shape, b.shape, a.shape), [a, b])


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("a,b", [(7.5, -2.0), (-7.5, 2.0), (np.nan, np.nan), (-0.0, 3.0)], ids=str)
def test_scalars(op: str, a: float, b: float) -> None:
    """0-D constant operands (the harness cannot feed 0-D model inputs)."""
    model = op_model(op, [T((), "float32", data=a), T((), "float32", data=b)], [T((), "float32")])
    assert_same_as_tflm(model, [])


@pytest.mark.parametrize("op", OPS)
def test_head_equals_tflm(op: str) -> None:
    model = op_model(op, [T((2, 1, 4), "float32"), T((3, 1), "float32", data=[1.5, -2.0, 3.0])],
                     [T((2, 3, 4), "float32")])
    it = Interpreter(model, planner="tflm")
    it.allocate_tensors()
    assert it.head == tflm_arena(model)["head"]


@pytest.mark.parametrize("zero", [0.0, -0.0])
def test_floor_div_by_zero_fails_at_invoke(zero: float) -> None:
    model = binary("FLOOR_DIV", (2, 3), (3,), (2, 3))
    inputs = [np.ones((2, 3), np.float32), np.array([1, zero, 2], np.float32)]
    with pytest.raises(TflmError, match="Division by 0"):
        run_tflm(model, inputs)
    it = Interpreter(model)
    for i, x in enumerate(inputs):
        it.set_input(x, i)
    with pytest.raises(InvokeError, match="division by 0"):
        it.invoke()


def test_floor_div_by_constant_zero_fails_at_prepare() -> None:
    model = op_model("FLOOR_DIV", [T((2, 3), "float32"), T((3,), "float32", data=[1, 0, 2])], [T((2, 3), "float32")])
    with pytest.raises(TflmError):
        run_tflm(model, [np.ones((2, 3), np.float32)])
    with pytest.raises(PrepareError, match="zero"):
        Interpreter(model).allocate_tensors()


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("out_dtype", ["int32", "int8"])
def test_rejects_what_tflm_rejects(op: str, out_dtype: str) -> None:
    model = op_model(op, [T((2, 3), "float32"), T((2, 3), "float32")], [T((2, 3), out_dtype)])
    with pytest.raises(TflmError):
        run_tflm(model, [])
    with pytest.raises(PrepareError):
        Interpreter(model).allocate_tensors()


@pytest.mark.parametrize("op", OPS)
def test_refuses_broadcasting_beyond_4_dims(op: str) -> None:
    """TFLM's 4-D broadcasting loop aborts the process on a 5-D operand: micronn refuses the model."""
    with pytest.raises(PrepareError, match="at most 4"):
        Interpreter(binary(op, (2, 1, 1, 1, 3), (3,), (2, 1, 1, 1, 3))).allocate_tensors()


@pytest.mark.parametrize("op", OPS)
def test_refuses_wrong_broadcast_output(op: str) -> None:
    with pytest.raises(MicronnError):
        Interpreter(binary(op, (2, 3), (3,), (3, 3))).allocate_tensors()


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", ["int32", "int8", "int16"])
def test_unsupported_types(op: str, dtype: str) -> None:
    """The wheel fails integer FLOOR_DIV/FLOOR_MOD at invoke; micronn refuses them when loading."""
    model = op_model(op, [T((2, 3), dtype), T((2, 3), dtype)], [T((2, 3), dtype)])
    with pytest.raises(TflmError, match="not supported"):
        run_tflm(model, [np.ones((2, 3), dtype)] * 2)
    with pytest.raises(UnsupportedError):
        Interpreter(model)
