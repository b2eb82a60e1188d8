"""The native batched path: ``simulate``/``evaluate`` on the exported C compiled for the host give, byte for byte, the
numpy reference's outputs (and the TFLM wheel's), per sample from the initial state or as a stream, on any number
of worker threads; "auto" falls back to numpy where the native path could differ or cannot build."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import model_bytes
from test_batch import EXTRA, random_samples, same_bytes, single_invokes

from micronn import Interpreter
from micronn.errors import InvokeError, MicronnError, UnsupportedError
from micronn.export import NativeModel
from micronn.simulate import evaluate, simulate
from micronn.simulate.batch import Engine, native_reason
from micronn.testing import T, op_model, run_tflm
from micronn.tflite.reader import read

# stateful (SVDF, LSTM), float, int16 and int8 convolutional models, bundled and from tests/models
NATIVE = ["keyword_scrambled", "trained_lstm_int8", "hello_world_float", "micro_speech_quantized",
          "lstm_int8", "lstm_float", "float_cnn", "anomaly_autoencoder_int8", "resnet_tiny_int8"]


def data_of(name: str) -> bytes:
    p = EXTRA / f"{name}.tflite"
    return p.read_bytes() if p.exists() else model_bytes(name)


def stacked(samples: list[list[np.ndarray]]) -> tuple[np.ndarray, ...]:
    return tuple(np.stack(col) for col in zip(*samples))


@pytest.mark.parametrize("name", NATIVE)
def test_native_is_the_numpy_path_per_sample_and_streamed(name: str) -> None:
    data = data_of(name)
    assert Engine(data).native is not None, Engine(data).why_numpy  # auto picks native for these
    samples = random_samples(data, 7, seed=11)
    for stream in (False, True):
        expected = single_invokes(data, samples, reset=not stream)
        assert same_bytes(simulate(data, stacked(samples), backend="numpy", stream=stream, batch=3), expected)
        for workers in (1, 2):
            got = simulate(data, stacked(samples), backend="native", stream=stream, batch=3, workers=workers)
            assert same_bytes(got, expected), (name, stream, workers)


@pytest.mark.parametrize("name", ["keyword_scrambled", "trained_lstm_int8", "float_cnn", "person_detect"])
def test_native_matches_the_tflm_wheel(name: str) -> None:
    data = data_of(name)
    samples = random_samples(data, 3, seed=13)
    got = simulate(data, stacked(samples), backend="native")
    for k, s in enumerate(samples):  # run_tflm: a fresh wheel interpreter per sample, from the initial state
        assert [g[k].tobytes() for g in got] == [w.tobytes() for w in run_tflm(data, s)], (name, k)


def test_native_model_invoke_batch_is_the_interpreters() -> None:
    data = model_bytes("keyword_scrambled")  # SVDF state: resets between samples unless streamed
    samples = random_samples(data, 5, seed=2)
    native, it = NativeModel(data), Interpreter(data)
    for stream in (False, True, True):  # a stream goes on across calls in both
        assert same_bytes(native.invoke_batch([s[0] for s in samples], stream=stream),
                          it.invoke_batch([s[0] for s in samples], stream=stream)), stream
    empty = native.invoke_batch(np.zeros((0, 1, 96), np.int16))
    assert empty[0].shape == (0, 1, 2)
    with pytest.raises(InvokeError, match="sample 1"):
        native.invoke_batch([samples[0][0], samples[0][0].astype(np.int8)])
    other = native.clone()  # its own arena and state, the same library
    assert same_bytes(other.invoke_batch(stacked(samples)), it.invoke_batch(stacked(samples)))


def test_big_endian_samples_are_converted() -> None:
    data = model_bytes("keyword_scrambled")
    x = stacked(random_samples(data, 3, seed=3))[0]
    assert same_bytes(simulate(data, x.astype(">i2"), backend="native"), simulate(data, x, backend="numpy"))


def test_many_chunks_on_two_threads_keep_their_order() -> None:
    data = model_bytes("hello_world_int8")
    x = np.arange(-128, 128, dtype=np.int8).reshape(256, 1, 1)
    want = simulate(data, x, backend="numpy")
    for batch in (1, 7, 300):
        assert same_bytes(simulate(data, x, backend="native", batch=batch, workers=2), want), batch
    with pytest.raises(MicronnError, match="workers must be"):
        simulate(data, x, workers=0)


def test_backend_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    while_model = (EXTRA / "lstm_keras3_while_float.tflite").read_bytes()
    assert Engine(while_model).native is not None  # WHILE and GATHER have C kernels (a bad position: a status)
    div = op_model("DIV", [T((1, 4), "int32"), T((1, 4), "int32")], [T((1, 4), "int32")])
    auto = Engine(div)
    assert auto.native is None and "DIV" in auto.why_numpy  # a computed divisor may be 0: the reference refuses
    assert Engine(model_bytes("person_detect"), backend="numpy").native is None
    with pytest.raises(MicronnError, match="backend is one of"):
        simulate(model_bytes("hello_world_int8"), np.zeros((1, 1, 1), np.int8), backend="fast")

    def no_kernel(model):
        raise UnsupportedError([("NO_SUCH_OP", "int8")])

    import micronn.export.native

    monkeypatch.setattr(micronn.export.native, "NativeModel", no_kernel)
    data = model_bytes("hello_world_int8")
    fallback = Engine(data)  # auto: the numpy path, saying why
    assert fallback.native is None and "NO_SUCH_OP" in fallback.why_numpy
    x = np.arange(-5, 5, dtype=np.int8).reshape(10, 1, 1)
    assert same_bytes(simulate(data, x), single_invokes(data, [[v] for v in x]))
    with pytest.raises(UnsupportedError, match="NO_SUCH_OP"):
        Engine(data, backend="native")


def div_model() -> bytes:
    t = dict(dtype="int32")
    return op_model("DIV", [T((1, 4), **t), T((1, 4), **t)], [T((1, 4), **t)])


def test_auto_keeps_models_that_can_refuse_a_value_on_numpy() -> None:
    """DIV's reference fails the invoke on a zero divisor, its C kernel writes 0: auto keeps the error."""
    data = div_model()
    assert "DIV" in native_reason(read(data))
    assert Engine(data).native is None
    a = np.ones((3, 1, 4), np.int32)
    b = np.ones((3, 1, 4), np.int32)
    b[1, 0, 2] = 0
    with pytest.raises(InvokeError, match="sample 1:.*division by zero"):
        simulate(data, (a, b))
    assert native_reason(read(model_bytes("person_detect"))) is None  # a 2-class SOFTMAX cannot refuse
    assert "computed shift" in native_reason(read(model_bytes("audio_preprocessor_int8")))
    # a constant divisor without 0 or -1 cannot refuse: the native path serves
    assert native_reason(read(op_model("DIV", [T((1, 4), "int32"), T((1, 4), "int32", data=[3, -2, 7, 1])],
                                       [T((1, 4), "int32")]))) is None


def test_a_failing_native_invoke_is_named_with_the_references_message(monkeypatch: pytest.MonkeyPatch) -> None:
    """A non-zero status from the C invoke stops the chunk; the sample is rerun on the numpy path for its own
    error, else the status is reported, either way naming the sample in the whole run."""
    data = div_model()
    engine = Engine(data, backend="native")
    real = engine.native.run_chunk

    def stop_at_one(chunk, reset=True):
        outs, _, _ = real(chunk, reset=reset)
        return outs, 1, 7

    monkeypatch.setattr(engine.native, "run_chunk", stop_at_one)
    a = np.ones((3, 1, 4), np.int32)
    b = np.ones((3, 1, 4), np.int32)
    with pytest.raises(InvokeError, match="sample 11: the native invoke failed: .*status 7"):
        engine.run([a, b], first=10)
    b[1, 0, 0] = 0
    with pytest.raises(InvokeError, match="sample 11:.*division by zero"):
        engine.run([a, b], first=10)


def test_evaluate_is_the_same_on_every_backend(tmp_path: Path) -> None:
    data = model_bytes("person_detect")
    x = np.random.default_rng(5).integers(-128, 128, (20, 96, 96, 1), dtype=np.int8)
    labels = np.arange(20) % 2
    ref = evaluate(data, x, labels, progress=False, backend="numpy", batch=8)
    for workers in (1, 2):
        ev = evaluate(data, x, labels, progress=False, backend="native", batch=8, workers=workers)
        assert ev.scores.tobytes() == ref.scores.tobytes() and ev.to_dict()["confusion"] == ref.to_dict()["confusion"]
