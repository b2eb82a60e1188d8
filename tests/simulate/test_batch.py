"""Batched execution: ``Interpreter.invoke_batch`` and ``simulate`` give, byte for byte, what one invoke per sample
gives; state is reset between samples unless streamed; inputs are checked sample by sample; chunks are lazy."""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path

import numpy as np
import pytest
from conftest import model_bytes

from micronn import Interpreter
from micronn.errors import InvokeError, MicronnError
from micronn.interpreter import input_chunks
from micronn.simulate import simulate
from micronn.simulate.batch import TWIN, Engine, twin_reason
from micronn.testing import T, op_model, run_tflm
from micronn.tflite.reader import read

MODELS = Path(__file__).resolve().parents[2] / "micronn" / "models"
EXTRA = Path(__file__).resolve().parents[1] / "models"
ALL = sorted(MODELS.glob("*.tflite")) + sorted(EXTRA.glob("*.tflite"))


def random_samples(model: bytes, n: int, seed: int = 0) -> list[list[np.ndarray]]:
    """``n`` samples of random values over each input's whole range (floats in [-1, 1))."""
    m = read(model)
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        sample = []
        for i in m.main.inputs:
            t = m.main.tensors[i]
            if t.dtype.kind in "iu":
                info = np.iinfo(t.dtype)
                sample.append(rng.integers(info.min, info.max, t.shape, dtype=t.dtype, endpoint=True))
            else:
                sample.append(rng.uniform(-1, 1, t.shape).astype(t.dtype))
        out.append(sample)
    return out


def single_invokes(model: bytes, samples: list[list[np.ndarray]], reset: bool = True) -> list[np.ndarray]:
    """The reference: one set_input + invoke per sample (reset before each unless streaming), outputs stacked."""
    it = Interpreter(model)
    it.allocate_tensors()
    outs: list[list[np.ndarray]] = [[] for _ in it.subgraph.outputs]
    for sample in samples:
        if reset:
            it.reset()
        for i, x in enumerate(sample):
            it.set_input(x, i)
        it.invoke()
        for j, o in enumerate(outs):
            o.append(it.get_output(j))
    return [np.stack(o) for o in outs]


def same_bytes(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    return len(a) == len(b) and all(x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
                                    for x, y in zip(a, b))


def test_invoke_batch_is_single_invokes_in_every_input_form() -> None:
    data = model_bytes("person_detect")
    samples = random_samples(data, 5)
    expected = single_invokes(data, samples)
    it = Interpreter(data)
    stacked = np.stack([s[0] for s in samples])  # (5, 1, 96, 96, 1)
    for form in (stacked, stacked.reshape(5, 96, 96, 1), (stacked,), [s[0] for s in samples],
                 iter([s[0][0] for s in samples]), [tuple(s) for s in samples]):
        assert same_bytes(it.invoke_batch(form), expected)
    assert it.invoke_batch(np.zeros((0, 96, 96, 1), np.int8))[0].shape == (0, 1, 2)


def test_person_detect_batch_matches_the_tflm_wheel() -> None:
    data = model_bytes("person_detect")
    samples = random_samples(data, 3, seed=7)
    ours = simulate(data, [s[0] for s in samples], twin=True)
    for k, s in enumerate(samples):
        assert ours[0][k].tobytes() == run_tflm(data, s)[0].tobytes()


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.stem)
def test_twin_is_byte_identical_to_single_invokes(path: Path) -> None:
    """Every model the twin accepts, with more samples than one twin invoke holds (the last group is padded)."""
    data = path.read_bytes()
    if twin_reason(read(data)) is not None:
        pytest.skip(f"runs one invoke per sample: {twin_reason(read(data))}")
    samples = random_samples(data, TWIN + 3, seed=1)
    expected = single_invokes(data, samples)
    got = simulate(data, [tuple(s) for s in samples], batch=TWIN + 3, backend="numpy")
    assert same_bytes(got, expected)
    assert same_bytes(simulate(data, [tuple(s) for s in samples], batch=5, twin=False, backend="numpy"), expected)


def test_twin_keeps_a_nan_sample_to_itself() -> None:
    """A NaN in one sample switches float kernels to their exact path for the whole twin invoke: the other samples
    still get their own single-invoke bytes."""
    data = (EXTRA / "float_cnn.tflite").read_bytes()
    samples = random_samples(data, TWIN, seed=2)
    samples[3][0].flat[5] = np.nan
    samples[9][0].flat[0] = np.inf
    expected = single_invokes(data, samples)
    for backend in ("numpy", "native"):
        assert same_bytes(simulate(data, [tuple(s) for s in samples], backend=backend), expected), backend


def test_models_the_twin_refuses() -> None:
    assert twin_reason(read(model_bytes("keyword_scrambled"))) is None  # SVDF state: a row per sample, reset
    assert twin_reason(read((EXTRA / "lstm_keras3_while_float.tflite").read_bytes())) is None  # a loop for all
    assert "TRANSPOSE_CONV" in twin_reason(read(model_bytes("tiny_unet_static")))
    assert twin_reason(read(model_bytes("person_detect"))) is None
    model = read(model_bytes("keyword_scrambled"))  # a state that starts from values of its own: one sample's
    state = next(t for t in model.main.tensors if t.is_variable)
    model.main.tensors[state.index] = dataclasses.replace(state, data=np.ones(state.shape, state.dtype))
    assert "initial value" in twin_reason(model)
    assert Engine(model_bytes("tiny_unet_static")).why_single is not None


def test_twin_rows_start_from_the_initial_state() -> None:
    """The LSTM's state rows go back to the initial state before every twin invoke: each group of samples gives
    what single invokes give, never the previous group's state."""
    data = model_bytes("trained_lstm_int8")
    samples = random_samples(data, 2 * TWIN + 3, seed=4)
    got = simulate(data, [tuple(s) for s in samples], backend="numpy")
    assert same_bytes(got, single_invokes(data, samples))


def add_model(constant: bool = False) -> bytes:
    q = dict(scale=0.5, zero_point=0)
    b = T((1, 4), "int8", data=[1, 2, 3, 4], **q) if constant else T((1, 4), "int8", **q)
    return op_model("ADD", [T((1, 4), "int8", **q), b], [T((1, 4), "int8", **q)])


def test_two_inputs_stacked_or_per_sample() -> None:
    data = add_model()
    assert twin_reason(read(data)) is None
    rng = np.random.default_rng(4)
    a = rng.integers(-128, 128, (TWIN + 1, 1, 4), dtype=np.int8)
    b = rng.integers(-128, 128, (TWIN + 1, 4), dtype=np.int8)
    expected = single_invokes(data, [[x, y.reshape(1, 4)] for x, y in zip(a, b)])
    assert same_bytes(simulate(data, (a, b)), expected)
    assert same_bytes(simulate(data, [[x, y] for x, y in zip(a, b)], batch=4), expected)
    assert same_bytes(Interpreter(data).invoke_batch((a, b)), expected)
    with pytest.raises(InvokeError, match="2 input"):
        simulate(data, (a,))
    with pytest.raises(InvokeError, match="different numbers of samples"):
        simulate(data, (a, b[:3]))
    with pytest.raises(InvokeError, match="sample 2: the model has 2 input"):
        simulate(data, [[x, y] for x, y in zip(a, b)][:2] + [[a[0]]])
    data = add_model(constant=True)  # the constant broadcasts across the twin's samples
    assert twin_reason(read(data)) is None
    assert same_bytes(simulate(data, (a,)), single_invokes(data, [[x] for x in a]))


def test_bad_samples_are_named() -> None:
    data = model_bytes("person_detect")
    good = np.zeros((1, 96, 96, 1), np.int8)
    with pytest.raises(InvokeError, match=r"sample 3, input 0 \('input'\) expects int8\[1, 96, 96, 1\], got "
                                          r"float32\[1, 96, 96, 1\]"):
        simulate(data, [good] * 3 + [good.astype(np.float32)] + [good] * 40, batch=2)
    with pytest.raises(InvokeError, match=r"sample 1, input 0 .* got int8\[96, 95, 1\]"):
        Interpreter(data).invoke_batch([good, good[0, :, :95]])
    with pytest.raises(InvokeError, match=r"stacked along a new first axis, got uint8\[4, 96, 96, 1\]"):
        simulate(data, np.zeros((4, 96, 96, 1), np.uint8))
    with pytest.raises(InvokeError, match="not an array"):
        Interpreter(data).invoke_batch([[[1], [2, 3]]])
    with pytest.raises(InvokeError, match="iterable of samples, not int"):
        simulate(data, 5)
    with pytest.raises(MicronnError, match="batch must be a positive"):
        simulate(data, [good], batch=0)


@pytest.mark.parametrize("name", ["trained_lstm_int8", "lstm_float"])
def test_state_resets_between_samples_unless_streamed(name: str) -> None:
    """LSTMs keep their state in variable tensors: each sample alone starts from the initial state; a stream
    carries it from sample to sample (and gives different outputs, so the test can tell them apart)."""
    path = MODELS / f"{name}.tflite"
    data = (path if path.exists() else EXTRA / f"{name}.tflite").read_bytes()
    samples = random_samples(data, 6, seed=3)
    fresh = single_invokes(data, samples, reset=True)
    streamed = single_invokes(data, samples, reset=False)
    assert not same_bytes(fresh, streamed)
    assert same_bytes(simulate(data, [s[0] for s in samples], batch=4), fresh)
    assert same_bytes(simulate(data, [s[0] for s in samples], batch=4, stream=True), streamed)
    it = Interpreter(data)
    first = it.invoke_batch([s[0] for s in samples[:3]], stream=True)
    rest = it.invoke_batch([s[0] for s in samples[3:]], stream=True)  # a stream goes on across calls
    assert same_bytes([np.concatenate([first[0], rest[0]])], streamed)


def test_svdf_state_per_sample() -> None:
    data = model_bytes("keyword_scrambled")
    samples = random_samples(data, 3, seed=5)
    assert same_bytes(simulate(data, [s[0] for s in samples]), single_invokes(data, samples))


def test_chunks_are_read_lazily() -> None:
    """An endless iterable still yields its first chunk: only ``size`` samples are taken at a time."""
    t = read(model_bytes("hello_world_int8")).main
    tensors = [t.tensors[t.inputs[0]]]
    pulled = []

    def endless():
        for k in itertools.count():
            pulled.append(k)
            yield np.array([[k % 100]], np.int8)

    first = next(input_chunks(endless(), tensors, 8))
    assert first[0].shape == (8, 1, 1) and len(pulled) == 8
    stacked = np.arange(10, dtype=np.int8).reshape(10, 1)
    parts = list(input_chunks(stacked, tensors, 4))
    assert [p[0].shape[0] for p in parts] == [4, 4, 2] and np.shares_memory(parts[0][0], stacked)
