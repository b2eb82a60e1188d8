"""LOG_SOFTMAX against the TFLM reference, byte for byte: float32 and int8 (output fixed at 16/256, 127)."""

from __future__ import annotations

import numpy as np
import pytest

from micronn.errors import MicronnError
from micronn.interpreter import Interpreter
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_micronn, run_tflm, tflm_arena

OUT_Q = (16 / 256, 127)


def log_softmax(shape, dtype: str, in_q=(), out_q=None) -> bytes:
    out_q = out_q if out_q is not None else (OUT_Q if dtype == "int8" else ())
    return op_model("LOG_SOFTMAX", [T(shape, dtype, *in_q)], [T(shape, dtype, *out_q)])


def int8_rows(shape, rng: np.random.Generator) -> list[np.ndarray]:
    """Random rows, rows close to their maximum, constant rows, and the extremes."""
    return [
        rng.integers(-128, 128, shape).astype(np.int8),
        rng.integers(100, 128, shape).astype(np.int8),
        np.full(shape, rng.integers(-128, 128), np.int8),
        rng.choice(np.array([-128, 127, 0, -1], np.int8), shape),
    ]


# input scale, zero point
INT8_CASES = [(0.1, 0), (0.0625, -128), (0.01251875, 127), (0.17366, 3), (1.0, -7), (4.0, 5), (0.003, 20),
              (2.0**-26 * 1.0000001, 0), (1e-7, 0)]


@pytest.mark.parametrize("scale,zp", INT8_CASES)
@pytest.mark.parametrize("depth", [1, 7, 256])
def test_int8(scale, zp, depth):
    rng = np.random.default_rng(depth + zp + 128)
    model = log_softmax((5, depth), "int8", (scale, zp))
    for x in int8_rows((5, depth), rng):
        assert_same_as_tflm(model, [x])


@pytest.mark.parametrize("shape", [(9,), (2, 3, 4), (1, 2, 2, 300)])
def test_int8_shapes(shape):
    assert_same_as_tflm(log_softmax(shape, "int8", (0.05, -3)), seed=len(shape), runs=2)


def test_int8_long_rows():
    """Thousands of values near the maximum: the Q12.19 sum of exps and its log grow large."""
    model = log_softmax((2, 3000), "int8", (0.1, 0))
    assert_same_as_tflm(model, [np.full((2, 3000), 7, np.int8)])
    assert_same_as_tflm(model, [np.random.default_rng(0).integers(110, 128, (2, 3000)).astype(np.int8)])


def test_float32():
    rng = np.random.default_rng(4)
    x = (rng.standard_normal((40, 53)) * 6).astype(np.float32)
    assert_same_as_tflm(log_softmax(x.shape, "float32"), [x])


def test_float32_special_rows():
    x = np.array([
        [np.nan, 1, 2, 3], [np.inf, 1, 2, np.inf], [-np.inf] * 4, [np.nan] * 4, [3e38, -3e38, 0, 3],
        [-1e-45, 0.0, -0.0, 1e-45], [-100, -90, -104, -87], [0.0, 0.0, 0.0, 0.0], [-0.0, -0.0, -0.0, -0.0],
    ], np.float32)
    assert_same_as_tflm(log_softmax(x.shape, "float32"), [x])


def test_float32_many_values_near_rounding_ties():
    x = np.random.default_rng(1).uniform(-30, 0, (8, 2000)).astype(np.float32)
    assert_same_as_tflm(log_softmax(x.shape, "float32"), [x])


@pytest.mark.parametrize("in_spec,out_spec", [
    (T((2, 4), "int8", 0.1, 0), T((2, 4), "int8", 16 / 256 * 1.0001, 127)),  # output scale must be exact
    (T((2, 4), "int8", 0.1, 0), T((2, 4), "int8", 16 / 256, 126)),
    (T((2, 4), "int8", 0.1, 0), T((2, 4), "int8")),
    (T((2, 4), "int8", 0.1, 0), T((4, 2), "int8", *OUT_Q)),  # shapes must be the same
    (T((2, 4), "float32"), T((8,), "float32")),
    (T((2, 4), "int8", 0.1, 0), T((2, 4), "int16", *OUT_Q)),
    (T((2, 4), "float32"), T((2, 4), "int8", *OUT_Q)),
    (T((2, 4), "int16", 0.1, 0), T((2, 4), "int16", 0.1, 0)),
    (T((2, 4), "uint8", 0.1, 0), T((2, 4), "uint8", *OUT_Q)),
])
def test_rejects_what_tflm_rejects(in_spec, out_spec):
    model = op_model("LOG_SOFTMAX", [in_spec], [out_spec])
    x = np.ones(in_spec.shape, in_spec.dtype)
    with pytest.raises(TflmError):
        run_tflm(model, [x])
    with pytest.raises(MicronnError):
        run_micronn(model, [x])


@pytest.mark.parametrize("scale", [1e-9, 0.0])
def test_int8_input_scale_too_small_is_refused(scale):
    """TFLM aborts the process (a failed CHECK) when scale * 2**26 <= 1; micronn refuses cleanly."""
    with pytest.raises(MicronnError, match="too small"):
        Interpreter.from_bytes(log_softmax((1, 4), "int8", (scale, 0)))


@pytest.mark.parametrize("dtype", ["int8", "float32"])
def test_no_scratch_same_head_as_tflm(dtype):
    model = log_softmax((3, 17), dtype, (0.1, 0) if dtype == "int8" else ())
    assert Interpreter.from_bytes(model, planner="tflm").head == tflm_arena(model)["head"]
