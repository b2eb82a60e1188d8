"""CONV_2D against the TFLM wheel, byte for byte: every type, padding, stride, dilation, activation, grouping."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from micronn.errors import UnsupportedError
from micronn.kernels._conv_util import Requant, compute_out_size
from micronn.quant import multiply_by_quantized_multiplier, quantize_multiplier
from micronn.testing import T, assert_same_as_tflm, op_model, run_micronn, run_tflm
from micronn.tflite import schema

MODELS = Path(__file__).resolve().parents[2] / "micronn" / "models"
DATA = Path(__file__).resolve().parents[2] / "micronn" / "data"
SPECIALS = np.array([np.inf, -np.inf, np.nan, -np.nan, 0.0, -0.0, 3e38, -3e38], np.float32)


def conv_model(kind: str, *, n: int = 1, h: int = 7, w: int = 6, cin: int = 3, cout: int = 4, fh: int = 3,
               fw: int = 2, stride: tuple[int, int] = (1, 1), dil: tuple[int, int] = (1, 1), pad: int = 0,
               act: int = 0, per_channel: bool = True, bias: bool = True, bias_dtype: str | None = None,
               groups: int = 1, in_zp: int | None = None, out_zp: int | None = None, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    cg = cin // groups
    oh, ow = compute_out_size(pad, h, fh, stride[0], dil[0]), compute_out_size(pad, w, fw, stride[1], dil[1])
    if kind == "float32":
        wt = T((cout, fh, fw, cg), "float32", data=rng.uniform(-1, 1, (cout, fh, fw, cg)).astype(np.float32))
        b = T((cout,), "float32", data=rng.uniform(-1, 1, cout).astype(np.float32)) if bias else None
        x, y = T((n, h, w, cin), "float32"), T((n, oh, ow, cout), "float32")
    else:
        scales = list(rng.uniform(0.002, 0.02, cout)) if per_channel else 0.01
        wt = T((cout, fh, fw, cg), "int8", scales, 0, data=rng.integers(-127, 128, (cout, fh, fw, cg)))
        bd = bias_dtype or ("int32" if kind == "int8" else "int64")
        b = T((cout,), bd, data=rng.integers(-30000, 30000, cout)) if bias else None
        x = T((n, h, w, cin), kind, 0.05, (3 if kind == "int8" else 0) if in_zp is None else in_zp)
        y = T((n, oh, ow, cout), kind, 0.3 if kind == "int8" else 0.02,
              (-5 if kind == "int8" else 0) if out_zp is None else out_zp)
    opts = schema.options("CONV_2D", padding=pad, stride_h=stride[0], stride_w=stride[1], dilation_h_factor=dil[0],
                          dilation_w_factor=dil[1], fused_activation_function=act)
    return op_model("CONV_2D", [x, wt, b], [y], opts)


CASES = [
    {},
    {"pad": 1},
    {"stride": (2, 3)},
    {"stride": (2, 2), "h": 8, "w": 9, "fh": 3, "fw": 3},
    {"dil": (2, 1)},
    {"dil": (2, 3), "h": 9, "w": 10, "pad": 1},
    {"act": 1},
    {"act": 2},
    {"act": 3},
    {"bias": False},
    {"per_channel": False},
    {"n": 2},
    {"fh": 1, "fw": 1},
    {"fh": 1, "fw": 1, "stride": (2, 2)},
    {"cin": 4, "groups": 2},
    {"cin": 6, "cout": 6, "groups": 3, "pad": 1},
    {"h": 2, "w": 2, "fh": 5, "fw": 5},
    {"cin": 40, "cout": 9, "fh": 5, "fw": 5, "h": 9, "w": 9},
]


@pytest.mark.parametrize("kind", ["int8", "int16", "float32"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()) or "default")
def test_conv_matches_tflm(kind: str, case: dict) -> None:
    assert_same_as_tflm(conv_model(kind, **case), runs=3)


@pytest.mark.parametrize("case", [{"bias_dtype": "int32"}, {"bias_dtype": "int32", "act": 1, "pad": 1},
                                  {"in_zp": 7, "out_zp": -9}, {"in_zp": 7, "out_zp": -9, "act": 1}])
def test_conv_int16_variants(case: dict) -> None:
    """16x8 with an int32 bias accumulates in int32 and requantizes with the 32-bit multiply; zero points of
    int16 tensors are ignored by the arithmetic (but shift the activation clamp)."""
    assert_same_as_tflm(conv_model("int16", **case), runs=3)


def test_conv_extreme_inputs() -> None:
    """Saturating inputs and large biases: the requantized values hit both clamp bounds."""
    for kind in ("int8", "int16"):
        model = conv_model(kind, cin=16, fh=3, fw=3, seed=3)
        info = np.iinfo(kind)
        for value in (info.min, info.max):
            assert_same_as_tflm(model, inputs=[np.full((1, 7, 6, 16), value, kind)])


def test_conv_float_special_values() -> None:
    """inf, NaN (both signs), -0.0 and huge values in inputs, weights and bias: values, clamping and which NaN
    comes out are TFLM's, padded taps included (TFLM skips them, so 0 * inf there adds no NaN)."""
    rng = np.random.default_rng(1)

    def special(shape: tuple[int, ...], frac: float) -> np.ndarray:
        x = rng.uniform(-2, 2, shape).astype(np.float32)
        mask = rng.random(shape) < frac
        x[mask] = rng.choice(SPECIALS, size=int(mask.sum()))
        return x

    for act in (0, 1, 3):
        assert_same_as_tflm(conv_model("float32", act=act), inputs=[special((1, 7, 6, 3), 0.3)])
    for seed in range(4):
        opts = schema.options("CONV_2D", stride_h=1, stride_w=1, fused_activation_function=seed % 2)
        weights = T((3, 3, 3, 2), "float32", data=special((3, 3, 3, 2), 0.1))
        bias = T((3,), "float32", data=special((3,), 0.3))
        model = op_model("CONV_2D", [T((1, 5, 5, 2), "float32"), weights, bias], [T((1, 5, 5, 3), "float32")], opts)
        assert_same_as_tflm(model, inputs=[special((1, 5, 5, 2), 0.1)])


@pytest.mark.parametrize("op", ["CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"])
def test_which_nan_comes_out(op: str) -> None:
    """Where two NaNs meet, TFLM's compiled code picks one: the input's in input * weight, the running total's
    in the sum, and the total's (CONV_2D) or the bias's (the others) in total + bias. numpy does not decide
    consistently (it depends on array sizes), so the kernels must. Also 0 * inf and inf - inf, which make a
    negative default NaN. Rows are many so that numpy takes its SIMD loops."""
    pos, neg = np.float32(np.nan), -np.float32(np.nan)
    combos = [(neg, pos, 0.0), (pos, neg, 0.0), (1.0, pos, neg), (1.0, neg, pos), (np.inf, 0.0, 0.0),
              (1.0, np.inf, -np.inf)]  # (weight, input, bias)
    rows = 24
    for w, x, b in combos:
        ws = np.array([w, 1.0, w, 1.0], np.float32)  # the finite taps add a NaN of the other sign, or a number
        other = neg if np.signbit(x) == 0 and np.isnan(x) else pos
        xs = np.tile(np.array([x, other, x, neg], np.float32), (rows, 1))
        xs[1::2] = xs[1::2, ::-1]
        if op == "FULLY_CONNECTED":
            inputs = [T((rows, 4), "float32"), T((1, 4), "float32", data=ws.reshape(1, 4))]
            out, xin = (rows, 1), xs
            opts = schema.options(op)
        else:
            inputs = [T((1, rows, 4, 1), "float32"), T((1, 1, 4, 1), "float32", data=ws.reshape(1, 1, 4, 1))]
            out, xin = (1, rows, 1, 1), xs.reshape(1, rows, 4, 1)
            extra = {"depth_multiplier": 1} if op == "DEPTHWISE_CONV_2D" else {}
            opts = schema.options(op, stride_h=1, stride_w=1, padding=1, **extra)
        model = op_model(op, [*inputs, T((1,), "float32", data=[b])], [T(out, "float32")], opts)
        assert_same_as_tflm(model, inputs=[xin])


def test_conv_float_runtime_filter() -> None:
    """A filter that is a model input (not a constant) is read at invoke."""
    x, w, y = T((1, 5, 5, 2), "float32"), T((3, 3, 3, 2), "float32"), T((1, 5, 5, 3), "float32")
    model = op_model("CONV_2D", [x, w, None], [y], schema.options("CONV_2D", stride_w=1, stride_h=1))
    assert_same_as_tflm(model, runs=2)


def test_requant_matches_reference() -> None:
    """The fast requantizer is TFLM's MultiplyByQuantizedMultiplier, including int32 extremes and left shifts."""
    rng = np.random.default_rng(1)
    for trial in range(100):
        c = int(rng.integers(1, 6))
        mult = rng.integers(0, 2**31, c)
        shift = rng.integers(-31, 8, c) if trial % 2 else np.full(c, rng.integers(-20, 3))
        if trial % 5 == 0:
            shift[:] = 0
        x = rng.integers(-(2**31), 2**31, (300, c))
        x[:5], x[5:10], x[10:30] = -(2**31), 2**31 - 1, rng.integers(-5, 5, (20, c))
        np.testing.assert_array_equal(Requant(mult, shift)(x.copy()), multiply_by_quantized_multiplier(x, mult, shift))


def crafted_scale_case(op: str) -> tuple[bytes, np.ndarray, np.ndarray, np.ndarray]:
    """A model whose outputs tell a double effective scale (in * filter / out, all double) from one whose
    in * filter product is rounded to float32 first. Returns (model, input, outputs_if_double, outputs_if_float)."""
    rng = np.random.default_rng(5)
    while True:  # scales whose two multipliers differ
        a, b = np.float32(rng.uniform(0.01, 0.1)), np.float32(rng.uniform(0.001, 0.01))
        c = np.float32(rng.uniform(50, 100))
        m_float = quantize_multiplier(float(a * b) / float(c))
        m_double = quantize_multiplier(float(a) * float(b) / float(c))
        if abs(m_float[0] - m_double[0]) > 20:
            break
    depth = 1000
    accs = -np.arange(0, 255 * 127 * (depth - 1))
    r_float = multiply_by_quantized_multiplier(accs, *m_float)
    r_double = multiply_by_quantized_multiplier(accs, *m_double)
    differ = np.flatnonzero(r_float != r_double)[:40]
    rows = []
    for acc in accs[differ]:  # realize acc = 127 * sum(first values) + last, each value (x - 127) in [-255, 0]
        last = -((-acc) % 127)
        rest = (acc - last) // 127
        vals = np.zeros(depth - 1, np.int64)
        for j in range(depth - 1):
            vals[j] = max(rest, -255)
            rest -= vals[j]
        rows.append(np.concatenate([vals, [last]]) + 127)
    x = np.array(rows, np.int8)
    w = np.full(depth, 127, np.int8)
    w[-1] = 1
    batch = len(x)
    xq, yq = (float(a), 127), (float(c), 0)
    if op == "CONV_2D":
        model = op_model(op, [T((1, batch, 1, depth), "int8", *xq), T((1, 1, 1, depth), "int8", float(b), 0, data=w)],
                         [T((1, batch, 1, 1), "int8", *yq)], schema.options(op, stride_w=1, stride_h=1, padding=1))
        x = x.reshape(1, batch, 1, depth)
    elif op == "DEPTHWISE_CONV_2D":
        model = op_model(op, [T((1, batch, depth, 1), "int8", *xq),
                              T((1, 1, depth, 1), "int8", float(b), 0, axis=3, data=w)],
                         [T((1, batch, 1, 1), "int8", *yq)],
                         schema.options(op, stride_w=1, stride_h=1, padding=1, depth_multiplier=1))
        x = x.reshape(1, batch, depth, 1)
    else:
        model = op_model(op, [T((batch, depth), "int8", *xq), T((1, depth), "int8", float(b), 0, data=w)],
                         [T((batch, 1), "int8", *yq)], schema.options(op))
    return model, x, np.clip(r_double[differ], -128, 127), np.clip(r_float[differ], -128, 127)


@pytest.mark.parametrize("op", ["CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"])
def test_effective_scale_is_double(op: str) -> None:
    """TFLM computes input_scale * filter_scale / output_scale in double for all three ops (FULLY_CONNECTED
    included: only its bias-scale sanity check rounds the product to float32)."""
    model, x, if_double, if_float = crafted_scale_case(op)
    expected = run_tflm(model, [x])[0].reshape(-1)
    np.testing.assert_array_equal(expected, if_double)
    assert (expected != if_float).any()
    np.testing.assert_array_equal(run_micronn(model, [x])[0].reshape(-1), expected)


def _model(name: str) -> bytes:
    return (MODELS / name).read_bytes()


def _same_or_skip(model: bytes, **kw) -> None:
    try:
        assert_same_as_tflm(model, **kw)
    except UnsupportedError as e:  # ops owned by other kernels may not exist yet
        pytest.skip(str(e))


def test_person_detect() -> None:
    model = _model("person_detect.tflite")
    _same_or_skip(model, runs=2)
    for name in ("person", "no_person"):
        image = np.load(DATA / f"{name}.npy").astype(np.int16) - 128
        _same_or_skip(model, inputs=[image.astype(np.int8).reshape(1, 96, 96, 1)])


@pytest.mark.parametrize("name", ["tiny_unet_static.tflite", "tiny_unet.tflite"])
def test_tiny_unet(name: str) -> None:
    _same_or_skip(_model(name), runs=1)
