"""ABS, NEG, SQRT, RSQRT, EXP, LOG, SQUARE against the TFLM reference, byte for byte.

float32 for all (C's expf/logf bit for bit, NaN payloads and signed zeros included), plus ABS int8/int16
(quantized or plain int16) and RSQRT int8/int16, over every input value of the integer types.
"""

from __future__ import annotations

import numpy as np
import pytest

from micronn.errors import InvokeError, MicronnError
from micronn.interpreter import Interpreter
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_micronn, run_tflm, tflm_arena

FLOAT_OPS = ["ABS", "NEG", "SQRT", "RSQRT", "EXP", "LOG", "SQUARE"]

# NaNs with payloads and both signs (one signaling), zeros, denormals, infinities, overflow edges of exp.
SPECIALS = np.concatenate([
    np.array([0x7FC00001, 0xFFC12345, 0x7F800001, 0xFFC00000], np.uint32).view(np.float32),
    np.array([0.0, -0.0, 1e-45, -1e-45, 1.1754942e-38, 1e-20, 0.5, 1.0, -1.0, 2.0, 88.72283, 88.72284, -87.33654,
              -103.97208, -103.97209, 1.8446743e19, 3.4028235e38, -3.4028235e38, np.inf, -np.inf], np.float32),
])


def float_inputs(n: int, seed: int) -> np.ndarray:
    """Special values, then normal numbers, values around 1 and magnitudes from 1e-35 to 1e35, both signs."""
    rng = np.random.default_rng(seed)
    wide = np.exp(rng.uniform(-80, 80, n)) * rng.choice([-1, 1], n)
    rest = np.concatenate([rng.standard_normal(n) * 4, rng.uniform(0, 3, n), wide]).astype(np.float32)
    return np.concatenate([SPECIALS, rest])


def unary(op: str, in_spec: T, out_spec: T | None = None) -> bytes:
    return op_model(op, [in_spec], [out_spec or in_spec])


def all_int8() -> np.ndarray:
    return np.arange(-128, 128, dtype=np.int64).astype(np.int8).reshape(4, 64)


def all_int16() -> np.ndarray:
    return np.arange(-32768, 32768, dtype=np.int64).astype(np.int16).reshape(256, 256)


def both_reject(model: bytes, x: np.ndarray) -> None:
    with pytest.raises(TflmError):
        run_tflm(model, [x])
    with pytest.raises(MicronnError):
        run_micronn(model, [x])


# ---- float32 --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", FLOAT_OPS)
def test_float32(op):
    x = float_inputs(1500, seed=FLOAT_OPS.index(op)).reshape(1, -1)
    model = unary(op, T(x.shape, "float32"))
    assert_same_as_tflm(model, [x])
    assert_same_as_tflm(model, seed=3, runs=1)


@pytest.mark.parametrize("op", ["LOG", "EXP", "RSQRT"])
def test_float32_near_rounding_ties(op):
    """Many inputs in the range where float64 results land near float32 rounding ties."""
    rng = np.random.default_rng(9)
    x = (rng.uniform(1e-3, 40, (4, 4000)) * (1 if op != "EXP" else rng.choice([-1, 1], (4, 4000)))).astype(np.float32)
    assert_same_as_tflm(unary(op, T(x.shape, "float32")), [x])


@pytest.mark.parametrize("op", ["ABS", "NEG", "SQRT", "LOG", "SQUARE", "RSQRT"])
def test_output_shape_needs_only_the_same_element_count(op):
    x = float_inputs(2, seed=1)[:24].reshape(2, 3, 4)
    assert_same_as_tflm(op_model(op, [T((2, 3, 4), "float32")], [T((4, 6), "float32")]), [x])


@pytest.mark.parametrize("shape", [(1,), (3, 5), (2, 1, 3, 1, 2, 2)])
def test_float32_shapes(shape):
    for op in ("EXP", "LOG"):
        assert_same_as_tflm(unary(op, T(shape, "float32")), seed=len(shape), runs=1)


def test_exp_output_shape_must_match():
    """TFLM's EXP checks the dimensions, not only the element count."""
    x = np.ones((2, 4), np.float32)
    both_reject(op_model("EXP", [T((2, 4), "float32")], [T((4, 2), "float32")]), x)


# ---- ABS ------------------------------------------------------------------------------------------------------

# in scale, in zero point, out scale, out zero point
ABS_INT8 = [
    (0.05, 0, 0.05, 0),  # same scale: no rescale
    (0.05, -128, 0.05, -128),  # zero points at the limits: |q + 128| saturates at 127
    (0.05, 127, 0.05, -128),
    (0.1, 3, 0.05, -7),  # doubling: saturates
    (0.02, -20, 0.3, 100),
    (0.0173, 55, 0.0173 * 1.0000001, -1),  # nearly the same scale: rescaled by a multiplier just below 1
    (1e-3, -100, 7.0, 0),  # everything rounds to the zero point
    (3.0, 0, 1e-6, 0),  # large multiplier, saturating
]


@pytest.mark.parametrize("si,zi,so,zo", ABS_INT8)
def test_abs_int8(si, zi, so, zo):
    model = unary("ABS", T((4, 64), "int8", si, zi), T((4, 64), "int8", so, zo))
    assert_same_as_tflm(model, [all_int8()])


@pytest.mark.parametrize("si,so", [(1e-3, 1e-3), (3.05e-5, 2.1e-4), (7.7e-4, 1.3e-4), (0.01, 0.0100001),
                                   (1.4584585414922913e-06, 1.164422428701073e-06),  # the scale ratio is taken
                                   (0.0002670195826794952, 0.0008279159665107727)])  # in double, not float
def test_abs_int16_quantized(si, so):
    assert_same_as_tflm(unary("ABS", T((256, 256), "int16", si, 0), T((256, 256), "int16", so, 0)), [all_int16()])


@pytest.mark.parametrize("out_q", [(), (0.5, 3)])
def test_abs_int16_plain(out_q):
    """int16 without quantization parameters: integer abs, -32768 wrapping onto itself; out quantization unused."""
    model = unary("ABS", T((256, 256), "int16"), T((256, 256), "int16", *out_q))
    out = assert_same_as_tflm(model, [all_int16()])[0][0]
    assert out.reshape(-1)[0] == -32768


# ---- RSQRT ----------------------------------------------------------------------------------------------------

RSQRT_INT8 = [
    (0.05, -128, 0.05, -128),
    (0.1, -128, 0.01, 0),
    (0.02, 0, 0.3, 100),
    (1.0, -128, 1 / 128, -128),  # 1/sqrt(1) = 1 on a fine scale: saturates
    (1e-4, -50, 2.0, 3),
    (7.0, 100, 0.01, -128),
    (1e-30, -128, 1e13, 0),  # extreme but representable multipliers
]


@pytest.mark.parametrize("si,zi,so,zo", RSQRT_INT8)
def test_rsqrt_int8(si, zi, so, zo):
    x = np.clip(all_int8().astype(np.int64), zi, 127).astype(np.int8)  # not below the zero point
    assert_same_as_tflm(unary("RSQRT", T(x.shape, "int8", si, zi), T(x.shape, "int8", so, zo)), [x])


@pytest.mark.parametrize("si,so", [(0.10588356, 2.1638731e-06), (4.0100474e-05, 5.0006486e-05), (1e-3, 1e-3),
                                   (1.8e-06, 0.091), (0.03, 1e-2)])
def test_rsqrt_int16(si, so):
    """int16 resolves the rescale multiplier finely enough to show TFLM computes it in double."""
    x = np.abs(all_int16().astype(np.int64)).clip(0, 32767).astype(np.int16)
    assert_same_as_tflm(unary("RSQRT", T(x.shape, "int16", si, 0), T(x.shape, "int16", so, 0)), [x])


@pytest.mark.parametrize("dtype,zp", [("int8", 5), ("int16", 0)])
def test_rsqrt_negative_input_fails_invoke(dtype, zp):
    """Values below the input zero point fail the invoke on both sides; others run."""
    model = unary("RSQRT", T((2, 4), dtype, 0.1, zp), T((2, 4), dtype, 0.1, zp if dtype == "int8" else 0))
    good = np.full((2, 4), zp + 3, dtype)
    assert_same_as_tflm(model, [good])
    bad = good.copy()
    bad[1, 2] = zp - 1
    with pytest.raises(TflmError, match="positive"):
        run_tflm(model, [bad])
    it = Interpreter.from_bytes(model)
    it.set_input(bad, 0)
    with pytest.raises(InvokeError, match="non-negative"):
        it.invoke()


def test_rsqrt_output_scale_too_large_is_refused():
    """A rescale needing a right shift beyond 31 bits is undefined in TFLM's C (it outputs garbage)."""
    with pytest.raises(MicronnError, match="beyond 31"):
        Interpreter.from_bytes(unary("RSQRT", T((1, 4), "int8", 100.0, -128), T((1, 4), "int8", 1e5, 0)))


# ---- rejections -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("op,in_spec,out_spec", [
    ("ABS", T((2, 4), "int8"), None),  # int8 needs quantization
    ("ABS", T((2, 4), "int8", 0.1, 0), T((2, 4), "int8")),
    ("ABS", T((2, 4), "int8", 0.1, 0), T((2, 4), "int16", 0.1, 0)),
    ("ABS", T((2, 4), "int16", 0.1, 1), T((2, 4), "int16", 0.1, 0)),
    ("ABS", T((2, 4), "int16", 0.1, 0), T((2, 4), "int16", 0.1, -1)),
    ("ABS", T((2, 4), "int16", 0.1, 0), T((2, 4), "int16")),
    ("ABS", T((2, 4), "uint8", 0.1, 0), None),
    ("ABS", T((2, 4), "int32"), None),
    ("RSQRT", T((2, 4), "int8"), None),
    ("RSQRT", T((2, 4), "int16", 0.1, 2), T((2, 4), "int16", 0.1, 0)),
    ("RSQRT", T((2, 4), "float32"), T((2, 4), "int8", 0.1, 0)),
    ("RSQRT", T((2, 4), "uint8", 0.1, 0), None),
    ("NEG", T((2, 4), "int8", 0.1, 0), None),
    ("NEG", T((2, 4), "int32"), None),
    ("SQRT", T((2, 4), "int8", 0.1, 0), None),
    ("SQRT", T((2, 4), "float32"), T((2, 4), "int8", 0.1, 0)),
    ("LOG", T((2, 4), "int16", 0.1, 0), None),
    ("SQUARE", T((2, 4), "int32"), None),
    ("EXP", T((2, 4), "int8", 0.1, 0), None),
    ("EXP", T((2, 4), "float32"), T((2, 4), "int8", 0.1, 0)),
])
def test_rejects_what_tflm_rejects(op, in_spec, out_spec):
    x = np.ones(in_spec.shape, in_spec.dtype)
    both_reject(unary(op, in_spec, out_spec), x)


def test_refuses_an_output_with_fewer_elements():
    """TFLM writes the input's element count into the output regardless (an overrun): micronn refuses."""
    with pytest.raises(MicronnError, match="elements"):
        Interpreter.from_bytes(op_model("ABS", [T((2, 4), "float32")], [T((4,), "float32")]))


def test_refuses_int16_rsqrt_without_quantization():
    """TFLM leaves its parameters uninitialized for unquantized int16 RSQRT: micronn refuses."""
    with pytest.raises(MicronnError, match="quantization"):
        Interpreter.from_bytes(unary("RSQRT", T((2, 4), "int16")))


def test_refuses_overflowing_rescale():
    with pytest.raises(MicronnError, match="left shift"):
        Interpreter.from_bytes(unary("ABS", T((1, 4), "int8", 1.0, 0), T((1, 4), "int8", 1e-10, 0)))


# ---- arena ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("op,dtype", [("ABS", "int16"), ("RSQRT", "int8"), ("EXP", "float32"), ("LOG", "float32")])
def test_no_scratch_same_head_as_tflm(op, dtype):
    spec = T((3, 17), dtype) if dtype == "float32" else T((3, 17), dtype, 0.1, -128 if dtype == "int8" else 0)
    model = unary(op, spec)
    assert Interpreter.from_bytes(model, planner="tflm").head == tflm_arena(model)["head"]
