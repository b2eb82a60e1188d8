"""SignalFftAutoScale against the TFLM wheel, byte for byte: every peak bit length, all zeros, -32768 (whose int16
magnitude wraps), ignored options; bad models are refused."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import PrepareError, UnsupportedError
from micronn.kernels._custom_options import custom_options
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_tflm


def scale_model(n: int, out_n: int | None = None, dtype: str = "int16", scale: T | None = None,
                options: bytes | None = None) -> bytes:
    return op_model("SignalFftAutoScale", [T((n,), dtype)], [T((out_n or n,), dtype), scale or T((), "int32")],
                    custom_options=options)


@pytest.mark.parametrize("n", [1, 7, 480, 512])
def test_matches_tflm(n: int) -> None:
    """Random frames shrunk to every peak bit length, so every shift 0..15 is used."""
    model = scale_model(n)
    rng = np.random.default_rng(n)
    for bits in range(17):
        x = (rng.integers(-32768, 32768, n) >> (16 - bits)).astype(np.int16) if bits else np.zeros(n, np.int16)
        assert_same_as_tflm(model, [x])
    assert_same_as_tflm(model, runs=2)


@pytest.mark.parametrize("values", [
    [0, 0, 0], [-32768], [-32768, 0], [-32768, -32768], [-32768, 1, -1], [-32768, 32767], [-1, 0, 0],
    [255, -3], [256, 2], [-257, 0], [16383, 1], [16384, -1], [-16384, 7], [-16385, 0], [32767, -32767],
], ids=str)
def test_edge_values(values: list) -> None:
    assert_same_as_tflm(scale_model(len(values)), [np.array(values, np.int16)])


@pytest.mark.parametrize("values", [
    [20000, -32768, 50], [20000, -32768, -100, -50], [-5, -32768, -7, 3], [100, -32768, -32768, -3],
    [300, -32768, -1000, -2000, -5], [300, -32768, -1000, -900, -800, 20], [7, -32768], [-32768, -32767, 1],
], ids=str)
def test_a_late_minus_32768_restarts_the_peak(values: list) -> None:
    """TFLM's running int16 peak wraps to -32768 there: what came before is forgotten, and negative samples after it
    walk the peak up from below."""
    assert_same_as_tflm(scale_model(len(values)), [np.array(values, np.int16)])


@pytest.mark.parametrize("seed", range(4))
def test_frames_with_many_minus_32768(seed: int) -> None:
    """Random frames of every magnitude where -32768 is frequent, and runs of negative samples after the last one."""
    rng = np.random.default_rng(seed)
    model = scale_model(64)
    for _ in range(40):
        x = (rng.integers(-32768, 32768, 64) >> rng.integers(0, 16)).astype(np.int16)
        x[rng.random(64) < rng.choice([0.01, 0.05, 0.3])] = -32768
        last = np.flatnonzero(x == -32768)
        if last.size and rng.random() < 0.7:  # a run of negatives after the last -32768, rising or not
            run = -rng.integers(1, 32768, int(rng.integers(1, 12)))
            run = np.sort(run) if rng.random() < 0.5 else run
            x[last[-1] + 1:last[-1] + 1 + len(run)] = run[:63 - last[-1]]
        assert_same_as_tflm(model, [x])


def test_options_are_ignored() -> None:
    x = np.array([100, -4, 5, 6], np.int16)
    for options in (None, custom_options(), custom_options(anything=3)):
        assert_same_as_tflm(scale_model(4, options=options), [x])


def test_empty_frame() -> None:
    assert_same_as_tflm(scale_model(0), [np.zeros(0, np.int16)])


@pytest.mark.parametrize("dtype", ["int8", "int32", "float32"])
def test_unsupported_types(dtype: str) -> None:
    model = scale_model(4, dtype=dtype)
    with pytest.raises(TflmError):
        run_tflm(model, [np.zeros(4, dtype)])
    with pytest.raises(UnsupportedError):
        Interpreter(model)


@pytest.mark.parametrize("model,match", [
    (scale_model(4, out_n=5), "elements"),  # TFLM loops over the output, reading past the input
    (scale_model(4, out_n=3), "elements"),
    (scale_model(4, scale=T((), "int16")), "int32"),
    (scale_model(4, scale=T((1,), "int32")), "0 dimensions"),
    (op_model("SignalFftAutoScale", [T((2, 2), "int16")], [T((2, 2), "int16"), T((), "int32")]), "1 dimension"),
    (op_model("SignalFftAutoScale", [T((4,), "int16")], [T((2, 2), "int16"), T((), "int32")]), "1 dimension"),
    (op_model("SignalFftAutoScale", [T((4,), "int16")], [T((4,), "int16")]), "outputs"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_rejects_bad_models(model: bytes, match: str) -> None:
    with pytest.raises(PrepareError, match=match):
        Interpreter(model).allocate_tensors()


def test_audio_preprocessor_frame_with_a_late_minus_32768() -> None:
    """A -32768 that survives the window (weight 4096 at sample 238) after a louder sample changes the features."""
    from micronn.export import NativeModel
    from micronn.models import bundled_model
    from micronn.testing import _Tflm

    model = bundled_model("audio_preprocessor_int8")
    x = np.zeros((1, 480), np.int16)
    x[0, [100, 238, 300]] = [20000, -32768, 50]
    it = Interpreter(model)
    it.set_input(x, 0)
    it.invoke()
    want = _Tflm(model).run([x])[0]
    assert it.get_output(0).tobytes() == want.tobytes()
    assert NativeModel(model).run([x])[0].tobytes() == want.tobytes()
