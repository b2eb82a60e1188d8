"""The SVDF host port's resets by epoch (host/svdf.c, native.py's MN_BATCH_EPOCH): the batch loop of a model whose
every variable tensor is an SVDF's state bumps an epoch instead of calling init, and each SVDF call site takes its
first call of an epoch from init's zeros without reading the state, keeping the newest values aside until a later
call of the same epoch needs the state. Every mix of resets and streams (reset chunks, stream chunks, single
invokes, ``reset()``, clones), on lanes and on one lane, gives the bytes of the portable kernels' one-lane library
driven the same way, and the TFLM wheel's on a few samples."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_native_ports import _inputs
from test_native_ports_seq import _id, svdf

import micronn
from micronn.export.native import NativeModel, _svdf_epoch, with_host_ports
from micronn.lanes import twin_model
from micronn.testing import run_tflm
from micronn.tflite.reader import read
from micronn.tflite.writer import write

MODELS = Path(micronn.__file__).parent / "models"


def drive(m: NativeModel, xs: list[np.ndarray], sizes: tuple[int, ...]) -> list[bytes]:
    """Every output of a fixed mix of resets and streams over the samples ``xs`` (one array per input)."""
    at, got = 0, []

    def take(n: int) -> list[np.ndarray]:
        nonlocal at
        at += n
        return [x[at - n:at] for x in xs]

    def chunk(model: NativeModel, n: int, reset: bool) -> None:
        outs, done, status = model.run_chunk(take(n), reset=reset)
        assert (done, status) == (n, 0)
        got.extend(o.tobytes() for o in outs)

    def singles(model: NativeModel, n: int) -> None:
        for _ in range(n):
            got.extend(o.tobytes() for o in model.run([x[0] for x in take(1)]))

    a, b, c = sizes
    chunk(m, a, True)     # from the initial state each
    chunk(m, b, False)    # a stream on from what the last sample left
    singles(m, 2)         # on again, one invoke at a time
    chunk(m, c, True)
    singles(m, 3)         # straight after a reset chunk
    m.reset()
    chunk(m, b, False)    # a stream from the initial state
    m.reset()
    singles(m, 2)
    chunk(m, a, True)
    m.reset()             # straight after a reset chunk
    chunk(m, b, False)
    chunk(m, a, True)
    chunk(m, b, False)
    twin = m.clone()      # its own state: the initial one
    chunk(twin, c, False)
    chunk(twin, a, True)
    chunk(m, c, False)    # the original's stream, untouched by the clone's
    singles(twin, 2)
    chunk(twin, b, False)
    return got


SIZES = (17, 9, 35)  # drive's chunks: remainders of 3 and 16 lanes, and none of 1 (drive takes 236 samples)


def check(data: bytes, lanes: tuple[int, ...] = (1, 3, 16), seed: int = 0) -> None:
    model = read(data)
    xs = _inputs(data, 240, seed)
    want = drive(NativeModel(model, host_ports=False, lanes=1), xs, SIZES)
    for k in lanes:
        m = NativeModel(model, lanes=k)
        assert m.lanes == k
        got = drive(m, xs, SIZES)
        assert len(got) == len(want)
        assert got == want, (k, next(i for i, (g, w) in enumerate(zip(got, want)) if g != w))
    # the wheel on a few samples from the initial state
    outs, _, _ = NativeModel(model, lanes=lanes[-1]).run_chunk([x[:lanes[-1] + 1] for x in xs])
    for k in (0, 1, lanes[-1]):
        assert [w.tobytes() for w in run_tflm(data, [x[k] for x in xs])] == [o[k].tobytes() for o in outs], k


def check_twin(data: bytes, rows: int, seed: int = 1) -> None:
    """A twin as the library itself (batch rows > 1 in every mix, the stream after a reset chunk included)
    against the portable twin."""
    twin = twin_model(read(data), rows)
    xs = [x.reshape(-1, rows, *x.shape[2:]) for x in _inputs(data, 70 * rows, seed)]
    got = drive(NativeModel(twin, lanes=1), xs, (5, 3, 7))
    want = drive(NativeModel(twin, lanes=1, host_ports=False), xs, (5, 3, 7))
    assert got == want


CASES = [
    {"rank": 1, "filters": 64, "memory": 8, "n_input": 96, "in_zp": -128, "out_zp": -128},  # keyword's first
    {"rank": 1, "filters": 16, "memory": 1},
    {"rank": 1, "filters": 13, "memory": 2, "n_input": 9},
    {"rank": 2, "filters": 20, "memory": 8},
    {"rank": 2, "filters": 8, "memory": 32, "n_input": 5},
    {"rank": 1, "filters": 32, "memory": 32, "n_input": 32},
    {"rank": 2, "filters": 12, "memory": 5, "state_zp": 7},
    {"rank": 1, "filters": 24, "memory": 8, "state_zp": -300},
]


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_svdf_epoch(case: dict) -> None:
    data = svdf(**case, seed=len(case) + case["filters"])
    check(data)
    check_twin(data, 3)


def keyword_taps() -> bytes:
    """keyword_scrambled with every SVDF's output an output of the model too (its own output is the same softmax
    on every input: it would hide the state)."""
    model = read(MODELS / "keyword_scrambled.tflite")
    g = model.main
    g.outputs = [op.outputs[0] for op in g.operators if op.op == "SVDF"] + list(g.outputs)
    return write(model)


def test_keyword_scrambled() -> None:
    data = keyword_taps()
    check(data, lanes=(1, 16))
    check_twin(data, 2)


def test_epoch_chosen() -> None:
    """The epoch where every variable tensor is a ported SVDF's state; init per reset elsewhere."""
    for name, want in [("keyword_scrambled", True), ("trained_lstm_int8", False), ("hello_world_int8", False)]:
        m = NativeModel(MODELS / f"{name}.tflite", lanes=1)
        files = {k: v for k, v in m.program.files.items() if k.endswith((".c", ".h"))}
        assert _svdf_epoch(m.model, m.program.variables, with_host_ports(files)) is want, name
        assert _svdf_epoch(m.model, m.program.variables, files) is False, name  # host_ports=False
