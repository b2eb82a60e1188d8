"""The host ports (micronn/micro/kernels/host/*.c, AVX2 code NativeModel builds in place of the portable hot
kernels) give the interpreter's bytes on awkward shapes: padding, strides, dilation, groups, per-tensor and
per-channel requantization, channel counts off the vector widths, batches, clamped activations. On a host
without AVX2 the ports are the portable kernels and these tests check those instead."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.export import NativeModel
from micronn.export.native import with_host_ports
from micronn.kernels._conv_util import compute_out_size
from micronn.testing import T, _Tflm, op_model
from micronn.tflite import schema

SAMPLES = 3


SPECIALS = np.array([np.inf, -np.inf, np.nan, -np.nan, 0.0, -0.0, 3e38, -3e38], np.float32)


def _inputs(data: bytes, n: int, seed: int) -> list[np.ndarray]:
    """``n`` samples per input over each type's whole range (floats in [-2, 2), a few of them infinities, NaNs of
    both signs, signed zeros and values whose products overflow)."""
    it, rng, out = Interpreter(data), np.random.default_rng(seed), []
    for t in (it.subgraph.tensors[i] for i in it.subgraph.inputs):
        if t.dtype.kind in "iu":
            info = np.iinfo(t.dtype)
            out.append(rng.integers(info.min, info.max, (n, *t.shape), dtype=t.dtype, endpoint=True))
        else:
            x = rng.uniform(-2, 2, (n, *t.shape)).astype(t.dtype)
            flat = x.reshape(n, -1)
            m = min(4, flat.shape[1])
            for k in range(1, n):  # the first sample plain, the others with specials
                flat[k, rng.integers(0, flat.shape[1], m)] = rng.choice(SPECIALS, m)
            out.append(x)
    return out


def assert_ported_same(data: bytes, *, wheel: bool = False, seed: int = 0) -> None:
    """NativeModel (with the ports) gives the interpreter's bytes on every sample, batched and one at a time."""
    native, it = NativeModel(data), Interpreter(data)
    xs = _inputs(data, SAMPLES, seed)
    outs, done, status = native.run_chunk(xs)
    assert (done, status) == (SAMPLES, 0)
    ref = _Tflm(data) if wheel else None
    for k in range(SAMPLES):
        sample = [x[k] for x in xs]
        for i, x in enumerate(sample):
            it.set_input(x, i)
        it.invoke()
        want = [it.get_output(i) for i in range(len(it.subgraph.outputs))]
        assert [o[k].tobytes() for o in outs] == [w.tobytes() for w in want], k
        assert [g.tobytes() for g in native.run(sample)] == [w.tobytes() for w in want], k
        if ref is not None:
            assert [o[k].tobytes() for o in outs] == [w.tobytes() for w in ref.run(sample)], k


def conv(*, n: int = 1, h: int = 9, w: int = 8, cin: int = 5, cout: int = 11, fh: int = 3, fw: int = 3,
         stride: tuple[int, int] = (1, 1), dil: tuple[int, int] = (1, 1), pad: int = 0, act: int = 0,
         per_channel: bool = True, groups: int = 1, in_zp: int = 3, out_zp: int = -5, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    oh, ow = compute_out_size(pad, h, fh, stride[0], dil[0]), compute_out_size(pad, w, fw, stride[1], dil[1])
    scales = list(rng.uniform(0.002, 0.02, cout)) if per_channel else 0.01
    shape = (cout, fh, fw, cin // groups)
    wt = T(shape, "int8", scales, 0, data=rng.integers(-128, 128, shape))
    b = T((cout,), "int32", data=rng.integers(-30000, 30000, cout))
    x, y = T((n, h, w, cin), "int8", 0.05, in_zp), T((n, oh, ow, cout), "int8", 0.3, out_zp)
    opts = schema.options("CONV_2D", padding=pad, stride_h=stride[0], stride_w=stride[1], dilation_h_factor=dil[0],
                          dilation_w_factor=dil[1], fused_activation_function=act)
    return op_model("CONV_2D", [x, wt, b], [y], opts)


def depthwise(*, n: int = 1, h: int = 9, w: int = 8, c: int = 21, mult: int = 1, fh: int = 3, fw: int = 3,
              stride: tuple[int, int] = (1, 1), dil: tuple[int, int] = (1, 1), pad: int = 0, act: int = 0,
              per_channel: bool = True, in_zp: int = 3, out_zp: int = -5, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    cout = c * mult
    oh, ow = compute_out_size(pad, h, fh, stride[0], dil[0]), compute_out_size(pad, w, fw, stride[1], dil[1])
    scales = list(rng.uniform(0.002, 0.02, cout)) if per_channel else 0.01
    wt = T((1, fh, fw, cout), "int8", scales, 0, axis=3, data=rng.integers(-128, 128, (1, fh, fw, cout)))
    b = T((cout,), "int32", data=rng.integers(-30000, 30000, cout))
    x, y = T((n, h, w, c), "int8", 0.05, in_zp), T((n, oh, ow, cout), "int8", 0.3, out_zp)
    opts = schema.options("DEPTHWISE_CONV_2D", padding=pad, stride_h=stride[0], stride_w=stride[1],
                          dilation_h_factor=dil[0], dilation_w_factor=dil[1], fused_activation_function=act,
                          depth_multiplier=mult)
    return op_model("DEPTHWISE_CONV_2D", [x, wt, b], [y], opts)


def fully_connected(*, batches: int = 1, depth: int = 37, units: int = 13, act: int = 0, per_channel: bool = False,
                    in_zp: int = 3, out_zp: int = -5, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    ws = list(rng.uniform(0.002, 0.02, units)) if per_channel else 0.0123
    wt = T((units, depth), "int8", ws, 0, data=rng.integers(-128, 128, (units, depth)))
    bs = [0.05 * s for s in ws] if per_channel else 0.05 * ws
    b = T((units,), "int32", bs, 0, data=rng.integers(-30000, 30000, units))
    x, y = T((batches, depth), "int8", 0.05, in_zp), T((batches, units), "int8", 0.3, out_zp)
    opts = schema.options("FULLY_CONNECTED", fused_activation_function=act)
    return op_model("FULLY_CONNECTED", [x, wt, b], [y], opts)


def conv_f32(*, n: int = 1, h: int = 9, w: int = 8, cin: int = 5, cout: int = 11, fh: int = 3, fw: int = 3,
             stride: tuple[int, int] = (1, 1), dil: tuple[int, int] = (1, 1), pad: int = 0, act: int = 0,
             groups: int = 1, bias: bool = True, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    oh, ow = compute_out_size(pad, h, fh, stride[0], dil[0]), compute_out_size(pad, w, fw, stride[1], dil[1])
    shape = (cout, fh, fw, cin // groups)
    wt = T(shape, "float32", data=rng.uniform(-1, 1, shape).astype(np.float32))
    b = T((cout,), "float32", data=rng.uniform(-1, 1, cout).astype(np.float32)) if bias else None
    opts = schema.options("CONV_2D", padding=pad, stride_h=stride[0], stride_w=stride[1], dilation_h_factor=dil[0],
                          dilation_w_factor=dil[1], fused_activation_function=act)
    return op_model("CONV_2D", [T((n, h, w, cin), "float32"), wt, b], [T((n, oh, ow, cout), "float32")], opts)


def depthwise_f32(*, n: int = 1, h: int = 9, w: int = 8, c: int = 21, mult: int = 1, fh: int = 3, fw: int = 3,
                  stride: tuple[int, int] = (1, 1), pad: int = 0, act: int = 0, bias: bool = True,
                  seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    cout = c * mult
    oh, ow = compute_out_size(pad, h, fh, stride[0], 1), compute_out_size(pad, w, fw, stride[1], 1)
    wt = T((1, fh, fw, cout), "float32", data=rng.uniform(-1, 1, (1, fh, fw, cout)).astype(np.float32))
    b = T((cout,), "float32", data=rng.uniform(-1, 1, cout).astype(np.float32)) if bias else None
    opts = schema.options("DEPTHWISE_CONV_2D", padding=pad, stride_h=stride[0], stride_w=stride[1],
                          fused_activation_function=act, depth_multiplier=mult)
    return op_model("DEPTHWISE_CONV_2D", [T((n, h, w, c), "float32"), wt, b], [T((n, oh, ow, cout), "float32")], opts)


def fully_connected_f32(*, batches: int = 1, depth: int = 37, units: int = 13, act: int = 0, bias: bool = True,
                        seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    wt = T((units, depth), "float32", data=rng.uniform(-1, 1, (units, depth)).astype(np.float32))
    b = T((units,), "float32", data=rng.uniform(-1, 1, units).astype(np.float32)) if bias else None
    opts = schema.options("FULLY_CONNECTED", fused_activation_function=act)
    return op_model("FULLY_CONNECTED", [T((batches, depth), "float32"), wt, b], [T((batches, units), "float32")], opts)


def add(*, a: tuple[int, ...] = (1, 5, 7, 9), b: tuple[int, ...] = (1, 5, 7, 9), op: str = "ADD", act: int = 0,
        scales: tuple[float, float, float] = (0.05, 0.03, 0.07), zps: tuple[int, int, int] = (3, -7, -5)) -> bytes:
    out = tuple(int(d) for d in np.broadcast_shapes(a, b))
    x1, x2 = T(a, "int8", scales[0], zps[0]), T(b, "int8", scales[1], zps[1])
    opts = schema.options(op, fused_activation_function=act)
    return op_model(op, [x1, x2], [T(out, "int8", scales[2], zps[2])], opts)


CONV = [
    {},
    {"pad": 1},  # VALID
    {"pad": 1, "stride": (2, 2)},
    {"stride": (2, 3), "fh": 3, "fw": 2},
    {"dil": (2, 3), "h": 11, "w": 12, "pad": 1},
    {"act": 1}, {"act": 3},
    {"per_channel": False},
    {"n": 3, "pad": 1},
    {"fh": 1, "fw": 1, "cin": 16, "cout": 24},
    {"fh": 1, "fw": 1, "cin": 12, "cout": 20, "n": 3, "h": 5, "w": 3, "act": 3},  # pointwise, 45 pixels
    {"fh": 1, "fw": 1, "cin": 7, "cout": 9},  # pointwise of an odd depth
    {"fh": 1, "fw": 1, "cin": 33, "cout": 40, "stride": (2, 2)},
    {"cin": 6, "cout": 9, "groups": 3, "pad": 1},
    {"cin": 8, "cout": 32, "groups": 2, "fh": 1, "fw": 1},
    {"cin": 3, "cout": 8, "h": 12, "w": 12, "stride": (2, 2), "pad": 1},  # an image's first layer
    {"cin": 40, "cout": 17, "fh": 5, "fw": 5, "pad": 1, "in_zp": -128, "out_zp": 127},
    {"cin": 16, "cout": 1, "fh": 1, "fw": 1},
    {"h": 2, "w": 2, "fh": 5, "fw": 5},  # SAME (padding 0): every window cut
]

DEPTHWISE = [
    {},
    {"pad": 1},  # VALID
    {"pad": 1, "stride": (2, 2), "c": 32},
    {"c": 16, "stride": (2, 3), "fw": 2},
    {"dil": (2, 2), "h": 11, "w": 10, "pad": 1, "c": 24},
    {"act": 1, "c": 8}, {"act": 3, "c": 40},
    {"per_channel": False, "c": 48},
    {"n": 2, "pad": 1, "c": 19},
    {"c": 5, "pad": 1},
    {"c": 3, "mult": 4, "pad": 1},
    {"c": 9, "mult": 2, "stride": (2, 2)},
    {"c": 2, "mult": 11, "pad": 1},
    {"c": 1, "mult": 8, "h": 25, "w": 20, "fh": 10, "fw": 8, "stride": (2, 2)},  # micro_speech's
    {"fh": 5, "fw": 5, "pad": 1, "c": 17, "in_zp": -128, "out_zp": 127},
    {"fh": 1, "fw": 1, "c": 33},
]

FULLY_CONNECTED = [
    {},
    {"per_channel": True},
    {"batches": 3, "units": 40, "depth": 64},
    {"units": 1, "depth": 1},
    {"units": 33, "depth": 250, "act": 1},
    {"units": 70, "depth": 9, "act": 3, "in_zp": -128, "out_zp": 127},
    # short rows (the pairs built without widening), one to three blocks (the small path), four and five (wide)
    {"units": 16, "depth": 1},
    {"units": 16, "depth": 16, "act": 1},
    {"units": 3, "depth": 7, "per_channel": True},
    {"units": 5, "depth": 2, "batches": 2, "in_zp": -128},
    {"units": 23, "depth": 15, "act": 3},
    {"units": 32, "depth": 14},
    {"units": 39, "depth": 17, "per_channel": True, "batches": 2},
]


ADD = [
    {},
    {"op": "SUB", "act": 1},
    {"act": 3, "a": (2, 4, 4, 16), "b": (2, 4, 4, 16), "scales": (0.02, 0.5, 0.01), "zps": (-128, 127, 0)},
    {"a": (1, 5, 7, 9), "b": (1, 1, 1, 9)},  # broadcast: the portable rows
    {"a": (3, 37), "b": (3, 37), "op": "SUB", "scales": (0.5, 0.002, 0.3)},
]

CONV_F32 = [
    {},
    {"pad": 1, "stride": (2, 2), "cout": 40},
    {"dil": (2, 3), "h": 11, "w": 12, "cout": 33},
    {"act": 1, "bias": False, "cout": 8},
    {"act": 3, "n": 2, "cin": 16, "cout": 64, "fh": 1, "fw": 1},
    {"cin": 6, "cout": 9, "groups": 3},
]

DEPTHWISE_F32 = [
    {},
    {"pad": 1, "stride": (2, 2), "c": 16, "act": 3},
    {"c": 8, "bias": False, "act": 1, "n": 2},
    {"c": 3, "mult": 2},
]

FULLY_CONNECTED_F32 = [
    {},
    {"batches": 2, "units": 70, "depth": 50, "act": 1},
    {"units": 32, "depth": 3, "bias": False, "act": 3},
    {"units": 83, "depth": 29, "act": 1},  # one row: 11 blocks side by side (the last one short)
    {"units": 64, "depth": 5, "bias": False},
    {"units": 80, "depth": 28},  # the keras3 LSTM's gates: 10 blocks
    {"units": 150, "depth": 7, "act": 3},  # 19 blocks: groups of 10 and 9
    {"units": 37, "depth": 4},  # 5 blocks
]


def _id(case: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in case.items()) or "default"


@pytest.mark.parametrize("case", CONV, ids=_id)
def test_conv_2d(case: dict) -> None:
    assert_ported_same(conv(**case))


@pytest.mark.parametrize("case", DEPTHWISE, ids=_id)
def test_depthwise_conv_2d(case: dict) -> None:
    assert_ported_same(depthwise(**case))


@pytest.mark.parametrize("case", FULLY_CONNECTED, ids=_id)
def test_fully_connected(case: dict) -> None:
    assert_ported_same(fully_connected(**case))


@pytest.mark.parametrize("case", ADD, ids=_id)
def test_add_sub(case: dict) -> None:
    assert_ported_same(add(**case))


@pytest.mark.parametrize("case", CONV_F32, ids=_id)
def test_conv_2d_f32(case: dict) -> None:
    assert_ported_same(conv_f32(**case))


@pytest.mark.parametrize("case", DEPTHWISE_F32, ids=_id)
def test_depthwise_conv_2d_f32(case: dict) -> None:
    assert_ported_same(depthwise_f32(**case))


@pytest.mark.parametrize("case", FULLY_CONNECTED_F32, ids=_id)
def test_fully_connected_f32(case: dict) -> None:
    assert_ported_same(fully_connected_f32(**case))


def test_weights_of_minus_128_beside_negatives() -> None:
    """FULLY_CONNECTED's paired layout stores such a weight as -127 plus a correction; the port decodes it back."""
    rng = np.random.default_rng(3)
    data = fully_connected(units=9, depth=21, seed=3)
    w = rng.integers(-128, 0, (9, 21))
    w[1::2] = -128
    wt = T((9, 21), "int8", 0.0123, 0, data=w)
    b = T((9,), "int32", 0.05 * 0.0123, 0, data=rng.integers(-300, 300, 9))
    data = op_model("FULLY_CONNECTED", [T((2, 21), "int8", 0.05, 3), wt, b], [T((2, 9), "int8", 0.3, -5)],
                    schema.options("FULLY_CONNECTED"))
    assert_ported_same(data, wheel=True)


def test_the_wheel_agrees() -> None:
    """A few shapes against the TFLM wheel itself, not only the interpreter."""
    assert_ported_same(conv(pad=1, stride=(2, 2), cin=7, cout=19), wheel=True)
    assert_ported_same(depthwise(pad=1, c=27, act=3), wheel=True)
    assert_ported_same(conv_f32(pad=1, cout=19), wheel=True)
    assert_ported_same(fully_connected_f32(units=21), wheel=True)


def test_ports_replace_only_the_kernels_they_port() -> None:
    files = {"conv_2d.c": "portable", "reshape.c": "reshape", "m.c": "model"}
    out = with_host_ports(files)
    assert out["conv_2d.portable.inc"] == "portable" and out["conv_2d.c"] != "portable"
    assert out["reshape.c"] == "reshape" and out["m.c"] == "model" and "mn_host.h" in out
    assert with_host_ports({"m.c": "model"}) == {"m.c": "model"}
