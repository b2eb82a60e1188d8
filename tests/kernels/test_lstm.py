"""UNIDIRECTIONAL_SEQUENCE_LSTM against the TFLM reference, byte for byte: int8 (int16 cell), 16x8 and float32,
hidden and cell state kept across invokes; plus the int16 sigmoid/tanh table measured from the wheel."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import model_bytes

from micronn.errors import MicronnError
from micronn.fixedpoint import logistic_int16, tanh_int16
from micronn.interpreter import Interpreter
from micronn.quant import multiply_by_quantized_multiplier, quantize_multiplier
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_micronn, run_tflm, tflm_arena
from micronn.tflite.reader import read
from micronn.tflite.writer import write

f32 = np.float32
INPUT_WEIGHTS, RECURRENT_WEIGHTS, BIASES = range(1, 5), range(5, 9), range(12, 16)
OUTPUT_STATE, CELL_STATE = 18, 19


def lstm(rng: np.random.Generator, kind="int8", batch=1, steps=3, n_input=5, units=4, time_major=False,
         cell_clip=0.0, cell_power=-12, input_zp=-3, hidden_zp=2, act=4, weight_scale=1.0) -> bytes:
    """A standard LSTM (all gates, no peephole/projection/layer norm) with gates of order ``weight_scale``."""
    in_shape = (steps, batch, n_input) if time_major else (batch, steps, n_input)
    out_shape = (*in_shape[:2], units)
    ins: list[T | None] = [None] * 24

    def weights(i: int) -> np.ndarray:
        depth = n_input if i in INPUT_WEIGHTS else units
        return rng.normal(0, weight_scale / np.sqrt(depth), (units, depth))

    if kind == "float32":
        ins[0] = T(in_shape, "float32")
        for i in (*INPUT_WEIGHTS, *RECURRENT_WEIGHTS):
            ins[i] = T((units, n_input if i in INPUT_WEIGHTS else units), "float32", data=weights(i))
        for i in BIASES:
            ins[i] = T((units,), "float32", data=rng.normal(0, 0.5, units))
        ins[OUTPUT_STATE] = T((batch, units), "float32", variable=True)
        ins[CELL_STATE] = T((batch, units), "float32", variable=True)
        out = T(out_shape, "float32")
    else:
        bias_type = "int32" if kind == "int8" else "int64"
        if kind == "int16":
            input_zp = hidden_zp = 0
        top = np.iinfo(kind).max
        s_in = float(f32(rng.uniform(0.9, 1.1) / top))
        s_hidden = float(f32(rng.uniform(0.9, 1.1) / top))
        ins[0] = T(in_shape, kind, s_in, input_zp)
        for i in (*INPUT_WEIGHTS, *RECURRENT_WEIGHTS):
            w = weights(i)
            scale = float(np.abs(w).max() / 127)
            ins[i] = T(w.shape, "int8", scale, 0, data=np.round(w / scale))
        for gate, i in enumerate(BIASES):
            s_bias = float(f32(s_in) * f32(ins[1 + gate].scale))
            ins[i] = T((units,), bias_type, s_bias, 0, data=np.round(rng.normal(0, 0.5, units) / s_bias))
        ins[OUTPUT_STATE] = T((batch, units), kind, s_hidden, hidden_zp, variable=True)
        ins[CELL_STATE] = T((batch, units), "int16", 2.0**cell_power, 0, variable=True)
        out = T(out_shape, kind, s_hidden, hidden_zp)
    options = {"fused_activation_function": act, "cell_clip": cell_clip, "time_major": time_major}
    return op_model("UNIDIRECTIONAL_SEQUENCE_LSTM", ins, [out], options)


# ---- the int16 sigmoid and tanh -------------------------------------------------------------------------------

ALL_INT16 = np.arange(-32768, 32768, dtype=np.int16).reshape(1, -1)


@pytest.mark.parametrize("op,scale,params", [
    ("LOGISTIC", 2.0**-12, (0, 0)),
    ("TANH", 2.0**-12, (0, 0)),
    ("TANH", 2.0**-11, (0, 1)),  # power-of-two scale: multiplier 3 << 1
    ("TANH", 2.0**-13, (3, 1)),  # TFLM's general multiplier for this scale is 3/2, like the LSTM's (3, 1)
    ("TANH", 2.0**-14, (3, 2)),
])
def test_int16_table_functions(op, scale, params):
    """Every int16 input through the wheel's int16 LOGISTIC/TANH (the same reference functions the LSTM uses)."""
    model = op_model(op, [T(ALL_INT16.shape, "int16", scale, 0)], [T(ALL_INT16.shape, "int16", 2.0**-15, 0)])
    expected = run_tflm(model, [ALL_INT16])[0].ravel()
    fn = logistic_int16 if op == "LOGISTIC" else tanh_int16
    assert fn(ALL_INT16.ravel(), *params).tolist() == expected.tolist()


# ---- single-operator models -----------------------------------------------------------------------------------

CASES = [
    {},
    {"batch": 3},
    {"batch": 2, "time_major": True},
    {"cell_clip": 0.7},
    {"cell_clip": 0.99995, "weight_scale": 10, "steps": 6},  # the quantized clip truncates (4095.8 -> 4095)
    {"cell_clip": 20.0, "weight_scale": 10},  # clip beyond the int16 range
    {"cell_power": -11},
    {"cell_power": -13},
    {"cell_power": -15},
    {"hidden_zp": -128, "input_zp": 0},
    {"weight_scale": 3.0},
    {"weight_scale": 30.0, "n_input": 16, "units": 8},
    {"n_input": 30, "units": 24, "steps": 6, "batch": 2},
    {"act": 0},  # any activation but TANH: TFLM's cell gate applies none
    {"act": 1},
]


@pytest.mark.parametrize("case", CASES, ids=str)
@pytest.mark.parametrize("kind", ["int8", "int16", "float32"])
def test_lstm(kind, case):
    rng = np.random.default_rng(len(str(case)))
    outputs = assert_same_as_tflm(lstm(rng, kind, **case), runs=3, seed=7)
    assert len(np.unique(np.concatenate([o[0].ravel() for o in outputs]))) > 8


def test_gate_multiplier_in_double():
    """Each gate's input * weight / 2^-12 multiplier is computed in double: a float32 product differs.

    With zero weights the input gate's pre-activation is the rescaled bias; the cell gate saturates
    (tanh = 1), so the first cell state (scale 2^-15) shows the input gate's sigmoid of every probe.
    """
    rng = np.random.default_rng(11)
    best = None
    for _ in range(5000):
        s_in, s_w = float(f32(rng.uniform(0.002, 0.02))), float(f32(rng.uniform(0.002, 0.02)))
        m_float = quantize_multiplier(float(f32(s_in) * f32(s_w)) / 2.0**-12)
        m_double = quantize_multiplier(s_in * s_w / 2.0**-12)
        if m_float[1] == m_double[1] and (best is None or abs(m_float[0] - m_double[0]) > best[0]):
            best = (abs(m_float[0] - m_double[0]), s_in, s_w, m_float, m_double)
    _, s_in, s_w, m_float, m_double = best
    step = m_double[0] * 2.0 ** (m_double[1] - 31)
    probes = []
    for level in range(-16000, 16000, 37):
        around = np.arange(int((level + 0.5) / step) - 50, int((level + 0.5) / step) + 50)
        differ = around[multiply_by_quantized_multiplier(around, *m_float)
                        != multiply_by_quantized_multiplier(around, *m_double)]
        probes.extend(differ[:1])
    probes = np.array(probes[:64])
    assert len(probes) > 20
    units = len(probes)
    ins: list[T | None] = [None] * 24
    ins[0] = T((1, 1, 1), "int8", s_in, 0)
    for i in (*INPUT_WEIGHTS, *RECURRENT_WEIGHTS):
        ins[i] = T((units, 1 if i in INPUT_WEIGHTS else units), "int8", s_w, 0, data=0)
    for i, data in zip(BIASES, (probes, 0, 2**31 - 1, 0)):
        ins[i] = T((units,), "int32", s_in * s_w, 0, data=data)
    ins[OUTPUT_STATE] = T((1, units), "int8", 1 / 128, 0, variable=True)
    ins[CELL_STATE] = T((1, units), "int16", 2.0**-15, 0, variable=True)
    model = op_model("UNIDIRECTIONAL_SEQUENCE_LSTM", ins, [T((1, 1, units), "int8", 1 / 128, 0)],
                     {"fused_activation_function": 4})

    from tflite_micro.python.tflite_micro import runtime

    cell_index = read(model).main.operators[0].inputs[CELL_STATE]
    x = np.zeros((1, 1, 1), np.int8)
    tflm = runtime.Interpreter.from_bytes(model, arena_size=1 << 20,
                                          intrepreter_config=runtime.InterpreterConfig.kPreserveAllTensors)
    tflm.set_input(x, 0)
    tflm.invoke()
    tflm_cell = np.asarray(tflm.GetTensor(cell_index, 0)["tensor_data"]).ravel()
    gate = logistic_int16(np.clip(multiply_by_quantized_multiplier(probes, *m_double), -32768, 32767), 0, 0)
    expected = multiply_by_quantized_multiplier(gate * 32767, *quantize_multiplier(2.0**-15))
    assert tflm_cell.tolist() == expected.tolist()
    mine = Interpreter.from_bytes(model)
    mine.set_input(x, 0)
    mine.invoke()
    assert mine.get_tensor(cell_index).ravel().tolist() == tflm_cell.tolist()


def test_reset_restores_state():
    it = Interpreter.from_bytes(lstm(np.random.default_rng(1)))
    x = np.random.default_rng(0).integers(-128, 128, (1, 3, 5), dtype=np.int8)
    it.set_input(x, 0)
    it.invoke()
    first = it.get_output(0).copy()
    it.invoke()
    assert it.get_output(0).tobytes() != first.tobytes()
    it.reset()
    it.set_input(x, 0)
    it.invoke()
    assert it.get_output(0).tobytes() == first.tobytes()


@pytest.mark.parametrize("kind", ["int8", "int16", "float32"])
def test_scratch_matches_tflm_arena(kind):
    model = lstm(np.random.default_rng(2), kind, batch=3, units=6)
    assert Interpreter.from_bytes(model, planner="tflm").arena_report()["head_bytes"] == tflm_arena(model)["head"]


# ---- what TFLM does not support -------------------------------------------------------------------------------


def _peephole(sg):
    op = sg.operators[0]
    forget = sg.tensors[op.inputs[2]]
    data = np.zeros(forget.shape[0], np.int8)
    data.flags.writeable = False
    sg.tensors.append(type(forget)("peephole", (forget.shape[0],), forget.dtype, forget.quant, data,
                                   index=len(sg.tensors)))
    op.inputs[10] = len(sg.tensors) - 1


def _cifg(sg):
    for i in (1, 5, 12):
        sg.operators[0].inputs[i] = -1


def _per_channel(sg):
    t = sg.tensors[sg.operators[0].inputs[2]]
    t.quant = type(t.quant)(np.full(t.shape[0], t.quant.scale[0], np.float32), np.zeros(t.shape[0], np.int64), 0)


@pytest.mark.parametrize("change", [_peephole, _cifg], ids=["peephole", "cifg"])
def test_unsupported_variants_fail_like_tflm(change):
    ir = read(lstm(np.random.default_rng(0)))
    change(ir.main)
    model = write(ir)
    x = [np.zeros((1, 3, 5), np.int8)]
    with pytest.raises(TflmError):
        run_tflm(model, x)
    with pytest.raises(MicronnError):
        run_micronn(model, x)


def test_per_channel_weights_rejected():
    ir = read(lstm(np.random.default_rng(0)))
    _per_channel(ir.main)
    with pytest.raises(MicronnError):
        run_micronn(write(ir), [np.zeros((1, 3, 5), np.int8)])


def _nan(bits: int) -> np.float32:
    return np.array([bits], np.uint32).view(np.float32)[0]


@pytest.mark.parametrize("seed", range(8))
def test_float_nans_propagate_as_in_tflm(seed: int):
    """NaNs, signalling ones included, and infinities in weights and biases: where two NaNs meet, the one TFLM's
    compiled code keeps comes out (found by micronn.testing.fuzz: outputs differed in the NaN's sign)."""
    rng = np.random.default_rng(seed)
    ir = read(lstm(rng, "float32", batch=2, steps=3, n_input=3, units=3, cell_clip=2.0 * (seed % 2)))
    op = ir.main.operators[0]
    for _ in range(6):
        t = ir.main.tensors[op.inputs[int(rng.choice([*INPUT_WEIGHTS, *RECURRENT_WEIGHTS, *BIASES]))]]
        data = np.array(t.data, copy=True)
        data.reshape(-1)[rng.integers(data.size)] = rng.choice(
            [_nan(0x7FC00000 | int(rng.integers(1, 1 << 22))), _nan(0xFF800000 | int(rng.integers(1, 1 << 22))),
             f32(np.inf), f32(-np.inf)])
        t.data = data
    assert_same_as_tflm(write(ir), runs=2, seed=seed)


# ---- the real model -------------------------------------------------------------------------------------------


def test_trained_lstm_model():
    model = model_bytes("trained_lstm_int8")
    assert_same_as_tflm(model, runs=4)
    assert Interpreter.from_bytes(model).arena_report()["head_bytes"] == 1536


def test_trained_lstm_sequence_output():
    """The LSTM's own (1, 28, 20) output, over invokes that carry the hidden and cell state."""
    ir = read(model_bytes("trained_lstm_int8"))
    sg = ir.main
    lstm_op = next(op for op in sg.operators if op.op == "UNIDIRECTIONAL_SEQUENCE_LSTM")
    sg.outputs = [lstm_op.outputs[0], *sg.outputs]
    outputs = assert_same_as_tflm(write(ir), runs=4, seed=1)
    assert len(np.unique(outputs[-1][0])) > 50
