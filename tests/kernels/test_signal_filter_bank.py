"""SignalFilterBank against the TFLM wheel, byte for byte: micro_speech-like mel tables, random tables with empty and
negative widths, negative weights and full-range inputs (uint64 sums wrap); bad models are refused."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import PrepareError, UnsupportedError
from micronn.kernels._custom_options import custom_options
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_tflm


def mel_tables(n_bins: int, nch: int) -> tuple[np.ndarray, ...]:
    """Triangular filters in the layout TFLM's converter writes: band c rises over its bins with ``weights`` and
    falls with ``unweights`` (4096 - weight) into channel c."""
    edges = np.round(np.linspace(2, np.sqrt(n_bins - 1), nch + 2) ** 2).astype(int)
    assert (np.diff(edges) > 0).all() and edges[-1] < n_bins
    freq, width = edges[:-1], np.diff(edges)
    start = np.concatenate([[0], np.cumsum(width)[:-1]])
    weights = np.concatenate([np.round(4096 * (np.arange(w) + 1) / (w + 1)) for w in width]).astype(np.int16)
    return weights, (4096 - weights).astype(np.int16), freq, start, width


def bank_model(n_in: int, tables: tuple, nch: int, n_out: int | None = None, const: bool = True,
               dtypes: tuple = ("uint32", "int16", "uint64"), options: bytes | None = None) -> bytes:
    weights, unweights, *rest = tables
    inputs = [T((n_in,), dtypes[0]), T((len(weights),), dtypes[1], data=weights),
              T((len(unweights),), dtypes[1], data=unweights)]
    inputs += [T((len(t),), "int16", data=t) if const else T((len(t),), "int16") for t in rest]
    return op_model("SignalFilterBank", inputs, [T((nch if n_out is None else n_out,), dtypes[2])],
                    custom_options=custom_options(num_channels=nch) if options is None else options)


def random_tables(rng: np.random.Generator, n_in: int, nch: int) -> tuple[np.ndarray, ...]:
    n_w = int(rng.integers(1, 3 * n_in))
    width = rng.integers(-3, min(n_in, n_w) + 1, nch + 1)
    span = np.maximum(width, 0)
    freq = np.array([rng.integers(0, n_in - s + 1) for s in span]) - (width < 0) * rng.integers(0, 5, nch + 1)
    start = np.array([rng.integers(0, n_w - s + 1) for s in span])
    weights = rng.integers(-32768, 32768, n_w)
    unweights = rng.integers(-32768, 32768, n_w)
    return tuple(t.astype(np.int16) for t in (weights, unweights, freq, start, width))


@pytest.mark.parametrize("n_in,nch", [(257, 40), (257, 1), (129, 10), (16, 3)], ids=str)
def test_mel_tables(n_in: int, nch: int) -> None:
    model = bank_model(n_in, mel_tables(n_in, nch), nch)
    assert_same_as_tflm(model, runs=2)  # full-range energies: the sums wrap around 2**64
    rng = np.random.default_rng(nch)
    assert_same_as_tflm(model, [(rng.integers(0, 2**32, n_in, dtype=np.uint64) >> 12).astype(np.uint32)])
    assert_same_as_tflm(model, [np.full(n_in, 2**32 - 1, np.uint32)])


@pytest.mark.parametrize("seed", range(8))
def test_random_tables(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_in, nch = int(rng.integers(1, 40)), int(rng.integers(0, 12))
    assert_same_as_tflm(bank_model(n_in, random_tables(rng, n_in, nch), nch), runs=2)


def test_longer_tables_and_weights_as_inputs() -> None:
    """Tables may hold more than num_channels + 1 entries; weights (never used as indices) may be model inputs."""
    w, u, freq, start, width = mel_tables(64, 6)
    tables = (w, u, np.append(freq, [99, -5]), np.append(start, 7), np.append(width, 3))
    assert_same_as_tflm(bank_model(64, tables, 6), runs=2)
    model = op_model("SignalFilterBank", [T((64,), "uint32"), T((len(w),), "int16"), T((len(u),), "int16"),
                                          *[T((len(t),), "int16", data=t) for t in (freq, start, width)]],
                     [T((6,), "uint64")], custom_options=custom_options(num_channels=6))
    assert_same_as_tflm(model, runs=2)


@pytest.mark.parametrize("dtypes", [("int32", "int16", "uint64"), ("uint32", "int32", "uint64"),
                                    ("uint32", "int16", "uint32"), ("uint32", "int16", "int64")], ids=str)
def test_unsupported_types(dtypes: tuple) -> None:
    model = bank_model(16, mel_tables(16, 3), 3, dtypes=dtypes)
    with pytest.raises(TflmError):
        run_tflm(model, [np.zeros(16, dtypes[0])])
    with pytest.raises((UnsupportedError, PrepareError)):
        Interpreter(model).allocate_tensors()


W, U, FREQ, START, WIDTH = mel_tables(16, 3)


def with_table(i: int, table: np.ndarray) -> tuple:
    tables = [W, U, FREQ, START, WIDTH]
    tables[i] = np.asarray(table, np.int16)
    return tuple(tables)


@pytest.mark.parametrize("model,match", [
    (bank_model(16, mel_tables(16, 3), 4), "num_channels \\+ 1"),  # TFLM reads past the tables
    (bank_model(16, mel_tables(16, 3), 3, n_out=4), "elements"),  # TFLM leaves the last unwritten
    (bank_model(16, mel_tables(16, 3), 3, n_out=2), "elements"),  # TFLM writes past the output
    (bank_model(16, mel_tables(16, 3), -1, n_out=0), "out of range"),
    (bank_model(8, mel_tables(16, 3), 3), "input bins"),
    (bank_model(16, with_table(2, [-1, *FREQ[1:]]), 3), "input bins"),
    (bank_model(16, with_table(3, [0, *START[1:-1], len(W)]), 3), "weights"),
    (bank_model(16, with_table(1, U[:-1]), 3), "weights"),  # unweights shorter than weights
    (bank_model(16, mel_tables(16, 3), 3, const=False), "constant"),
    (bank_model(16, mel_tables(16, 3), 3, options=custom_options(num_channels=3, zz=0)), "exactly the keys"),
    (bank_model(16, mel_tables(16, 3), 0, options=custom_options()), "missing"),
    (bank_model(16, mel_tables(16, 3), 3, options=b""), "FlexBuffer map"),  # the wheel segfaults
    (op_model("SignalFilterBank", [T((16,), "uint32"), *[T((4,), "int16", data=[1] * 4)] * 4],
              [T((3,), "uint64")], custom_options=custom_options(num_channels=3)), "inputs"),
    (op_model("SignalFilterBank", [T((1, 16), "uint32"), *[T((4,), "int16", data=[1] * 4)] * 5],
              [T((3,), "uint64")], custom_options=custom_options(num_channels=3)), "1 dimension"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_rejects_bad_models(model: bytes, match: str) -> None:
    with pytest.raises(PrepareError, match=match):
        Interpreter(model).allocate_tensors()
