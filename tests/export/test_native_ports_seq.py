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
from micronn.testing import T, _Tflm, op_model

SAMPLES = 4
ROOT = Path(__file__).resolve().parents[2]
MODELS = Path(micronn.__file__).parent / "models"


def assert_all_same(data: bytes, *, seed: int = 0, samples: int = SAMPLES, wheel: bool = True) -> None:
    """Each sample from the initial state: the ports' bytes (batched and one invoke at a time) equal the portable
    kernels', the interpreter's and the wheel's."""
    xs = _inputs(data, samples, seed)
    native = NativeModel(data)
    outs, done, status = native.run_chunk(xs)
    assert (done, status) == (samples, 0)
    portable, done, status = NativeModel(data, host_ports=False).run_chunk(xs)
    assert (done, status) == (samples, 0)
    assert [o.tobytes() for o in outs] == [o.tobytes() for o in portable]
    it = Interpreter(data)
    ref = _Tflm(data) if wheel else None
    for k in range(samples):
        sample = [x[k] for x in xs]
        it.reset()
        for i, x in enumerate(sample):
            it.set_input(x, i)
        it.invoke()
        want = [it.get_output(i).tobytes() for i in range(len(it.subgraph.outputs))]
        assert [o[k].tobytes() for o in outs] == want, k
        native.reset()
        assert [g.tobytes() for g in native.run(sample)] == want, k
        if ref is not None:
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
