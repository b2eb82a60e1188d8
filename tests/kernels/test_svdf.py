"""SVDF against the TFLM reference, byte for byte: int8 (int16 or int8 state) and float32, state kept across invokes."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import model_bytes

from micronn.errors import MicronnError
from micronn.interpreter import Interpreter
from micronn.quant import multiply_by_quantized_multiplier, quantize_multiplier
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_micronn, run_tflm, tflm_arena
from micronn.tflite.reader import read
from micronn.tflite.writer import write

f32 = np.float32


def int8_svdf(rng: np.random.Generator, batch=1, n_input=12, filters=8, rank=2, memory=4, act=1, state="int16",
              state_zp=0, out_zp=5, input_zp=-3) -> bytes:
    """A quantized SVDF whose scales keep the state and the output mostly inside their ranges."""
    units = filters // rank
    info = np.iinfo(state)
    s_in, s_wf = 0.059 * rng.uniform(0.8, 1.2), 0.0091 * rng.uniform(0.8, 1.2)
    s_state = float(np.sqrt(n_input) * 74 * 74 * s_in * s_wf * 3 / info.max)
    s_wt = 0.5 / info.max * rng.uniform(0.8, 1.2)
    s_out = float(np.sqrt(memory * rank) * (info.max / 3) * (info.max / 2) * s_state * s_wt * 3 / 127)
    return op_model("SVDF", [
        T((batch, n_input), "int8", s_in, input_zp),
        T((filters, n_input), "int8", s_wf, 0, data=rng.integers(-127, 128, (filters, n_input))),
        T((filters, memory), state, s_wt, 0, data=rng.integers(info.min + 1, info.max, (filters, memory))),
        T((units,), "int32", float(f32(s_state) * f32(s_wt)), 0, data=rng.integers(-50_000, 50_000, units)),
        T((batch, memory * filters), state, s_state, state_zp, variable=True),
    ], [T((batch, units), "int8", s_out, out_zp)], {"rank": rank, "fused_activation_function": act})


def float_svdf(rng: np.random.Generator, batch=1, n_input=12, filters=8, rank=2, memory=4, act=1) -> bytes:
    units = filters // rank
    return op_model("SVDF", [
        T((batch, n_input), "float32"),
        T((filters, n_input), "float32", data=rng.normal(0, 1, (filters, n_input))),
        T((filters, memory), "float32", data=rng.normal(0, 1, (filters, memory))),
        T((units,), "float32", data=rng.normal(0, 1, units)),
        T((batch, memory * filters), "float32", variable=True),
    ], [T((batch, units), "float32")], {"rank": rank, "fused_activation_function": act})


INT8_CASES = [
    {},
    {"act": 0},
    {"act": 3},  # TFLM's integer SVDF ignores the fused activation
    {"batch": 3},
    {"rank": 1, "filters": 6},
    {"rank": 3, "filters": 12, "memory": 1},
    {"state": "int8", "state_zp": 4},
    {"out_zp": -128, "input_zp": 0},
    {"batch": 2, "n_input": 40, "filters": 32, "memory": 10},
]


@pytest.mark.parametrize("case", INT8_CASES, ids=str)
def test_int8(case):
    rng = np.random.default_rng(len(str(case)))
    outputs = assert_same_as_tflm(int8_svdf(rng, **case), runs=4, seed=3)
    values = np.concatenate([o[0].ravel() for o in outputs])
    assert len(np.unique(values)) > 4  # not all saturated: the comparison means something


FLOAT_CASES = [
    {},
    {"act": 0},
    {"act": 2},
    {"act": 3},
    {"act": 4},  # tanh: the C library's tanhf
    {"batch": 3, "rank": 3, "filters": 12},
    {"rank": 1, "memory": 1},
    {"n_input": 200, "filters": 64, "memory": 10, "act": 4},
]


@pytest.mark.parametrize("case", FLOAT_CASES, ids=str)
def test_float(case):
    assert_same_as_tflm(float_svdf(np.random.default_rng(len(str(case))), **case), runs=4, seed=5)


def _discriminating_scales(rng: np.random.Generator, draw) -> tuple:
    """Scales (a, b, c) from ``draw`` for which a * b / c quantizes furthest apart in float32 and in double;
    returns the scales and both (multiplier, shift) pairs."""
    best = None
    for _ in range(3000):
        a, b, c = (float(f32(v)) for v in draw(rng))
        in_float = quantize_multiplier(float(f32(f32(a) * f32(b)) / f32(c)))
        in_double = quantize_multiplier(a * b / c)
        gap = abs(in_float[0] - in_double[0])
        if in_float[1] == in_double[1] and (best is None or gap > best[0]):
            best = (gap, (a, b, c), in_float, in_double)
    return best[1:]


def _differing(acc: np.ndarray, m_float: tuple, m_double: tuple) -> np.ndarray:
    return acc[multiply_by_quantized_multiplier(acc, *m_float) != multiply_by_quantized_multiplier(acc, *m_double)]


def test_output_scale_in_double():
    """effective_scale_2 = state * weights_time / output: only a double-precision multiplier matches TFLM."""
    def draw(r):
        s_state, s_wt = r.uniform(1e-4, 1e-3), r.uniform(1e-4, 1e-3)
        return s_state, s_wt, s_state * s_wt * r.uniform(1e7, 2e7)

    (s_state, s_wt, s_out), m_float, m_double = _discriminating_scales(np.random.default_rng(4), draw)
    # accumulators (set through the bias, with zero weights) near rounding boundaries of the int8 output
    step = m_double[0] * 2.0 ** (m_double[1] - 31)
    acc = np.concatenate([np.arange(int((r + 0.5) / step) - 300, int((r + 0.5) / step) + 300)
                          for r in range(-127, 127)])
    differ = _differing(acc, m_float, m_double)[:200]
    assert len(differ) > 20
    units = len(differ)
    model = op_model("SVDF", [
        T((1, 1), "int8", 0.1, 0), T((units, 1), "int8", 0.01, 0, data=0), T((units, 1), "int16", s_wt, 0, data=1),
        T((units,), "int32", float(f32(s_state) * f32(s_wt)), 0, data=differ),
        T((1, units), "int16", s_state, 0, variable=True),
    ], [T((1, units), "int8", s_out, 0)], {"rank": 1})
    x = [np.zeros((1, 1), np.int8)]
    expected = np.clip(multiply_by_quantized_multiplier(differ, *m_double), -128, 127)
    assert run_tflm(model, x)[0].ravel().tolist() == expected.tolist()
    assert_same_as_tflm(model, x)


def test_state_scale_in_double():
    """effective_scale_1 = input * weights_feature / state, seen in the int16 state TFLM keeps."""
    from tflite_micro.python.tflite_micro import runtime

    def draw(r):
        s_in, s_wf = r.uniform(0.01, 0.1), r.uniform(0.001, 0.01)
        return s_in, s_wf, s_in * s_wf * r.uniform(25, 40)

    (s_in, s_wf, s_state), m_float, m_double = _discriminating_scales(np.random.default_rng(3), draw)
    differ = _differing(np.arange(-1_000_000, 1_000_000), m_float, m_double)
    differ = differ[np.abs(multiply_by_quantized_multiplier(differ, *m_double)) < 32767][:60]
    assert len(differ) > 20
    # each batch row's accumulator: 127 * (sum of 64 coarse inputs) + a fine input
    coarse = np.round(differ / 127).astype(np.int64)
    x = np.zeros((len(differ), 65), np.int64)
    x[:, :64] = np.sign(coarse)[:, None] * ((np.abs(coarse)[:, None] + 63 - np.arange(64)) // 64)
    x[:, 64] = differ - 127 * coarse
    assert ((x[:, :64] * 127).sum(1) + x[:, 64] == differ).all() and np.abs(x).max() <= 127
    batch = len(differ)
    model = op_model("SVDF", [
        T((batch, 65), "int8", s_in, 0), T((1, 65), "int8", s_wf, 0, data=[[127] * 64 + [1]]),
        T((1, 1), "int16", 0.001, 0, data=1), T((1,), "int32", float(f32(s_state) * f32(0.001)), 0, data=0),
        T((batch, 1), "int16", s_state, 0, variable=True),
    ], [T((batch, 1), "int8", 1.0, 0)], {"rank": 1})
    state_index = next(i for i, t in enumerate(read(model).main.tensors) if t.is_variable)
    tflm = runtime.Interpreter.from_bytes(model, arena_size=1 << 20,
                                          intrepreter_config=runtime.InterpreterConfig.kPreserveAllTensors)
    tflm.set_input(x.astype(np.int8), 0)
    tflm.invoke()
    tflm_state = np.asarray(tflm.GetTensor(state_index, 0)["tensor_data"]).ravel()
    assert tflm_state.tolist() == multiply_by_quantized_multiplier(differ, *m_double).tolist()
    mine = Interpreter.from_bytes(model)
    mine.set_input(x.astype(np.int8), 0)
    mine.invoke()
    assert mine.get_tensor(state_index).ravel().tolist() == tflm_state.tolist()


def test_reset_restores_state():
    """The activation state carries over between invokes and reset() zeroes it, as in TFLM."""
    it = Interpreter.from_bytes(int8_svdf(np.random.default_rng(9)))
    x = np.random.default_rng(0).integers(-128, 128, (1, 12), dtype=np.int8)
    it.set_input(x, 0)
    it.invoke()
    first = it.get_output(0).copy()
    it.invoke()
    assert it.get_output(0).tobytes() != first.tobytes()
    it.reset()
    it.set_input(x, 0)
    it.invoke()
    assert it.get_output(0).tobytes() == first.tobytes()


@pytest.mark.parametrize("make", [int8_svdf, float_svdf], ids=["int8", "float32"])
def test_scratch_matches_tflm_arena(make):
    model = make(np.random.default_rng(2), batch=2, filters=12, rank=3)
    assert Interpreter.from_bytes(model, planner="tflm").arena_report()["head_bytes"] == tflm_arena(model)["head"]


def _mutated(model: bytes, change) -> bytes:
    ir = read(model)
    change(ir.main)
    return write(ir)


def _drop_bias(sg):
    sg.operators[0].inputs[3] = -1


def _not_variable(sg):
    state = sg.tensors[sg.operators[0].inputs[4]]
    state.is_variable = False
    state.data = np.zeros(state.shape, state.dtype)


@pytest.mark.parametrize("change", [_drop_bias, _not_variable], ids=["no bias", "state not variable"])
def test_rejected_like_tflm(change):
    model = _mutated(int8_svdf(np.random.default_rng(0)), change)
    with pytest.raises(MicronnError):
        run_micronn(model, [np.zeros((1, 12), np.int8)])


def test_rank_must_divide_filters():
    with pytest.raises(TflmError):
        run_tflm(int8_svdf(np.random.default_rng(0), filters=8, rank=3), [np.zeros((1, 12), np.int8)])
    with pytest.raises(MicronnError):
        run_micronn(int8_svdf(np.random.default_rng(0), filters=8, rank=3), [np.zeros((1, 12), np.int8)])


def test_keyword_model_svdf_outputs():
    """keyword_scrambled: all seven SVDF outputs made model outputs, compared over invokes (state carried)."""
    ir = read(model_bytes("keyword_scrambled"))
    sg = ir.main
    sg.outputs = [op.outputs[0] for op in sg.operators if op.op == "SVDF"] + list(sg.outputs)
    assert len(sg.outputs) == 8
    assert_same_as_tflm(write(ir), runs=4)


def test_keyword_model_head():
    model = model_bytes("keyword_scrambled")
    assert Interpreter.from_bytes(model).arena_report()["head_bytes"] == 672
