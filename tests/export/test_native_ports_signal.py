"""The host port of SignalRfft (int16: radix-2/4 stages of span 4 and multiples of 8 in vectors) gives the portable
kernel's, the interpreter's and the TFLM wheel's bytes: lengths whose half mixes radices 4, 2, 3 and 5 (vector
and portable stages side by side), several frames, zero padding, inputs at both rails and alternating; the int32
kernel stays portable."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.export import NativeModel
from micronn.kernels._signal_fft import radices, real_fft_length_ok
from micronn.models import bundled_model
from micronn.testing import _Tflm
from tests.kernels.test_signal_rfft import extremes, rfft_model


def assert_all_same(data: bytes, x: np.ndarray, *, wheel: bool = True) -> None:
    ported, portable, it = NativeModel(data), NativeModel(data, host_ports=False), Interpreter(data)
    got = ported.run([x])[0]
    assert got.tobytes() == portable.run([x])[0].tobytes()
    it.set_input(x, 0)
    it.invoke()
    assert got.tobytes() == it.get_output(0).tobytes()
    if wheel:
        assert got.tobytes() == _Tflm(data).run([x])[0].tobytes()


# halves: 8 (4 2), 16 (4 4), 32 (2 4 4), 64, 128, 256 (4 4 4 4), 48 (4 4 3), 80 (4 4 5), 96, 120, 240 (mixed)
LENGTHS = [16, 32, 64, 96, 128, 160, 192, 240, 256, 480, 512]


@pytest.mark.parametrize("fft_length", LENGTHS)
def test_rfft_int16(fft_length: int) -> None:
    assert real_fft_length_ok(fft_length), radices(fft_length // 2)
    frames = np.concatenate(extremes("int16", (1, fft_length), fft_length))
    assert_all_same(rfft_model(fft_length, lead=(len(frames),)), frames, wheel=fft_length <= 256)


def test_rfft_int16_zero_padding_and_int32() -> None:
    x = np.concatenate(extremes("int16", (1, 200), 3))
    assert_all_same(rfft_model(256, frame=200, lead=(len(x),)), x)
    y = np.concatenate(extremes("int32", (1, 128), 4))
    assert_all_same(rfft_model(128, "int32", lead=(len(y),)), y)


def test_audio_preprocessor() -> None:
    model = bundled_model("audio_preprocessor_int8")
    ported, portable = NativeModel(model), NativeModel(model, host_ports=False)
    rng = np.random.default_rng(5)
    xs = [rng.integers(-32768, 32768, (4, *v.shape)).astype(v.dtype) for v in ported.inputs]
    assert [g.tobytes() for g in ported.run_chunk(xs)[0]] == [b.tobytes() for b in portable.run_chunk(xs)[0]]
