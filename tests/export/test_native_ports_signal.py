"""The host ports of the audio front end's signal kernels give the portable kernels' bytes (and the
interpreter's and the TFLM wheel's). SignalRfft (int16: radix-2/4 stages of span 1, 4 and multiples of 8 in
vectors, the digit-reversed copy as a masked gather, folded into a first stage of span 1, the split eight steps
at a time): lengths whose half mixes radices 4, 2, 3 and 5 (vector and portable stages side by side, split step
counts with and without a remainder of 8), several frames, zero padding of even and odd frames, inputs at both
rails and alternating, sign waves matched to every bin and impulses at every position (values at the int16 rails
after the stages and in the split); the int32 kernel stays portable; the audio front end on real speech.
SignalFilterBankSquareRoot: roots near every awkward square, the caps, the whole uint64 range."""

from __future__ import annotations

import ctypes
import math
from pathlib import Path

import numpy as np
import pytest

from micronn import Interpreter
from micronn.export import NativeModel
from micronn.export.native import FLAGS, HOST_PORTS, host_toolchain
from micronn.kernels._signal_fft import radices, real_fft_length_ok
from micronn.micro import lower
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


# halves: 8 (4 2), 16 (4 4), 32 (2 4 4), 64, 128, 256 (4 4 4 4), 48 (4 4 3), 80 (4 4 5), 96, 120, 240 (mixed),
# 512 (2 4 4 4 4), 1024 (4 4 4 4 4)
LENGTHS = [16, 32, 64, 96, 128, 160, 192, 240, 256, 480, 512, 1024, 2048]


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


def bin_waves(fft_length: int) -> np.ndarray:
    """Per bin k and phase: 32767 times the sign of cos(2 pi k t / n + phase), -32768 where it is negative; the
    frame whose bin k is as large as a frame can make it, so values sit near the rails through the stages and the
    split. Then impulses of either rail at every position."""
    t = np.arange(fft_length)
    rows = [np.where(np.cos(2 * np.pi * k * t / fft_length + ph) >= 0, 32767, -32768)
            for k in range(fft_length // 2 + 1) for ph in (0.0, 0.4, np.pi / 2)]
    eye = np.eye(fft_length, dtype=np.int64)
    return np.concatenate([np.stack(rows), eye * 32767, eye * -32768]).astype(np.int16)


@pytest.mark.parametrize("fft_length", [32, 48, 64, 80, 96, 120, 128, 240, 256, 512])
def test_rfft_int16_rails(fft_length: int) -> None:
    """Split step counts 8, 12, 16, 20, 24, 30, 32, 60, 64, 128 (vectors and a scalar remainder), after first
    stages of radix 4 (the gather folded in) or 2 (the gather alone)."""
    x = bin_waves(fft_length)
    assert_all_same(rfft_model(fft_length, lead=(len(x),)), x, wheel=fft_length <= 256)


@pytest.mark.parametrize(("fft_length", "frame"), [(256, 200), (256, 201), (256, 255), (256, 250), (256, 7),
                                                  (512, 480), (512, 470), (512, 301), (128, 100), (128, 2)])
def test_rfft_int16_padding(fft_length: int, frame: int) -> None:
    """Frames shorter than the length: even (the gather's mask; for 128 and 512, first stages read from rows of
    pairs, rows wholly input, wholly padding or cut inside eight pairs), odd (a pair half input, half padding: the
    scalar copy), tiny."""
    x = np.concatenate([*extremes("int16", (1, frame), frame), bin_waves(fft_length)[::7, :frame]])
    assert_all_same(rfft_model(fft_length, frame=frame, lead=(len(x),)), x)


def speech(frames: int) -> np.ndarray:
    """Every 8th 480-sample frame (hop 160) of each bundled recording (micro_speech's yes, no, noise, silence;
    the same as shared/models/audio)."""
    from micronn.simulate.audio import BUNDLED_AUDIO, bundled_audio

    out = []
    for name in BUNDLED_AUDIO:
        pcm = bundled_audio(name)
        out += [pcm[i:i + 480] for i in range(0, len(pcm) - 480, 160)][::8][:frames]
    return np.stack(out).astype(np.int16)


def test_audio_preprocessor() -> None:
    """The front end over real speech and noise, then frames at the rails, alternating, square waves and
    random: consecutive frames (the noise estimate carried) against the portable kernels and the wheel, and
    each frame from the initial state against the portable kernels."""
    model = bundled_model("audio_preprocessor_int8")
    ported, portable = NativeModel(model), NativeModel(model, host_ports=False)
    rng = np.random.default_rng(5)
    x = np.concatenate([speech(12), *extremes("int16", (1, 480), 3), bin_waves(512)[::9, :480],
                        rng.integers(-32768, 32768, (8, 480)).astype(np.int16)])[:, None, :]
    got = ported.run_chunk([x], reset=False)[0][0]
    assert got.tobytes() == portable.run_chunk([x], reset=False)[0][0].tobytes()
    wheel = _Tflm(model)
    assert got.tobytes() == np.stack([wheel.run([f])[0] for f in x]).tobytes()
    assert ported.run_chunk([x])[0][0].tobytes() == portable.run_chunk([x])[0][0].tobytes()


def _sqrt_library(tmp_path: Path) -> ctypes.CDLL:
    """The port and the portable kernel (renamed ..._portable by the port) in one host library."""
    kernels = lower.include_dir()
    (tmp_path / "sqrt.c").write_text((HOST_PORTS / "signal_filter_bank_square_root.c").read_text())
    (tmp_path / "signal_filter_bank_square_root.portable.inc").write_text(
        (kernels / "signal_filter_bank_square_root.c").read_text())
    return ctypes.CDLL(str(host_toolchain().shared_object([tmp_path / "sqrt.c"], [tmp_path, kernels], FLAGS)))


@pytest.mark.parametrize("shift", [0, 5, 31, 32, -1])
def test_filter_bank_square_root(shift: int, tmp_path: Path) -> None:
    """Rounded integer square roots near every awkward square (the double estimate corrected exactly), the caps,
    random values over the whole uint64 range (uint64 tensors cannot be a NativeModel's inputs: the kernels are
    called directly); a scale outside [0, 31] left to the portable kernel (zeros). The model's roots above."""
    from tests.kernels.test_signal_filter_bank_square_root import near_squares, spread

    lib = _sqrt_library(tmp_path)
    x = np.ascontiguousarray(np.concatenate([near_squares(), spread(3000, 7)]))
    scale = np.array([shift], np.int32)
    outs = []
    for name in ("mn_signal_filter_bank_square_root_u64", "mn_signal_filter_bank_square_root_u64_portable"):
        out = np.zeros(len(x), np.uint32)
        args = (ctypes.c_size_t * 4)(out.ctypes.data, x.ctypes.data, scale.ctypes.data, len(x))
        lib[name](args)
        outs.append(out)
    assert outs[0].tobytes() == outs[1].tobytes()
    if 0 <= shift <= 31:
        want = [(r + (v - r * r > r and r != (0xFFFF if v < 2**32 else 0xFFFFFFFF))) >> shift
                for v in map(int, x) for r in [math.isqrt(v)]]
        assert outs[0].tolist() == want
