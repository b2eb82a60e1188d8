"""SIN and COS against the TFLM wheel, byte for byte: C's sinf/cosf (glibc is not correctly rounded: micronn
sends values near a float32 rounding tie to the C library), NaN payloads, huge arguments; TFLM is float32 only."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import MicronnError, UnsupportedError
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_tflm, tflm_arena

OPS = ["SIN", "COS"]

SPECIALS = np.concatenate([
    np.array([0x7FC00001, 0xFFC12345, 0x7F800001, 0xFFC00000], np.uint32).view(np.float32),
    np.array([0.0, -0.0, 1e-45, -1e-45, 1.1754942e-38, 1e-20, 0.5, 1.0, -1.0, np.pi / 2, np.pi, -np.pi, 2 * np.pi,
              1e5, 12345.678, 1.8446743e19, 3.4028235e38, -3.4028235e38, np.inf, -np.inf], np.float32),
    # where glibc's sinf and cosf come closest to a rounding tie without being correctly rounded
    np.array([float.fromhex("0x1.0c05ccp-1"), float.fromhex("0x1.ff282p+51")], np.float32),
])


def trig_inputs(seed: int, n: int = 3000) -> np.ndarray:
    """Specials, then values around 0, around multiples of pi/2 and magnitudes from 1e-30 to 1e38, both signs."""
    rng = np.random.default_rng(seed)
    wide = np.exp(rng.uniform(-69, 88, n)) * rng.choice([-1, 1], n)
    near_half_pi = (np.pi / 2) * rng.integers(-1000, 1000, n) + rng.normal(0, 1e-3, n)
    rest = np.concatenate([rng.standard_normal(n) * 3, near_half_pi, wide]).astype(np.float32)
    return np.concatenate([SPECIALS, rest]).reshape(1, -1)


@pytest.mark.parametrize("op", OPS)
def test_matches_tflm(op: str) -> None:
    x = trig_inputs(OPS.index(op))
    model = op_model(op, [T(x.shape, "float32")], [T(x.shape, "float32")])
    assert_same_as_tflm(model, [x])
    assert_same_as_tflm(model, [-x])


@pytest.mark.parametrize("op", OPS)
def test_near_rounding_ties(op: str) -> None:
    """Consecutive floats in ranges where float64-rounded results differ from glibc's in the last bit."""
    starts = [0x3F000000, 0x3F490FDB, 0x40C90FDB, 0x4B000000, 0x5F000000]
    bits = np.concatenate([np.arange(s, s + 4000, dtype=np.uint32) for s in starts])
    x = bits.view(np.float32).reshape(len(starts), -1)
    assert_same_as_tflm(op_model(op, [T(x.shape, "float32")], [T(x.shape, "float32")]), [x])


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("shape,out_shape", [((1,), (1,)), ((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (4, 6)),
                                             ((1, 2, 1, 3, 1, 2, 2), (24,))], ids=str)
def test_shapes(op: str, shape: tuple, out_shape: tuple) -> None:
    """Only the element count of the output matters (TFLM walks the input's elements)."""
    assert_same_as_tflm(op_model(op, [T(shape, "float32")], [T(out_shape, "float32")]), runs=2)


@pytest.mark.parametrize("op", OPS)
def test_head_equals_tflm(op: str) -> None:
    model = op_model(op, [T((3, 17), "float32")], [T((3, 17), "float32")])
    it = Interpreter(model, planner="tflm")
    it.allocate_tensors()
    assert it.head == tflm_arena(model)["head"]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", ["int8", "int16", "int32"])
def test_unsupported_types(op: str, dtype: str) -> None:
    """The wheel fails integer SIN/COS at invoke; micronn refuses them when loading."""
    q = (0.1, 0) if dtype != "int32" else (None, None)
    model = op_model(op, [T((2, 3), dtype, *q)], [T((2, 3), dtype, *q)])
    with pytest.raises(TflmError):
        run_tflm(model, [np.ones((2, 3), dtype)])
    with pytest.raises(UnsupportedError):
        Interpreter(model)


@pytest.mark.parametrize("op", OPS)
def test_rejects_output_type(op: str) -> None:
    model = op_model(op, [T((2, 3), "float32")], [T((2, 3), "int32")])
    with pytest.raises(TflmError):
        run_tflm(model, [np.ones((2, 3), np.float32)])
    with pytest.raises(MicronnError):
        Interpreter(model).allocate_tensors()


@pytest.mark.parametrize("op", OPS)
def test_refuses_an_output_with_fewer_elements(op: str) -> None:
    """TFLM would write the input's element count past the output's end."""
    with pytest.raises(MicronnError, match="elements"):
        Interpreter(op_model(op, [T((2, 4), "float32")], [T((4,), "float32")])).allocate_tensors()
