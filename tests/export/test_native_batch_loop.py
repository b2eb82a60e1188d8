"""NativeModel.run_chunk's loop in C (native.batch_c): the header's constant sizes, no init call for a model
without state, inputs whose address comes through the buffer protocol or (read-only) ``x.ctypes``, empty chunks;
every sample's bytes as one invoke at a time."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import micronn
from micronn.export import NativeModel
from micronn.export.native import PREFIX, _stateless

MODELS = Path(micronn.__file__).parent / "models"


def _samples(native: NativeModel, n: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(-128, 128, (n, *v.shape)).astype(v.dtype) for v in native.inputs]


def test_stateless_models_skip_init_and_state_is_reset() -> None:
    hello, kws = NativeModel(MODELS / "hello_world_int8.tflite"), NativeModel(MODELS / "keyword_scrambled.tflite")
    assert _stateless(hello.program.files[f"{PREFIX}.c"])
    assert not _stateless(kws.program.files[f"{PREFIX}.c"])
    for native in (hello, kws):
        xs = _samples(native, 5)
        outs, done, status = native.run_chunk(xs)
        assert (done, status) == (5, 0)
        for k in range(5):
            native.reset()
            got = native.run([x[k] for x in xs])
            assert [o[k].tobytes() for o in outs] == [g.tobytes() for g in got], k


def test_read_only_and_empty_chunks() -> None:
    native = NativeModel(MODELS / "hello_world_int8.tflite")
    xs = _samples(native, 7, seed=1)
    want, _, _ = native.run_chunk(xs)
    ro = [x.copy() for x in xs]
    for x in ro:
        x.flags.writeable = False
    got, done, status = native.run_chunk(ro)
    assert (done, status) == (7, 0) and [g.tobytes() for g in got] == [w.tobytes() for w in want]
    outs, done, status = native.run_chunk([x[:0] for x in xs])
    assert (done, status) == (0, 0) and [o.shape[0] for o in outs] == [0]
