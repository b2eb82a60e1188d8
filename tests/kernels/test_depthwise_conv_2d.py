"""DEPTHWISE_CONV_2D against the TFLM wheel, byte for byte: types, depth multipliers, padding, strides, dilation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from micronn.errors import PrepareError, UnsupportedError
from micronn.interpreter import Interpreter
from micronn.kernels._conv_util import compute_out_size
from micronn.testing import T, assert_identical, assert_same_as_tflm, op_model, random_inputs, run_micronn, run_tflm
from micronn.tflite import schema

MODELS = Path(__file__).resolve().parents[2] / "micronn" / "models"
SPECIALS = np.array([np.inf, -np.inf, np.nan, -np.nan, 0.0, -0.0, 3e38, -3e38], np.float32)


def dw_model(kind: str, *, n: int = 1, h: int = 7, w: int = 6, cin: int = 3, mult: int = 1, fh: int = 3, fw: int = 2,
             stride: tuple[int, int] = (1, 1), dil: tuple[int, int] = (1, 1), pad: int = 0, act: int = 0,
             per_channel: bool = True, bias: bool | str = True, bias_dtype: str | None = None,
             option_mult: int | None = None, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    cout = cin * mult
    oh, ow = compute_out_size(pad, h, fh, stride[0], dil[0]), compute_out_size(pad, w, fw, stride[1], dil[1])
    if kind == "float32":
        wt = T((1, fh, fw, cout), "float32", data=rng.uniform(-1, 1, (1, fh, fw, cout)).astype(np.float32))
        b = T((cout,), "float32", data=rng.uniform(-1, 1, cout).astype(np.float32)) if bias else None
        if bias == "zero":
            b = T((cout,), "float32", data=np.zeros(cout, np.float32))
        x, y = T((n, h, w, cin), "float32"), T((n, oh, ow, cout), "float32")
    else:
        scales = list(rng.uniform(0.002, 0.02, cout)) if per_channel else 0.01
        wt = T((1, fh, fw, cout), "int8", scales, 0, axis=3, data=rng.integers(-127, 128, (1, fh, fw, cout)))
        bd = bias_dtype or ("int32" if kind == "int8" else "int64")
        b = T((cout,), bd, data=rng.integers(-30000, 30000, cout)) if bias else None
        if bias == "zero":
            b = T((cout,), bd, data=np.zeros(cout, bd))
        x = T((n, h, w, cin), kind, 0.05, 3 if kind == "int8" else 0)
        y = T((n, oh, ow, cout), kind, 0.3 if kind == "int8" else 0.02, -5 if kind == "int8" else 0)
    opts = schema.options("DEPTHWISE_CONV_2D", padding=pad, stride_h=stride[0], stride_w=stride[1],
                          dilation_h_factor=dil[0], dilation_w_factor=dil[1], fused_activation_function=act,
                          depth_multiplier=mult if option_mult is None else option_mult)
    return op_model("DEPTHWISE_CONV_2D", [x, wt, b], [y], opts)


CASES = [
    {},
    {"pad": 1},
    {"stride": (2, 3)},
    {"dil": (2, 1)},
    {"dil": (2, 2), "h": 9, "w": 8, "pad": 1},
    {"act": 1},
    {"act": 2},
    {"act": 3},
    {"per_channel": False},
    {"n": 2},
    {"fh": 1, "fw": 1},
    {"mult": 3},
    {"cin": 1, "mult": 8, "stride": (2, 2), "fh": 3, "fw": 3},
    {"cin": 5, "mult": 2, "pad": 1, "stride": (2, 1)},
    {"h": 2, "w": 3, "fh": 4, "fw": 4},
]


@pytest.mark.parametrize("kind", ["int8", "int16", "float32"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()) or "default")
def test_depthwise_matches_tflm(kind: str, case: dict) -> None:
    assert_same_as_tflm(dw_model(kind, **case), runs=3)


@pytest.mark.parametrize("kind", ["int8", "int16", "float32"])
def test_depthwise_without_bias(kind: str) -> None:
    """The TFLM wheel crashes (segfault) on a depthwise conv whose optional bias is omitted, so micronn's
    bias-less result is checked against TFLM given an all-zero bias, which must compute the same."""
    for case in ({}, {"mult": 2, "pad": 1, "act": 1}):
        with_zero = dw_model(kind, bias="zero", **case)
        without = dw_model(kind, bias=False, **case)
        for seed in range(2):
            xs = random_inputs(with_zero, seed)
            assert_identical(run_micronn(without, xs)[0], run_tflm(with_zero, xs)[0])


def test_depthwise_extreme_inputs() -> None:
    for kind in ("int8", "int16"):
        model = dw_model(kind, mult=2, fh=3, fw=3, seed=3)
        info = np.iinfo(kind)
        for value in (info.min, info.max):
            assert_same_as_tflm(model, inputs=[np.full((1, 7, 6, 3), value, kind)])


def test_depthwise_float_special_values() -> None:
    """inf, NaN (both signs), -0.0 and huge values in inputs, weights and bias, padded taps included."""
    rng = np.random.default_rng(2)

    def special(shape: tuple[int, ...], frac: float) -> np.ndarray:
        x = rng.uniform(-2, 2, shape).astype(np.float32)
        mask = rng.random(shape) < frac
        x[mask] = rng.choice(SPECIALS, size=int(mask.sum()))
        return x

    for act in (0, 3):
        assert_same_as_tflm(dw_model("float32", act=act, mult=2), inputs=[special((1, 7, 6, 3), 0.3)])
    for seed in range(4):
        opts = schema.options("DEPTHWISE_CONV_2D", stride_h=1, stride_w=1, depth_multiplier=2,
                              fused_activation_function=seed % 2)
        model = op_model("DEPTHWISE_CONV_2D", [T((1, 5, 5, 2), "float32"),
                                               T((1, 3, 3, 4), "float32", data=special((1, 3, 3, 4), 0.1)),
                                               T((4,), "float32", data=special((4,), 0.3))],
                         [T((1, 5, 5, 4), "float32")], opts)
        assert_same_as_tflm(model, inputs=[special((1, 5, 5, 2), 0.1)])


def test_depth_multiplier_must_match_shapes() -> None:
    """TFLM trusts the option and leaves channels unwritten when it disagrees with the shapes: micronn refuses."""
    for option in (0, 1):
        model = dw_model("int8", cin=2, mult=2, option_mult=option)
        with pytest.raises(PrepareError):
            Interpreter.from_bytes(model)


def test_int16_needs_int64_bias() -> None:
    """TFLM reads an int32 bias of a 16x8 depthwise conv as int64 (garbage): micronn refuses it."""
    with pytest.raises(PrepareError):
        Interpreter.from_bytes(dw_model("int16", bias_dtype="int32"))


def test_micro_speech() -> None:
    try:
        assert_same_as_tflm((MODELS / "micro_speech_quantized.tflite").read_bytes(), runs=3)
    except UnsupportedError as e:  # ops owned by other kernels may not exist yet
        pytest.skip(str(e))


def test_quantized_int8_input_layer() -> None:
    """person_detect's first layer alone: 96x96x1 input, depth multiplier 8, stride 2, SAME, RELU6."""
    rng = np.random.default_rng(4)
    wt = T((1, 3, 3, 8), "int8", list(rng.uniform(0.005, 0.05, 8)), 0, axis=3,
           data=rng.integers(-127, 128, (1, 3, 3, 8)))
    b = T((8,), "int32", data=rng.integers(-5000, 5000, 8))
    model = op_model("DEPTHWISE_CONV_2D", [T((1, 96, 96, 1), "int8", 0.0078, -1), wt, b],
                     [T((1, 48, 48, 8), "int8", 0.0235, -128)],
                     schema.options("DEPTHWISE_CONV_2D", stride_h=2, stride_w=2, depth_multiplier=8,
                                    fused_activation_function=3))
    assert_same_as_tflm(model, runs=2)


def test_depthwise_runtime_filter() -> None:
    """A filter that is a model input (not a constant) is read at invoke."""
    model = op_model("DEPTHWISE_CONV_2D", [T((1, 5, 5, 2), "float32"), T((1, 3, 3, 4), "float32"),
                                           T((4,), "float32", data=[1, 2, 3, 4])], [T((1, 5, 5, 4), "float32")],
                     schema.options("DEPTHWISE_CONV_2D", stride_h=1, stride_w=1, depth_multiplier=2))
    assert_same_as_tflm(model, runs=2)
