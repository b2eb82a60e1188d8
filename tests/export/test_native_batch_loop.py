"""NativeModel.run_chunk's loop in C (native.batch_c): the header's constant sizes, no init call for a model
without state, inputs whose address comes through the buffer protocol or (read-only) ``x.ctypes``, empty chunks;
every sample's bytes as one invoke at a time."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import micronn
from micronn.export import NativeModel
from micronn.export.native import PREFIX, _stateless, batch_c

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


def test_chunks_the_loop_cannot_read_are_refused() -> None:
    """The C loop reads whole samples from each array's address: anything else is an InvokeError, not a read past
    the array's end."""
    import re

    import pytest

    from micronn.errors import InvokeError

    native = NativeModel(MODELS / "hello_world_int8.tflite")
    x = _samples(native, 4)[0]
    for bad, says in [([], "1 input"), ([x, x], "1 input"), ([np.zeros((4, 2), np.int8)], "int8[4, 2]"),
                      ([x.astype(np.int16)], "int16"),
                      ([x[::2]], "C-contiguous"), ([list(x)], "got list"), ([np.int8(3)], "got int8")]:
        with pytest.raises(InvokeError, match=re.escape(says)):
            native.run_chunk(bad)


def test_bound_inputs_are_read_in_place_and_put_back() -> None:
    """An input whose every reader has its address in an argument word is not copied in: the batch loop points those
    words at each sample (``{PREFIX}_bind_input``) and back at the arena afterwards, so a later single invoke reads
    what ``set_input`` wrote. An input read through a view of its bytes (no kernel call) is copied as before."""
    from micronn.testing import Graph, Op, T, graph_model

    native = NativeModel(MODELS / "hello_world_int8.tflite")
    assert native.program.bound_inputs == [0]
    assert f"{PREFIX}_bind_input(0, in[0]" in batch_c(1, 1, True, bound=native.program.bound_inputs)
    xs = _samples(native, 9, seed=2)
    outs, done, _ = native.run_chunk(xs)
    for k in (0, 8):  # one sample at a time through the arena, after the loop put the words back
        assert native.run([xs[0][k]])[0].tobytes() == outs[0][k].tobytes()
    again, _, _ = native.run_chunk([x[::-1].copy() for x in xs])
    assert again[0].tobytes() == outs[0][::-1].tobytes()

    tensors = {"x": T((1, 4, 3, 8), "int8", 0.5, 1), "b": T((4,), "int32", data=[0, 1, 0, 0]),
               "e": T((4,), "int32", data=[1, 3, 3, 8]), "s": T((4,), "int32", data=[1, 1, 1, 1]),
               "y": T((1, 2, 3, 8), "int8", 0.5, 1), "z": T((1, 2, 3, 8), "int8", 0.25, -3)}
    viewed = graph_model(Graph(tensors, [Op("STRIDED_SLICE", ["x", "b", "e", "s"], ["y"]), Op("RELU", ["y"], ["z"])],
                               ["x"], ["z"]))
    sliced = NativeModel(viewed)
    assert sliced.program.bound_inputs == [] and "mn_strided_slice(" not in sliced.program.files[f"{PREFIX}.c"]
    xs = [np.random.default_rng(3).integers(-128, 128, (5, 1, 4, 3, 8)).astype(np.int8)]
    outs, done, _ = sliced.run_chunk(xs)
    assert done == 5 and [sliced.run([x])[0].tobytes() for x in xs[0]] == [o.tobytes() for o in outs[0]]
