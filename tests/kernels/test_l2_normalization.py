"""L2_NORMALIZATION against the TFLM reference, byte for byte: float32 and int8 (output in 1/128 steps)."""

from __future__ import annotations

import numpy as np
import pytest

from micronn.errors import MicronnError
from micronn.interpreter import Interpreter
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_micronn, run_tflm, tflm_arena


def l2norm(shape, dtype: str, in_q=(), out_q=None, options=None) -> bytes:
    out_q = out_q if out_q is not None else ((1 / 128, 0) if dtype == "int8" else ())
    return op_model("L2_NORMALIZATION", [T(shape, dtype, *in_q)], [T(shape, dtype, *out_q)], options)


@pytest.mark.parametrize("zp", [0, -128, 127, 17])
@pytest.mark.parametrize("depth", [1, 5, 64, 3000])
def test_int8(zp, depth):
    rng = np.random.default_rng(depth + zp + 128)
    shape = (3, depth)
    model = l2norm(shape, "int8", (0.1, zp))
    near = np.clip(zp + rng.integers(-2, 3, shape), -128, 127).astype(np.int8)  # tiny norms
    for x in [rng.integers(-128, 128, shape).astype(np.int8), np.full(shape, zp, np.int8), near,
              np.full(shape, -128, np.int8)]:
        assert_same_as_tflm(model, [x])


def test_int8_ignores_quantization_scales():
    """The input scale and the output quantization play no part (only the input zero point does)."""
    assert_same_as_tflm(l2norm((4, 9), "int8", (7.0, 3), (0.3, -20)), seed=2, runs=2)
    assert_same_as_tflm(l2norm((4, 9), "int8"), seed=3, runs=2)


def test_int8_sum_of_squares_wraps_int32():
    """70,000 values of -128: the int32 sum of squares overflows and wraps, as in TFLM."""
    model = l2norm((1, 70000), "int8", (0.1, 0))
    assert_same_as_tflm(model, [np.full((1, 70000), -128, np.int8)])
    assert_same_as_tflm(model, [np.full((1, 70000), 127, np.int8)])


@pytest.mark.parametrize("shape", [(7,), (2, 3, 4), (2, 1, 3, 5)])
def test_shapes(shape):
    assert_same_as_tflm(l2norm(shape, "int8", (0.1, -3)), seed=len(shape), runs=2)
    assert_same_as_tflm(l2norm(shape, "float32"), seed=len(shape), runs=2)


def test_float32():
    x = (np.random.default_rng(0).standard_normal((50, 40)) * 5).astype(np.float32)
    x[0, :4] = [np.nan, 1, 2, 3]
    x[1] = -np.inf
    x[2, 3] = np.inf
    x[3] = 0
    x[4] = 3e38  # the sum of squares overflows to inf
    x[5] = 1e-30  # the norm is below epsilon
    x[6] = -0.0
    x[7] = 1e-7
    assert_same_as_tflm(l2norm(x.shape, "float32"), [x])


@pytest.mark.parametrize("in_spec,out_spec,options", [
    (T((1, 2, 3, 4, 5), "float32"), T((1, 2, 3, 4, 5), "float32"), None),  # at most 4 dimensions
    (T((2, 3), "float32"), T((2, 3), "float32"), {"fused_activation_function": 1}),
    (T((2, 3), "int16", 0.1, 0), T((2, 3), "int16", 0.1, 0), None),
    (T((2, 3), "uint8", 0.1, 0), T((2, 3), "uint8", 0.1, 0), None),
    (T((2, 3), "int8", 0.1, 0), T((2, 3), "float32"), None),
])
def test_rejects_what_tflm_rejects(in_spec, out_spec, options):
    model = op_model("L2_NORMALIZATION", [in_spec], [out_spec], options)
    x = np.ones(in_spec.shape, in_spec.dtype)
    with pytest.raises(TflmError):
        run_tflm(model, [x])
    with pytest.raises(MicronnError):
        run_micronn(model, [x])


def test_refuses_other_output_shapes():
    """TFLM does not check the output shape and computes garbage from mismatched depths: micronn refuses."""
    with pytest.raises(MicronnError, match="shape"):
        Interpreter.from_bytes(op_model("L2_NORMALIZATION", [T((2, 4), "int8", 0.1, 0)], [T((4, 2), "int8", 0.1, 0)]))


@pytest.mark.parametrize("dtype", ["int8", "float32"])
def test_no_scratch_same_head_as_tflm(dtype):
    model = l2norm((3, 17), dtype, (0.1, 0) if dtype == "int8" else ())
    assert Interpreter.from_bytes(model, planner="tflm").head == tflm_arena(model)["head"]
