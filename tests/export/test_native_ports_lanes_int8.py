"""The int8 host ports on several batch rows at once (the lanes twins' shapes): FULLY_CONNECTED's tiles of rows x
blocks of 8 units (8 x 1, 4 x 2, 2 x 3 or 4, with 4 / 2 / 1-row remainders) and SVDF's feature sums of two rows per
weight load, on batch counts 2, 3, 16 and 17, give the portable kernels', the interpreter's and the wheel's bytes;
the real models' twins (keyword_scrambled, hello_world_int8, trained_lstm_int8) give, row by row, what the
one-sample library gives, the portable kernels' twin the same, and the wheel on a few samples."""

from __future__ import annotations

import inspect
from pathlib import Path

import numpy as np
import pytest
from test_native_ports import fully_connected
from test_native_ports_more import softmax
from test_native_ports_seq import _id, assert_all_same, svdf

import micronn
from micronn.export.native import NativeModel
from micronn.testing import run_tflm
from micronn.tflite.reader import read

try:
    from micronn.lanes import twin_model
except ImportError:  # where the twin lives in micronn.simulate
    from micronn.simulate.batch import twin_model

MODELS = Path(micronn.__file__).parent / "models"
# one sample per invoke, where NativeModel can run lanes of its own
ONE = {"lanes": 1} if "lanes" in inspect.signature(NativeModel.__init__).parameters else {}
ROWS = [2, 3, 16, 17]

FC = [
    {"depth": 1, "units": 16},  # hello_world's first: odd rows as pairs
    {"depth": 16, "units": 16, "act": 1},
    {"depth": 64, "units": 16, "in_zp": -128, "out_zp": 127},  # keyword's
    {"depth": 32, "units": 2},  # one block: 8 rows a tile
    {"depth": 7, "units": 23, "per_channel": True},  # three blocks, a unit tail
    {"depth": 37, "units": 40, "act": 3},  # five blocks: 4 + 1
    {"depth": 560, "units": 10},  # trained_lstm's
    {"depth": 2, "units": 33, "in_zp": 127, "out_zp": -128},
]


@pytest.mark.parametrize("rows", ROWS)
@pytest.mark.parametrize("case", FC, ids=_id)
def test_fully_connected_rows(case: dict, rows: int) -> None:
    assert_all_same(fully_connected(batches=rows, **case, seed=rows + case["units"]), samples=2)


SVDF = [
    {"n_input": 96, "filters": 64, "rank": 1, "memory": 8, "in_zp": -128, "out_zp": -128},  # keyword's layers
    {"n_input": 16, "filters": 64, "rank": 1, "memory": 8},
    {"n_input": 32, "filters": 32, "rank": 1, "memory": 32},
    {"n_input": 9, "filters": 20, "rank": 1, "memory": 16},  # odd input, blocks 1 + 2
    {"n_input": 5, "filters": 44, "rank": 2, "memory": 5},  # blocks 4 + 2, the portable time step
    {"n_input": 24, "filters": 24, "rank": 3, "memory": 8, "in_zp": 127},  # three blocks
]


@pytest.mark.parametrize("rows", ROWS)
@pytest.mark.parametrize("case", SVDF, ids=_id)
def test_svdf_rows(case: dict, rows: int) -> None:
    data = svdf(batch=rows, **case, seed=rows + case["filters"])
    assert_all_same(data, samples=3, stream=True)
    assert_all_same(data, samples=2)


def _samples(v: np.ndarray, n: int, seed: int) -> np.ndarray:
    info = np.iinfo(v.dtype)
    return np.random.default_rng(seed).integers(info.min, info.max, (n, *v.shape), endpoint=True).astype(v.dtype)


@pytest.mark.parametrize("rows", ROWS)
@pytest.mark.parametrize("name", ["keyword_scrambled", "hello_world_int8", "trained_lstm_int8"])
def test_model_twins(name: str, rows: int) -> None:
    """2 * rows + 1 samples: the twin's chunk (its last invoke partly filled) row by row against the one-sample
    library and the portable twin; the first two samples against the wheel."""
    model = read(MODELS / f"{name}.tflite")
    one = NativeModel(model, **ONE)
    n = 2 * rows + 1
    x = _samples(one.inputs[0], n, rows)
    want, done, status = one.run_chunk([x])
    assert (done, status) == (n, 0)
    twin = twin_model(model, rows)
    padded = np.concatenate([x, np.zeros((3 * rows - n, *x.shape[1:]), x.dtype)])
    chunk = [padded.reshape(3, rows, *x.shape[2:])]
    got, done, status = NativeModel(twin, **ONE).run_chunk(chunk)
    assert (done, status) == (3, 0)
    portable, done, status = NativeModel(twin, host_ports=False, **ONE).run_chunk(chunk)
    assert (done, status) == (3, 0)
    assert got[0].tobytes() == portable[0].tobytes()
    got_rows = got[0].reshape(want[0].shape[0] + 3 * rows - n, *want[0].shape[1:])[:n]
    assert got_rows.tobytes() == want[0].tobytes()
    for k in range(2):
        assert run_tflm((MODELS / f"{name}.tflite").read_bytes(), [x[k]])[0].tobytes() == got_rows[k].tobytes(), k


@pytest.mark.parametrize("case", [{"scale": 0.1}, {"scale": 0.5}, {"scale": 0.01, "beta": 3.0},
                                  {"scale": 0.05, "out": "int16"}, {"scale": 2.0, "beta": 0.5, "out": "int16"}],
                         ids=_id)
def test_softmax_pairs(case: dict) -> None:
    """SOFTMAX rows of two (keyword_scrambled's last layer): the table by difference, every difference 0..255 in
    both orders, against the portable kernel, the interpreter and the wheel."""
    data = softmax(rows=512, depth=2, **case)
    d = np.arange(256)
    pairs = np.concatenate([np.stack([127 - d, np.full(256, 127)], 1), np.stack([-128 + d, np.full(256, -128)], 1)])
    rng = np.random.default_rng(len(case))
    x = [pairs.astype(np.int8)[None], rng.integers(-128, 128, (1, 512, 2), dtype=np.int8)]
    native, portable = NativeModel(data, **ONE), NativeModel(data, host_ports=False, **ONE)
    for xs in x:
        got = native.run_chunk([xs])[0][0]
        assert got.tobytes() == portable.run_chunk([xs])[0][0].tobytes()
        assert got.tobytes() == run_tflm(data, [xs[0]])[0].tobytes()
