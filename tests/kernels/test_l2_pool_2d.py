"""L2_POOL_2D (float32 only, as in TFLM) against the TFLM wheel, byte for byte."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import PrepareError, UnsupportedError
from micronn.ir import Activation, Padding
from micronn.kernels._conv_util import compute_out_size
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_tflm, tflm_arena


def l2_pool(shape, padding, filt, stride, act=Activation.NONE, dtype="float32", out_shape=None) -> bytes:
    n, h, w, c = shape
    if out_shape is None:
        out_shape = (n, compute_out_size(padding, h, filt[0], stride[0]),
                     compute_out_size(padding, w, filt[1], stride[1]), c)
    q = (0.1, 0) if dtype != "float32" else (None, None)
    return op_model("L2_POOL_2D", [T(shape, dtype, *q)], [T(out_shape, dtype, *q)], {
        "padding": padding, "filter_height": filt[0], "filter_width": filt[1], "stride_h": stride[0],
        "stride_w": stride[1], "fused_activation_function": act})


CASES = [
    ((1, 5, 5, 2), Padding.SAME, (2, 2), (2, 2)),
    ((2, 7, 6, 3), Padding.VALID, (3, 2), (2, 1)),
    ((1, 8, 8, 1), Padding.SAME, (3, 3), (1, 1)),
    ((1, 4, 9, 4), Padding.SAME, (4, 5), (3, 2)),
    ((1, 3, 3, 1), Padding.SAME, (5, 5), (1, 1)),  # windows larger than the input
    ((1, 6, 6, 2), Padding.VALID, (1, 1), (1, 1)),
]


@pytest.mark.parametrize("shape,padding,filt,stride", CASES, ids=str)
def test_matches_tflm(shape, padding, filt, stride) -> None:
    assert_same_as_tflm(l2_pool(shape, padding, filt, stride), runs=2)


@pytest.mark.parametrize("act", [Activation.RELU, Activation.RELU6, Activation.RELU_N1_TO_1, Activation.TANH])
def test_fused_activations(act) -> None:
    """The outputs are non-negative, so only the upper bounds bite; TANH leaves the float range, as in TFLM."""
    model = l2_pool((1, 6, 6, 3), Padding.SAME, (2, 2), (1, 1), act)
    assert_same_as_tflm(model, runs=1)
    assert_same_as_tflm(model, [np.random.default_rng(3).uniform(-20, 20, (1, 6, 6, 3)).astype(np.float32)])


def test_special_values() -> None:
    model = l2_pool((1, 4, 4, 1), Padding.SAME, (2, 2), (2, 2))
    x = np.array([np.inf, 1, -np.inf, 2, np.nan, 3, 1e30, 1e30, -0.0, 0, 0, 0, 1e-30, 0, 5, 6],
                 np.float32).reshape(1, 4, 4, 1)
    assert_same_as_tflm(model, [x])


def test_head_equals_tflm() -> None:
    model = l2_pool((1, 8, 8, 4), Padding.SAME, (2, 2), (2, 2))
    assert Interpreter.from_bytes(model, planner="tflm").head == tflm_arena(model)["head"]


def test_int8_is_refused_like_tflm() -> None:
    model = l2_pool((1, 4, 4, 1), Padding.VALID, (2, 2), (2, 2), dtype="int8")
    with pytest.raises(TflmError, match="failed to prepare"):
        run_tflm(model, [])
    with pytest.raises(UnsupportedError):
        Interpreter(model)


def test_3d_input_is_refused_like_tflm() -> None:
    model = op_model("L2_POOL_2D", [T((4, 4, 1), "float32")], [T((2, 2, 1), "float32")], {
        "padding": Padding.VALID, "filter_height": 2, "filter_width": 2, "stride_h": 2, "stride_w": 2})
    with pytest.raises(TflmError, match="failed to prepare"):
        run_tflm(model, [])
    with pytest.raises(PrepareError, match="4-D"):
        Interpreter(model).allocate_tensors()


@pytest.mark.parametrize("out_shape", [(1, 2, 1, 1), (1, 4, 1, 1)])
def test_output_shape_must_be_the_computed_one(out_shape) -> None:
    """TFLM rewrites the output's dims to the shape it computes and writes that many values; micronn insists
    the model says that shape (the wheel is not run: it would write past a smaller output)."""
    with pytest.raises(PrepareError, match="does not match"):
        Interpreter(l2_pool((1, 4, 4, 1), Padding.VALID, (2, 2), (2, 2), out_shape=out_shape)).allocate_tensors()
