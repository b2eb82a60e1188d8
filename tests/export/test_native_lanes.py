"""NativeModel's lanes: a model whose operators keep samples apart runs ``run_chunk`` as its twin, ``lanes``
samples per invoke, one per batch row (each from its own initial state). Every sample's bytes must be what one
invoke of the one-sample library gives, and the TFLM wheel's, on every bundled and test model that qualifies, with
lane counts that leave remainders and odd rows; models that do not qualify run one sample per invoke, and say
why."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

import micronn
from micronn.errors import MicronnError
from micronn.export import NativeModel
from micronn.export.native import LANE_OPS, lanes_reason
from micronn.lanes import rows_reason, twin_model
from micronn.testing import T, op_model, run_tflm
from micronn.tflite import schema
from micronn.tflite.reader import read
from micronn.tflite.writer import write

MODELS = Path(micronn.__file__).parent / "models"
EXTRA = Path(__file__).resolve().parents[1] / "models"
# every model that runs as lanes, but the three largest (their kernels are the same as person_detect's)
LANED = ["hello_world_int8", "hello_world_float", "keyword_scrambled", "micro_speech_quantized", "person_detect",
         "trained_lstm_int8", "anomaly_autoencoder_int8", "float_cnn", "kws_ds_cnn_int16x8", "lstm_float", "lstm_int8",
         "resnet_tiny_int8", "lstm_keras3_while_float"]


def _path(name: str) -> Path:
    return MODELS / f"{name}.tflite" if (MODELS / f"{name}.tflite").exists() else EXTRA / f"{name}.tflite"


def _samples(inputs: list[np.ndarray], n: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for v in inputs:
        if v.dtype.kind in "iu":
            info = np.iinfo(v.dtype)
            out.append(rng.integers(info.min, info.max, (n, *v.shape), endpoint=True).astype(v.dtype))
        else:
            out.append(rng.uniform(-1, 1, (n, *v.shape)).astype(v.dtype))
    return out


def _check(data: bytes, lanes: int, n: int, wheel: int, seed: int = 0) -> None:
    """``n`` samples on ``lanes`` lanes against the one-lane library, and the first ``wheel`` against TFLM."""
    one, many = NativeModel(read(data), lanes=1), NativeModel(read(data), lanes=lanes)
    assert many.lanes == lanes and many.why_one_lane is None
    xs = _samples(one.inputs, n, seed)
    want, done, status = one.run_chunk(xs)
    assert (done, status) == (n, 0)
    got, done, status = many.run_chunk(xs)
    assert (done, status) == (n, 0)
    assert [g.tobytes() for g in got] == [w.tobytes() for w in want]
    for k in range(wheel):
        tflm = run_tflm(data, [x[k] for x in xs])
        assert [t.tobytes() for t in tflm] == [g[k].tobytes() for g in got], k


@pytest.mark.parametrize("name", LANED)
def test_models_on_lanes_are_the_one_sample_bytes(name: str) -> None:
    data = _path(name).read_bytes()
    assert lanes_reason(read(data)) is None
    _check(data, 3, 3 * 2 + 2, wheel=3)  # two groups and a remainder of two


@pytest.mark.parametrize("name", ["hello_world_int8", "keyword_scrambled", "trained_lstm_int8", "lstm_float",
                                  "lstm_keras3_while_float"])
def test_wide_lanes_and_the_default(name: str) -> None:
    data = _path(name).read_bytes()
    _check(data, 17, 17 * 2 + 5, wheel=2, seed=1)
    native = NativeModel(read(data))
    assert 1 < native.lanes <= 64  # small models: several lanes by default
    xs = _samples(native.inputs, 3 * native.lanes + 1, seed=2)
    got, done, _ = native.run_chunk(xs)
    want, _, _ = NativeModel(read(data), lanes=1).run_chunk(xs)
    assert done == len(xs[0]) and [g.tobytes() for g in got] == [w.tobytes() for w in want]
    # a stream carries state from sample to sample: never on lanes
    native.reset()
    got, done, _ = native.run_chunk(xs, reset=False)
    one = NativeModel(read(data), lanes=1)
    want, _, _ = one.run_chunk(xs, reset=False)
    assert [g.tobytes() for g in got] == [w.tobytes() for w in want]
    clone = native.clone()
    assert clone.lanes == native.lanes and [c.tobytes() for c in clone.run_chunk(xs)[0]] == \
        [w.tobytes() for w in NativeModel(read(data), lanes=1).run_chunk(xs)[0]]


def _relu6(dtype: str) -> bytes:
    q = dict(scale=0.05, zero_point=3) if dtype == "int8" else {}
    return op_model("RELU6", [T((1, 5, 7), dtype, **q)], [T((1, 5, 7), dtype, **q)])


SYNTHETIC = {  # the lane operators no bundled or test model has, as one-operator models
    "CONCATENATION": lambda: op_model("CONCATENATION", [T((1, 3, 5), "int8", 0.1, 2), T((1, 3, 2), "int8", 0.1, 2)],
                                      [T((1, 3, 7), "int8", 0.1, 2)], schema.options("CONCATENATION", axis=-1)),
    "LOGISTIC": lambda: op_model("LOGISTIC", [T((1, 11), "int8", 0.08, -3)], [T((1, 11), "int8", 1 / 256, -128)]),
    "RELU": lambda: op_model("RELU", [T((1, 2, 6), "int8", 0.2, -7)], [T((1, 2, 6), "int8", 0.1, -128)]),
    "RELU6": lambda: _relu6("int8"),
    "SUB": lambda: op_model("SUB", [T((1, 2, 5), "float32"), T((5,), "float32", data=np.linspace(-2, 3, 5))],
                            [T((1, 2, 5), "float32")]),  # a constant broadcast across the samples
    "SPLIT_V": lambda: op_model("SPLIT_V", [T((1, 3, 6), "int8", 0.1, 1), T((2,), "int32", data=[2, 4]),
                                            T((), "int32", data=-1)],
                                [T((1, 3, 2), "int8", 0.1, 1), T((1, 3, 4), "int8", 0.1, 1)],
                                schema.options("SPLIT_V", num_splits=2)),
    "TRANSPOSE": lambda: op_model("TRANSPOSE", [T((1, 3, 4), "int8", 0.1, 1), T((3,), "int32", data=[0, 2, 1])],
                                  [T((1, 4, 3), "int8", 0.1, 1)]),
}


@pytest.mark.parametrize("op", sorted(SYNTHETIC))
def test_one_operator_models_on_lanes(op: str) -> None:
    _check(SYNTHETIC[op](), 4, 11, wheel=2, seed=3)


def test_every_lane_operator_is_checked() -> None:
    seen = {op for name in LANED for op in read(_path(name).read_bytes()).op_names()}
    assert LANE_OPS <= seen | set(SYNTHETIC) | {"MEAN", "PAD", "ADD"}  # mobilenet_v2's: test_mobilenet_v2_lanes


def test_mobilenet_v2_lanes() -> None:
    _check(_path("mobilenet_v2_pad_int8").read_bytes(), 2, 3, wheel=1)


def test_why_one_lane() -> None:
    def why(name: str) -> str | None:
        return lanes_reason(read(_path(name).read_bytes()))
    assert "SignalWindow" in why("audio_preprocessor_int8")  # its signal chain is not known to keep samples apart
    assert "TRANSPOSE_CONV" in why("unet_wide_int8")
    native = NativeModel(_path("audio_preprocessor_int8"), lanes=8)
    assert native.lanes == 1 and "SignalWindow" in native.why_one_lane
    # rows_reason with its default operators (the rows of ROW_OPS): no state rows there
    assert "variable" in rows_reason(read(_path("keyword_scrambled").read_bytes()))
    assert "WHILE" in rows_reason(read(_path("lstm_keras3_while_float").read_bytes()))
    with pytest.raises(MicronnError, match="lanes"):
        NativeModel(_path("hello_world_int8"), lanes=0)


def _state_model(**state: object) -> bytes:
    """An SVDF whose state is shared with a second reader, or has an initial value: not lanes."""
    q = dict(scale=0.1, zero_point=0)
    x = T((1, 4), "int8", **q)
    wf, wt = T((2, 4), "int8", 0.1, 0, data=np.ones((2, 4))), T((2, 3), "int16", 0.1, 0, data=np.ones((2, 3)))
    s = T((1, 6), "int16", 0.1, 0, variable=True, **state)
    return op_model("SVDF", [x, wf, wt, None, s], [T((1, 2), "int8", **q)], schema.options("SVDF", rank=1))


def test_state_with_an_initial_value_is_one_lane() -> None:
    assert lanes_reason(read(_state_model())) is None
    assert "initial value" in lanes_reason(read(_state_model(data=np.ones((1, 6)))))


def test_time_major_lstm_is_one_lane() -> None:
    model = read(_path("lstm_int8").read_bytes())
    lstm = next(op for op in model.main.operators if op.op == "UNIDIRECTIONAL_SEQUENCE_LSTM")
    lstm.options = dataclasses.replace(lstm.options, time_major=True)
    assert "time-major" in lanes_reason(model)


def test_twin_keeps_constants_and_intermediates() -> None:
    model = read(_path("lstm_int8").read_bytes())
    twin = twin_model(model, 4)
    for a, b in zip(model.main.tensors, twin.main.tensors):
        assert b.shape == (a.shape if a.is_constant or a.shape == (0,) else (4, *a.shape[1:])), a.name


def test_a_failing_group_names_its_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    """A lanes invoke that reports a failure is rerun one sample at a time: the first failing sample and its
    status come back (kernels that can fail are not lane operators today, so the failure is simulated)."""
    native = NativeModel(_path("hello_world_int8"), lanes=4)
    xs = _samples(native.inputs, 10, seed=4)
    wide = native._wide_model()
    monkeypatch.setattr(wide, "_run_into", lambda chunk, outs, n, reset: (1, 7))  # group 1 (samples 4-7) fails
    single = native._run_into

    def one_by_one(chunk, outs, n, reset):  # sample 6 fails alone too, with its own status
        done, status = single(chunk, outs, min(n, 2), reset)
        return (2, 9) if n > 2 else (done, status)
    monkeypatch.setattr(native, "_run_into", one_by_one)
    _, done, status = native.run_chunk(xs)
    assert (done, status) == (6, 9)
    monkeypatch.setattr(native, "_run_into", single)  # alone, every sample of the group passes: the group's status
    _, done, status = native.run_chunk(xs)
    assert (done, status) == (4, 7)


def test_keras_lstm_loop_twin() -> None:
    """The Keras 3 LSTM's loop runs once for every sample of its twin: its time-major RESHAPE a TRANSPOSE, the
    counters and the condition as they are, the zero starting states repeated, each body tensor with a sample axis
    where the sample lies (the transposed input's second axis, a gathered step's first)."""
    model = read(_path("lstm_keras3_while_float").read_bytes())
    twin = twin_model(model, 5)
    main, cond, body = twin.subgraphs
    first, loop = main.operators[0], main.operators[1]
    assert first.op == "TRANSPOSE" and main.tensors[first.inputs[1]].data.tolist() == [1, 0, 2]
    assert [main.tensors[t].shape for t in loop.outputs] == [(), (), (1, 5, 20), (5, 20), (5, 20), (28, 5, 28)]
    assert loop.inputs[:2] == model.main.operators[1].inputs[:2]  # the counters: one for every sample
    for t, out in zip(loop.inputs[2:5], loop.outputs[2:5]):  # as many bytes as the state they start
        assert main.tensors[t].is_constant and main.tensors[t].nbytes == main.tensors[out].nbytes == 5 * 20 * 4
        assert not main.tensors[t].data.any()
    assert cond.tensors == model.subgraphs[1].tensors[:2] + cond.tensors[2:] and cond.operators == \
        model.subgraphs[1].operators
    gather = next(op for op in body.operators if op.op == "GATHER")
    assert body.tensors[gather.outputs[0]].shape == (5, 28)
    split = next(op for op in body.operators if op.op == "SPLIT")
    assert [body.tensors[t].shape for t in split.outputs] == [(5, 20)] * 4


def test_a_loop_whose_condition_reads_a_sample_is_one_lane() -> None:
    model = read(_path("lstm_keras3_while_float").read_bytes())
    model.subgraphs[1].outputs[0] = 5  # the condition is now the sequence's first byte
    assert "condition that depends on the sample" in lanes_reason(model)
    model = read(_path("lstm_keras3_while_float").read_bytes())
    body = model.subgraphs[2]
    body.outputs[3] = 4  # the hidden state now comes back as the body got it: still a sample's
    assert lanes_reason(model) is None
    body.outputs[5] = body.outputs[0]  # a counter for the sequence: every sample's the same after a step
    assert "loop state 5 the same for every sample" in lanes_reason(model)


@pytest.mark.parametrize("body", [0, 1, 7])
def test_a_loop_calling_no_subgraph_of_its_own_is_one_lane(body: int) -> None:
    """The main subgraph, the loop's condition, a subgraph that is not there: refused, never a crash."""
    model = read(_path("lstm_keras3_while_float").read_bytes())
    loop = model.main.operators[1]
    loop.options = dataclasses.replace(loop.options, body_subgraph_index=body)
    assert "subgraph" in lanes_reason(model) or "condition or body" in lanes_reason(model)


def test_a_loop_started_from_other_constants() -> None:
    """Starting states other than zeros, repeated for each sample in the layout of the state they start: the
    hidden and cell state's (one tensor in this model) a row per sample, the output sequence's a slice apart."""
    model = read(_path("lstm_keras3_while_float").read_bytes())
    rng = np.random.default_rng(5)
    main = model.main
    for t in main.operators[1].inputs[2:5]:
        main.tensors[t] = dataclasses.replace(main.tensors[t], data=rng.uniform(-1, 1, main.tensors[t].shape)
                                              .astype(np.float32))
    _check(write(model), 3, 7, wheel=2, seed=6)


@pytest.mark.parametrize("subgraph,op,keep,why", [(2, "GATHER", 1, "too few inputs"),
                                                   (0, "STRIDED_SLICE", 3, "too few inputs"),
                                                   (2, "SPLIT", 1, "the same for every sample")])  # no data left
def test_an_operator_short_of_inputs_is_one_lane(subgraph: int, op: str, keep: int, why: str) -> None:
    """A model cut short (an operator without the inputs its rule reads): a reason, never an IndexError."""
    model = read(_path("lstm_keras3_while_float").read_bytes())
    node = next(o for o in model.subgraphs[subgraph].operators if o.op == op)
    node.inputs = node.inputs[:keep]
    assert why in lanes_reason(model)
