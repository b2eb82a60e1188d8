"""The host ports of the sequence and int16x8 kernels (int8 UNIDIRECTIONAL_SEQUENCE_LSTM, SVDF, CONV_2D /
DEPTHWISE_CONV_2D / FULLY_CONNECTED with int16 activations) give the portable kernels' bytes, the interpreter's
and the TFLM wheel's, on the bundled models and on awkward shapes: odd unit counts, batches, time-major inputs,
zero points, saturated gates, cell clips, SVDF ranks and memory sizes, int16 channel counts off the vector widths."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_native_ports import _inputs

import micronn
from micronn import Interpreter
from micronn.export import NativeModel
from micronn.kernels._conv_util import compute_out_size
from micronn.testing import T, _Tflm, op_model
from micronn.tflite import schema

SAMPLES = 4
ROOT = Path(__file__).resolve().parents[2]
MODELS = Path(micronn.__file__).parent / "models"


def assert_all_same(data: bytes, *, seed: int = 0, samples: int = SAMPLES, wheel: bool = True,
                    stream: bool = False) -> None:
    """Each sample from the initial state (``stream``: each from the state the one before left): the ports' bytes
    (batched and one invoke at a time) equal the portable kernels', the interpreter's and the wheel's."""
    xs = _inputs(data, samples, seed)
    native = NativeModel(data)
    outs, done, status = native.run_chunk(xs, reset=not stream)
    assert (done, status) == (samples, 0)
    portable, done, status = NativeModel(data, host_ports=False).run_chunk(xs, reset=not stream)
    assert (done, status) == (samples, 0)
    assert [o.tobytes() for o in outs] == [o.tobytes() for o in portable]
    it = Interpreter(data)
    ref = _Tflm(data) if wheel else None
    native.reset()
    for k in range(samples):
        sample = [x[k] for x in xs]
        if not stream:
            it.reset()
            native.reset()
        for i, x in enumerate(sample):
            it.set_input(x, i)
        it.invoke()
        want = [it.get_output(i).tobytes() for i in range(len(it.subgraph.outputs))]
        assert [o[k].tobytes() for o in outs] == want, k
        assert [g.tobytes() for g in native.run(sample)] == want, k
        if ref is not None:
            if not stream:
                ref.it.reset()
            assert [w.tobytes() for w in ref.run(sample)] == want, k


def _id(case: dict) -> str:
    return "-".join(f"{k}={v}" for k, v in case.items()) or "plain"


# ---- int8 UNIDIRECTIONAL_SEQUENCE_LSTM ------------------------------------------------------------------------------

def lstm(*, batch: int = 1, steps: int = 3, n_input: int = 5, units: int = 4, time_major: bool = False,
         cell_clip: float = 0.0, cell_power: float = -12.0, input_zp: int = -3, hidden_zp: int = 2, weight_zp: int = 0,
         act: int = 4, weight_scale: float = 1.0, in_scale: float = 1 / 127, hidden_scale: float = 1 / 127,
         bias_scale: float = 0.5, seed: int = 0) -> bytes:
    """An int8 LSTM with all four gates (no peephole, projection or layer norm: the int8 kernel takes none), gates
    of order ``weight_scale``, the cell state's scale 2^cell_power."""
    rng = np.random.default_rng(seed)
    in_shape = (steps, batch, n_input) if time_major else (batch, steps, n_input)
    ins: list[T | None] = [None] * 24
    ins[0] = T(in_shape, "int8", in_scale, input_zp)
    for i in range(1, 9):  # input weights 1-4, recurrent 5-8
        depth = n_input if i < 5 else units
        w = rng.normal(0, weight_scale / np.sqrt(depth), (units, depth))
        scale = float(np.abs(w).max() / (127 - abs(weight_zp)))
        ins[i] = T(w.shape, "int8", scale, weight_zp, data=np.round(w / scale) + weight_zp)
    for gate, i in enumerate(range(12, 16)):
        s_bias = float(np.float32(in_scale) * np.float32(ins[1 + gate].scale))
        ins[i] = T((units,), "int32", s_bias, 0,
                   data=np.clip(np.round(rng.normal(0, bias_scale, units) / s_bias), -2**31, 2**31 - 1))
    ins[18] = T((batch, units), "int8", hidden_scale, hidden_zp, variable=True)
    ins[19] = T((batch, units), "int16", 2.0**cell_power, 0, variable=True)
    out = T((*in_shape[:2], units), "int8", hidden_scale, hidden_zp)
    opts = {"fused_activation_function": act, "cell_clip": cell_clip, "time_major": time_major}
    return op_model("UNIDIRECTIONAL_SEQUENCE_LSTM", ins, [out], opts)


LSTM = [
    {},
    {"batch": 3, "units": 17, "n_input": 33, "steps": 4},
    {"batch": 2, "time_major": True, "steps": 4, "units": 9},
    {"steps": 1, "n_input": 1, "units": 1},
    {"n_input": 7, "units": 5, "steps": 5},
    {"units": 8, "n_input": 16, "weight_scale": 30.0},  # saturated gates
    {"units": 16, "n_input": 15, "batch": 2},
    {"cell_clip": 0.7, "units": 20, "n_input": 28},
    {"cell_clip": 0.99995, "weight_scale": 10, "steps": 6, "units": 11},
    {"cell_clip": 20.0, "weight_scale": 10},
    {"act": 0, "units": 3, "n_input": 7},  # no cell tanh
    {"act": 1, "units": 24, "n_input": 9},
    {"cell_power": -11}, {"cell_power": -13}, {"cell_power": -15, "weight_scale": 3.0}, {"cell_power": -8},
    {"cell_power": -11.7},
    {"input_zp": -128, "hidden_zp": -128, "weight_zp": 3, "units": 13},
    {"input_zp": 127, "hidden_zp": 100, "weight_zp": -5, "batch": 2, "units": 7},
    {"in_scale": 0.5, "hidden_scale": 0.25, "weight_scale": 3.0},  # products shift left (and wrap)
    {"in_scale": 1e-6, "hidden_scale": 1e-7},
    {"bias_scale": 1e6, "units": 12},  # sums that wrap int32
    {"hidden_scale": 1e-4, "units": 10},
]


@pytest.mark.parametrize("case", LSTM, ids=_id)
def test_lstm_int8(case: dict) -> None:
    assert_all_same(lstm(**case, seed=len(case)))


@pytest.mark.parametrize("path", [MODELS / "trained_lstm_int8.tflite", ROOT / "tests" / "models" / "lstm_int8.tflite"],
                         ids=lambda p: p.stem)
def test_lstm_models(path: Path) -> None:
    assert_all_same(path.read_bytes(), samples=6)


# ---- int16x8 CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED ---------------------------------------------------------

def conv16(*, n: int = 1, h: int = 7, w: int = 6, cin: int = 3, cout: int = 4, fh: int = 3, fw: int = 2,
           stride: tuple[int, int] = (1, 1), dil: tuple[int, int] = (1, 1), pad: int = 0, act: int = 0,
           per_channel: bool = True, bias: str | None = "int64", groups: int = 1, depthwise: bool = False,
           mult: int = 1, scales: tuple[float, float] = (0.002, 0.02), in_scale: float = 0.002,
           out_scale: float = 0.01, wmax: int = 127, positive: bool = False, bias_max: int = 3_000_000,
           seed: int = 0) -> bytes:
    """A CONV_2D or DEPTHWISE_CONV_2D with int16 activations and int8 weights."""
    rng = np.random.default_rng(seed)
    cout = cin * mult if depthwise else cout
    oh, ow = compute_out_size(pad, h, fh, stride[0], dil[0]), compute_out_size(pad, w, fw, stride[1], dil[1])
    shape = (1, fh, fw, cout) if depthwise else (cout, fh, fw, cin // groups)
    w_scales = list(rng.uniform(*scales, cout)) if per_channel else scales[0]
    wt = T(shape, "int8", w_scales, 0, axis=3 if depthwise else 0,
           data=rng.integers(0 if positive else -wmax, wmax + 1, shape))
    b = T((cout,), bias, data=rng.integers(-bias_max, bias_max, cout, dtype=np.int64)) if bias else None
    op = "DEPTHWISE_CONV_2D" if depthwise else "CONV_2D"
    extra = {"depth_multiplier": mult} if depthwise else {}
    opts = schema.options(op, padding=pad, stride_h=stride[0], stride_w=stride[1], dilation_h_factor=dil[0],
                          dilation_w_factor=dil[1], fused_activation_function=act, **extra)
    return op_model(op, [T((n, h, w, cin), "int16", in_scale, 0), wt, b],
                    [T((n, oh, ow, cout), "int16", out_scale, 0)], opts)


CONV16 = [
    {}, {"pad": 1}, {"stride": (2, 3)}, {"dil": (2, 3), "h": 9, "w": 10}, {"act": 1}, {"act": 3, "out_scale": 1e-3},
    {"act": 2, "out_scale": 1e-4}, {"bias": None}, {"per_channel": False}, {"n": 2, "pad": 1, "h": 5, "w": 4},
    {"fh": 1, "fw": 1, "cin": 8, "cout": 7}, {"fh": 1, "fw": 1, "cin": 64, "cout": 64, "h": 5, "w": 5},
    {"fh": 1, "fw": 1, "cin": 9, "cout": 17, "n": 2}, {"fh": 1, "fw": 1, "cin": 6, "cout": 40, "stride": (2, 2)},
    {"cin": 1, "cout": 64, "h": 49, "w": 10, "fh": 10, "fw": 4, "stride": (2, 2)},  # kws's first layer
    {"cin": 4, "cout": 6, "groups": 2, "stride": (2, 1)}, {"cout": 5, "cin": 5, "fh": 3, "fw": 3},
    {"cout": 33, "cin": 7, "fh": 3, "fw": 3, "h": 5, "w": 3},
    {"bias": "int32"}, {"bias": "int32", "pad": 1, "per_channel": False},
    {"bias": "int32", "cin": 64, "cout": 3, "fh": 5, "fw": 5, "bias_max": 2**31 - 1, "out_scale": 4.0,
     "positive": True},
    {"cin": 64, "cout": 3, "h": 6, "w": 6, "fh": 5, "fw": 5, "out_scale": 4.0, "positive": True},  # int64 sums
    {"bias_max": 2**62},  # acc * multiplier wraps int64 as the reference does
    {"bias_max": 2**31 - 2**20, "cout": 9},  # sum + bias near int32's edge
    {"in_scale": 1.0, "scales": (1.0, 1.5), "out_scale": 2**-17},  # shifts past Q15's 15
    {"in_scale": 2**-20, "scales": (2**-10, 2**-9), "out_scale": 1.0, "bias_max": 2**40},
    {"in_scale": 2**-3, "scales": (2**-6, 2**-5), "out_scale": 2**12, "cout": 12},  # total shifts beyond 32
]
DW16 = [
    {}, {"mult": 3, "cin": 2}, {"pad": 1}, {"stride": (2, 1), "dil": (1, 2), "h": 9, "w": 8, "act": 1},
    {"n": 2, "per_channel": False, "bias": None}, {"cin": 5, "fh": 3, "fw": 3}, {"cin": 64, "fh": 3, "fw": 3, "h": 6,
                                                                                "w": 5},
    {"cin": 21, "fh": 3, "fw": 3, "pad": 1, "act": 3, "out_scale": 1e-3}, {"cin": 19, "mult": 2, "fh": 2, "fw": 3},
    {"cin": 2, "h": 33, "w": 34, "fh": 33, "fw": 33, "pad": 1, "out_scale": 4.0, "positive": True},  # int64 sums
    {"in_scale": 1.0, "scales": (1.0, 1.5), "out_scale": 2**-17, "cin": 11},
    {"bias_max": 2**62, "cin": 16},
]




def _wheel_agrees(case: dict, depthwise: bool = False) -> bool:
    """False for the cases where the reference's arithmetic is out of its range (Q15 shifts past 63, int64 products
    that wrap): there the interpreter and the kernels follow the Python reference, the wheel its own UB; and for
    an int16 depthwise convolution without a bias, which crashes the wheel."""
    return case.get("out_scale") != 2**-17 and case.get("bias_max") != 2**62 and not (depthwise and "bias" in case)


@pytest.mark.parametrize("case", CONV16, ids=_id)
def test_conv_2d_s16(case: dict) -> None:
    assert_all_same(conv16(**case), samples=3, wheel=_wheel_agrees(case))


@pytest.mark.parametrize("case", DW16, ids=_id)
def test_depthwise_conv_2d_s16(case: dict) -> None:
    assert_all_same(conv16(depthwise=True, **case), samples=3, wheel=_wheel_agrees(case, True))


@pytest.mark.parametrize("value", [32767, -32768])
@pytest.mark.parametrize("case", [{"cin": 64, "cout": 3, "fh": 5, "fw": 5, "out_scale": 4.0, "positive": True},
                                  {"cin": 16, "cout": 9, "fh": 3, "fw": 3, "pad": 1, "out_scale": 0.5},
                                  {"depthwise": True, "cin": 16, "fh": 3, "fw": 3, "pad": 1, "out_scale": 0.05}],
                         ids=_id)
def test_s16_extreme_inputs(case: dict, value: int) -> None:
    data = conv16(**case)
    xs = [np.full(x.shape, value, np.int16) for x in _inputs(data, 1, 0)]
    outs, _, _ = NativeModel(data).run_chunk(xs)
    portable, _, _ = NativeModel(data, host_ports=False).run_chunk(xs)
    assert [o.tobytes() for o in outs] == [o.tobytes() for o in portable]
    ref = _Tflm(data)
    assert [o[0].tobytes() for o in outs] == [w.tobytes() for w in ref.run([x[0] for x in xs])]


def fc16(*, batches: int = 1, depth: int = 10, units: int = 5, per_channel: bool = False, bias: bool = True,
         act: int = 0, in_zp: int = 0, out_zp: int = 0, out_scale: float = 0.01, positive: bool = False,
         bias_max: int = 300_000, seed: int = 0) -> bytes:
    """A FULLY_CONNECTED with int16 activations and int8 weights."""
    rng = np.random.default_rng(seed)
    scales = list(rng.uniform(0.002, 0.02, units)) if per_channel else 0.01
    wt = T((units, depth), "int8", scales, 0, data=rng.integers(0 if positive else -127, 128, (units, depth)))
    b = T((units,), "int64", data=rng.integers(-bias_max, bias_max, units, dtype=np.int64)) if bias else None
    return op_model("FULLY_CONNECTED", [T((batches, depth), "int16", 0.002, in_zp), wt, b],
                    [T((batches, units), "int16", out_scale, out_zp)],
                    schema.options("FULLY_CONNECTED", fused_activation_function=act))


FC16 = [
    {}, {"per_channel": True, "units": 7, "batches": 3}, {"bias": False, "act": 1}, {"units": 1},
    {"in_zp": -300, "out_zp": 250, "batches": 2}, {"act": 3, "out_scale": 1e-3}, {"depth": 64, "units": 12},
    {"depth": 33, "units": 41, "per_channel": True}, {"depth": 1, "units": 9},
    {"depth": 1200, "units": 3, "out_scale": 4.0, "positive": True},  # int64 sums
    {"bias_max": 2**62, "in_zp": 5},
]


@pytest.mark.parametrize("case", FC16, ids=_id)
def test_fully_connected_s16(case: dict) -> None:
    assert_all_same(fc16(**case), samples=3, wheel=_wheel_agrees(case))


def test_kws_ds_cnn_int16x8() -> None:
    assert_all_same((ROOT / "tests" / "models" / "kws_ds_cnn_int16x8.tflite").read_bytes(), samples=3)


# ---- SVDF -----------------------------------------------------------------------------------------------------------

def svdf(*, batch: int = 1, n_input: int = 12, filters: int = 8, rank: int = 2, memory: int = 4, in_zp: int = -3,
         out_zp: int = 5, state_zp: int = 0, seed: int = 0) -> bytes:
    """An int8 SVDF with an int16 state (zero point ``state_zp``); feature weights with -128s (the paired layout's
    corrections)."""
    rng = np.random.default_rng(seed)
    units = filters // rank
    wf = rng.integers(-128, 128, (filters, n_input))
    wf.reshape(-1)[rng.choice(wf.size, max(1, wf.size // 8), replace=False)] = -128
    s_in, s_wf, s_wt = 0.059, 0.0091, 0.5 / 32767
    s_state = float(np.sqrt(n_input) * 74 * 74 * s_in * s_wf * 3 / 32767)
    s_out = float(np.sqrt(memory * rank) * (32767 / 3) * (32767 / 2) * s_state * s_wt * 3 / 127)
    return op_model("SVDF", [
        T((batch, n_input), "int8", s_in, in_zp),
        T((filters, n_input), "int8", s_wf, 0, data=wf),
        T((filters, memory), "int16", s_wt, 0, data=rng.integers(-32768, 32768, (filters, memory))),
        T((units,), "int32", float(np.float32(s_state) * np.float32(s_wt)), 0,
          data=rng.integers(-50_000, 50_000, units)),
        T((batch, memory * filters), "int16", s_state, state_zp, variable=True),
    ], [T((batch, units), "int8", s_out, out_zp)], {"rank": rank, "fused_activation_function": 1})


SVDF = [
    {}, {"batch": 3}, {"rank": 1, "filters": 6, "memory": 1}, {"batch": 2, "n_input": 40, "filters": 32, "memory": 10},
    {"n_input": 96, "filters": 64, "rank": 1, "memory": 8, "in_zp": -128, "out_zp": -128},  # keyword's first
    {"n_input": 16, "filters": 64, "rank": 1, "memory": 8}, {"n_input": 32, "filters": 32, "rank": 1, "memory": 32},
    {"n_input": 31, "filters": 37, "rank": 1, "memory": 8, "batch": 2},  # a filter tail past whole 8s
    {"n_input": 9, "filters": 13, "rank": 1, "memory": 16}, {"n_input": 5, "filters": 70, "rank": 1, "memory": 8},
    {"n_input": 17, "filters": 130, "rank": 2, "memory": 48}, {"filters": 24, "rank": 3, "memory": 8, "batch": 2},
    {"filters": 12, "rank": 4, "memory": 5}, {"n_input": 1, "filters": 1, "rank": 1, "memory": 2},
    {"n_input": 64, "filters": 16, "rank": 1, "memory": 8, "in_zp": 127, "out_zp": -100},
]


@pytest.mark.parametrize("case", SVDF, ids=_id)
def test_svdf(case: dict) -> None:
    """Streamed (the state carries over: the time steps shift real history) and from the initial state."""
    data = svdf(**case, seed=len(case))
    assert_all_same(data, samples=5, stream=True)
    assert_all_same(data, samples=2)


def test_keyword_scrambled() -> None:
    data = (MODELS / "keyword_scrambled.tflite").read_bytes()
    assert_all_same(data, samples=6, stream=True)
    assert_all_same(data, samples=3)
