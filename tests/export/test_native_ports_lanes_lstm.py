"""The int8 UNIDIRECTIONAL_SEQUENCE_LSTM host port on several batch rows (the lanes twins' shapes): every input row's
products before the time loop (two rows per weight load, odd row counts leave one), the recurrent products two
batch rows per weight load (odd batches leave one), up to 6 blocks of 8 gate rows at a time (two per saturating
pack, odd counts leave one), and the activations as tables of each int16 magnitude. On batch counts 2, 3, 16 and
17, time-major or not, streamed state or not, the port gives the portable kernel's, the interpreter's and the
wheel's bytes; the twins of both real int8 LSTMs give, row by row, what the one-sample library gives, the portable
twin the same, and the wheel on a few samples. The cell and hidden updates run over every batch row's units at
once (gate values gate-major, rows back to back: an odd unit count's last hidden pair reads the next row's first
value against a zero weight), so odd and even unit counts on odd batch counts, with weight offsets, are here too."""

from __future__ import annotations

import inspect
from pathlib import Path

import numpy as np
import pytest
from test_native_ports_seq import _id, assert_all_same, lstm

import micronn
from micronn.export.native import NativeModel
from micronn.testing import run_tflm
from micronn.tflite.reader import read

try:
    from micronn.lanes import twin_model
except ImportError:  # where the twin lives in micronn.simulate
    from micronn.simulate.batch import twin_model

ROOT = Path(__file__).resolve().parents[2]
MODELS = {"trained_lstm_int8": Path(micronn.__file__).parent / "models" / "trained_lstm_int8.tflite",
          "lstm_int8": ROOT / "tests" / "models" / "lstm_int8.tflite"}
ONE = {"lanes": 1} if "lanes" in inspect.signature(NativeModel.__init__).parameters else {}
ROWS = [2, 3, 16, 17]

LSTM = [
    {"units": 20, "n_input": 28, "steps": 5},  # trained_lstm's layer: 10 blocks, 6 + 4
    {"units": 17, "n_input": 33, "steps": 3},  # 9 blocks: 6 + 3, odd input and units
    {"units": 9, "n_input": 6, "time_major": True, "steps": 4},
    {"units": 1, "n_input": 1, "steps": 2},  # one block, one row of it used
    {"units": 24, "n_input": 9, "act": 1, "steps": 3},  # 12 blocks: 6 + 6
    {"units": 8, "n_input": 16, "weight_scale": 30.0},  # saturated gates
    {"cell_clip": 0.7, "units": 11, "n_input": 7, "time_major": True},  # 6 blocks
    {"act": 0, "units": 3, "n_input": 7},  # no cell tanh: the cell gate's table is the identity
    {"input_zp": 127, "hidden_zp": -128, "weight_zp": -5, "units": 13, "cell_power": -15, "weight_scale": 3.0},  # 7
    {"bias_scale": 1e6, "units": 12, "hidden_scale": 1e-4},  # sums that wrap int32
    {"in_scale": 0.5, "hidden_scale": 0.25, "weight_scale": 3.0, "cell_power": -11},  # general requantization
    # the gate values copied gate-major 16 at a time (the last 16 overlapping) from 16 units up, one by one below
    {"units": 16, "n_input": 5, "steps": 2, "weight_zp": 3},
    {"units": 15, "n_input": 4, "steps": 2, "weight_zp": -7, "hidden_zp": -128},
    {"units": 33, "n_input": 3, "steps": 2, "time_major": True, "weight_zp": 2, "weight_scale": 4.0},
]


@pytest.mark.parametrize("rows", ROWS)
@pytest.mark.parametrize("case", LSTM, ids=_id)
def test_lstm_rows(case: dict, rows: int) -> None:
    data = lstm(batch=rows, **case, seed=rows + len(case))
    assert_all_same(data, samples=2)
    assert_all_same(data, samples=2, stream=True, wheel=rows <= 3)


def _samples(v: np.ndarray, n: int, seed: int) -> np.ndarray:
    info = np.iinfo(v.dtype)
    return np.random.default_rng(seed).integers(info.min, info.max, (n, *v.shape[1:]), endpoint=True).astype(v.dtype)


@pytest.mark.parametrize("rows", ROWS)
@pytest.mark.parametrize("name", sorted(MODELS))
def test_lstm_model_twins(name: str, rows: int) -> None:
    """2 * rows + 1 samples: the twin's chunk (its last invoke partly filled) row by row against the one-sample
    library and the portable twin; the first two samples against the wheel."""
    model = read(MODELS[name])
    one = NativeModel(model, **ONE)
    n = 2 * rows + 1
    x = _samples(one.inputs[0], n, rows)
    want, done, status = one.run_chunk([x])
    assert (done, status) == (n, 0)
    portable_one, done, status = NativeModel(model, host_ports=False, **ONE).run_chunk([x])
    assert portable_one[0].tobytes() == want[0].tobytes()
    twin = twin_model(model, rows)
    padded = np.concatenate([x, np.zeros((3 * rows - n, *x.shape[1:]), x.dtype)])
    chunk = [padded.reshape(3, rows, *x.shape[1:])]
    got, done, status = NativeModel(twin, **ONE).run_chunk(chunk)
    assert (done, status) == (3, 0)
    portable, done, status = NativeModel(twin, host_ports=False, **ONE).run_chunk(chunk)
    assert (done, status) == (3, 0)
    assert got[0].tobytes() == portable[0].tobytes()
    got_rows = got[0].reshape(3 * rows, *want[0].shape[1:])[:n]
    assert got_rows.tobytes() == want[0].tobytes()
    for k in range(2):
        sample = x[k].reshape(one.inputs[0].shape)
        assert run_tflm(MODELS[name].read_bytes(), [sample])[0].tobytes() == got_rows[k].tobytes(), k
