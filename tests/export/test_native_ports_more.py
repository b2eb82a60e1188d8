"""More host ports (micronn/micro/kernels/host/*.c) against the interpreter, and a few against the TFLM wheel, byte
for byte, on awkward shapes: TRANSPOSE_CONV, pooling, SOFTMAX, PAD, QUANTIZE, the float32 LSTM and SPLIT."""

from __future__ import annotations

import numpy as np
import pytest
from test_native_ports import SAMPLES, _inputs, assert_ported_same

from micronn import Interpreter
from micronn.export import NativeModel
from micronn.testing import T, op_model
from micronn.tflite import schema


def _id(case: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in case.items()) or "default"


def transpose_conv(*, n: int = 1, h: int = 3, w: int = 4, cin: int = 3, cout: int = 2, fh: int = 3, fw: int = 3,
                   stride: tuple[int, int] = (2, 2), pad: int = 0, out_hw: tuple[int, int] | None = None,
                   act: int = 0, bias: bool = True, per_channel: bool = True, in_zp: int = 3, out_zp: int = -5,
                   seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    oh, ow = out_hw or (h * stride[0], w * stride[1])
    scales = list(rng.uniform(0.005, 0.02, cout)) if per_channel else 0.01
    wt = T((cout, fh, fw, cin), "int8", scales, 0, data=rng.integers(-128, 128, (cout, fh, fw, cin)))
    b = T((cout,), "int32", data=rng.integers(-3000, 3000, cout)) if bias else None
    x, y = T((n, h, w, cin), "int8", 0.05, in_zp), T((n, oh, ow, cout), "int8", 0.1, out_zp)
    opts = schema.options("TRANSPOSE_CONV", padding=pad, stride_h=stride[0], stride_w=stride[1],
                          fused_activation_function=act)
    return op_model("TRANSPOSE_CONV", [T((4,), "int32", data=[n, oh, ow, cout]), wt, x, b], [y], opts)


TRANSPOSE_CONV = [
    {},
    {"pad": 1},
    {"stride": (1, 1)},
    {"stride": (3, 1), "fh": 4, "fw": 2, "out_hw": (11, 3)},
    {"fh": 2, "fw": 2, "cin": 64, "cout": 16, "h": 5, "w": 7},
    {"fh": 2, "fw": 2, "cin": 17, "cout": 37, "per_channel": False, "in_zp": -128},
    {"fh": 1, "fw": 1, "pad": 1},
    {"out_hw": (7, 9)},  # uncovered border: the bias alone
    {"out_hw": (4, 5), "pad": 1},
    {"n": 2, "h": 5, "w": 2, "cin": 7, "cout": 5, "act": 1},
    {"fh": 5, "fw": 5, "h": 2, "w": 2, "stride": (1, 1), "cin": 33, "cout": 4},
    {"act": 3, "pad": 1, "cout": 9},
    {"bias": False, "cin": 1, "cout": 1},
    {"pad": 1, "stride": (3, 3), "fh": 6, "fw": 6, "h": 1, "w": 2, "out_hw": (1, 4)},
]


@pytest.mark.parametrize("case", TRANSPOSE_CONV, ids=_id)
def test_transpose_conv(case: dict) -> None:
    assert_ported_same(transpose_conv(**case))


def test_the_wheel_agrees() -> None:
    assert_ported_same(transpose_conv(fh=2, fw=2, cin=19, cout=11, pad=1, act=1), wheel=True)


def pool(*, op: str = "MAX_POOL_2D", kind: str = "int8", n: int = 1, h: int = 9, w: int = 8, c: int = 21,
         fh: int = 2, fw: int = 2, stride: tuple[int, int] = (2, 2), pad: int = 0, act: int = 0, zp: int = -3) -> bytes:
    from micronn.kernels._conv_util import compute_out_size

    oh, ow = compute_out_size(pad, h, fh, stride[0], 1), compute_out_size(pad, w, fw, stride[1], 1)
    if kind == "int8":
        x, y = T((n, h, w, c), "int8", 0.05, zp), T((n, oh, ow, c), "int8", 0.05, zp)
    else:
        x, y = T((n, h, w, c), "float32"), T((n, oh, ow, c), "float32")
    opts = schema.options(op, padding=pad, stride_h=stride[0], stride_w=stride[1], filter_height=fh,
                          filter_width=fw, fused_activation_function=act)
    return op_model(op, [x], [y], opts)


POOL = [
    {},
    {"c": 8, "h": 80, "w": 120},
    {"c": 64, "pad": 1, "fh": 3, "fw": 3},
    {"c": 37, "stride": (1, 1), "fh": 3, "fw": 2, "act": 1},
    {"c": 3, "n": 2, "stride": (2, 3), "fh": 1, "fw": 4, "pad": 1, "act": 3},
    {"c": 16, "h": 5, "w": 5, "fh": 5, "fw": 5, "stride": (1, 1), "pad": 1, "act": 2},
    {"c": 40, "h": 7, "w": 3, "fh": 3, "fw": 1, "stride": (3, 1), "zp": 100, "act": 1},
]


@pytest.mark.parametrize("kind", ["int8", "float32"])
@pytest.mark.parametrize("op", ["MAX_POOL_2D", "AVERAGE_POOL_2D"])
@pytest.mark.parametrize("case", POOL, ids=_id)
def test_pool(case: dict, op: str, kind: str) -> None:
    assert_ported_same(pool(op=op, kind=kind, **case))


def test_pools_the_wheel_agrees() -> None:
    assert_ported_same(pool(c=19, pad=1, fh=3, fw=3, act=1), wheel=True)
    assert_ported_same(pool(kind="float32", c=13, pad=1, fh=3, fw=3, act=1), wheel=True)
    assert_ported_same(pool(op="AVERAGE_POOL_2D", kind="float32", c=13, pad=1, fh=3, fw=3), wheel=True)


def lstm_f32(*, batch: int = 1, steps: int = 3, n_input: int = 5, units: int = 4, time_major: bool = False,
             cell_clip: float = 0.0, act: int = 4, weight_scale: float = 1.0, bias_scale: float = 0.5,
             seed: int = 0) -> bytes:
    """A float32 LSTM with all four gates (no peephole, projection or layer norm)."""
    rng = np.random.default_rng(seed)
    in_shape = (steps, batch, n_input) if time_major else (batch, steps, n_input)
    ins: list[T | None] = [None] * 24
    ins[0] = T(in_shape, "float32")
    for i in range(1, 9):  # input weights 1-4, recurrent 5-8
        depth = n_input if i < 5 else units
        ins[i] = T((units, depth), "float32", data=rng.normal(0, weight_scale / np.sqrt(depth), (units, depth)))
    for i in range(12, 16):
        ins[i] = T((units,), "float32", data=rng.normal(0, bias_scale, units))
    ins[18] = T((batch, units), "float32", variable=True)
    ins[19] = T((batch, units), "float32", variable=True)
    opts = {"fused_activation_function": act, "cell_clip": cell_clip, "time_major": time_major}
    return op_model("UNIDIRECTIONAL_SEQUENCE_LSTM", ins, [T((*in_shape[:2], units), "float32")], opts)


LSTM_F32 = [
    {},
    {"batch": 3, "units": 17, "n_input": 33},
    {"batch": 2, "time_major": True, "steps": 4, "units": 9},
    {"steps": 1, "n_input": 1, "units": 1},
    {"units": 8, "n_input": 16, "weight_scale": 30.0},
    {"cell_clip": 0.7, "units": 20, "n_input": 28},
    {"weight_scale": 60.0, "bias_scale": 20.0, "units": 5},  # saturated gates
    {"act": 0, "units": 3, "n_input": 7},
]


def assert_stateful_same(data: bytes) -> None:
    """For models with state, each sample of a chunk from the initial state: the port gives the portable kernel's
    bytes on every sample (NaN inputs included), and the interpreter's (after a reset) on the first, plain one (the
    numpy reference may give NaNs of the other sign)."""
    xs = _inputs(data, SAMPLES, 0)
    outs, done, status = NativeModel(data).run_chunk(xs)
    assert (done, status) == (SAMPLES, 0)
    portable, _, _ = NativeModel(data, host_ports=False).run_chunk(xs)
    assert [o.tobytes() for o in outs] == [o.tobytes() for o in portable]
    it = Interpreter(data)
    for i, x in enumerate(xs):
        it.set_input(x[0], i)
    it.invoke()
    assert [o[0].tobytes() for o in outs] == [it.get_output(i).tobytes() for i in range(len(it.subgraph.outputs))]


@pytest.mark.parametrize("case", LSTM_F32, ids=_id)
def test_lstm_f32(case: dict) -> None:
    assert_stateful_same(lstm_f32(**case))


def pad(*, shape: tuple[int, ...] = (1, 5, 6, 3), pads: tuple[tuple[int, int], ...] = ((0, 0), (1, 1), (1, 1), (0, 0)),
        kind: str = "int8") -> bytes:
    out = tuple(s + a + b for s, (a, b) in zip(shape, pads))
    x, y = (T(shape, "int8", 0.05, -3), T(out, "int8", 0.05, -3)) if kind == "int8" else (T(shape, kind), T(out, kind))
    return op_model("PAD", [x, T((len(shape), 2), "int32", data=np.array(pads))], [y], schema.options("PAD"))


PAD = [
    {},
    {"pads": ((0, 0), (0, 0), (0, 0), (0, 0))},  # nothing to pad: one row
    {"pads": ((0, 0), (0, 0), (0, 0), (2, 1)), "kind": "float32"},
    {"pads": ((1, 0), (0, 0), (0, 2), (0, 0)), "shape": (2, 3, 4, 5)},
    {"pads": ((0, 0), (2, 0), (0, 0), (0, 0)), "kind": "int16", "shape": (2, 3, 4, 5)},
    {"pads": ((0, 1), (3, 0)), "shape": (3, 7)},
    {"pads": ((0, 0), (0, 0), (1, 0), (0, 0), (0, 0)), "shape": (1, 2, 3, 4, 5)},
]


@pytest.mark.parametrize("case", PAD, ids=_id)
def test_pad(case: dict) -> None:
    assert_ported_same(pad(**case))


def softmax(*, rows: int = 5, depth: int = 10, beta: float = 1.0, scale: float = 0.1, out: str = "int8") -> bytes:
    y = T((rows, depth), "int8", 1 / 256, -128) if out == "int8" else T((rows, depth), "int16", 1 / 65536, -32768)
    return op_model("SOFTMAX", [T((rows, depth), "int8", scale, 7)], [y], schema.options("SOFTMAX", beta=beta))


SOFTMAX = [
    {},
    {"rows": 300, "depth": 2},
    {"rows": 1, "depth": 1},
    {"depth": 100, "scale": 0.5},  # many differences below diff_min
    {"depth": 37, "scale": 0.01, "beta": 3.0},
    {"depth": 19, "out": "int16"},
]


@pytest.mark.parametrize("case", SOFTMAX, ids=_id)
def test_softmax(case: dict) -> None:
    assert_ported_same(softmax(**case))


def test_softmax_the_wheel_agrees() -> None:
    assert_ported_same(softmax(depth=33, scale=0.3), wheel=True)


def split(shape: tuple[int, ...], axis: int, sizes: list[int], dtype: str = "float32") -> bytes:
    """SPLIT (equal parts) or SPLIT_V (``sizes``) of ``shape`` along ``axis``."""
    q = (0.1, 1) if dtype == "int8" else (None, None)
    outs = [T(tuple(s if a == axis else d for a, d in enumerate(shape)), dtype, *q) for s in sizes]
    if len(set(sizes)) == 1:
        return op_model("SPLIT", [T((), "int32", data=axis), T(shape, dtype, *q)], outs,
                        schema.options("SPLIT", num_splits=len(sizes)))
    return op_model("SPLIT_V", [T(shape, dtype, *q), T((len(sizes),), "int32", data=sizes), T((), "int32", data=axis)],
                    outs, schema.options("SPLIT_V", num_splits=len(sizes)))


SPLIT = [  # (shape, axis, sizes): parts of 4 bytes to past the port's inline limit of 256
    ((16, 80), 1, [20] * 4),  # a lanes twin's LSTM gates: 80-byte parts
    ((3, 5, 48), 2, [16, 32]),  # 64 and 128 bytes: whole vectors only
    ((7, 70), 1, [1, 69]),  # 4 and 276 bytes: the portable kernel
    ((2, 9, 3), 1, [2, 3, 4]),  # int8 below
    ((4, 33), 0, [1, 3]),
]


@pytest.mark.parametrize("kind", ["float32", "int8"])
@pytest.mark.parametrize("case", SPLIT, ids=str)
def test_split(case: tuple, kind: str) -> None:
    shape, axis, sizes = case
    assert_ported_same(split(shape, axis, sizes, kind), wheel=shape == (16, 80))
