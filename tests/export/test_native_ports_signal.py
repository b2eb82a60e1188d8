"""The host ports of the audio front end's signal kernels give the portable kernels' bytes (and the
interpreter's and the TFLM wheel's). SignalRfft (int16: radix-2/4 stages of span 1, 4 and multiples of 8 in
vectors): lengths whose half mixes radices 4, 2, 3 and 5 (vector and portable stages side by side), several
frames, zero padding, inputs at both rails and alternating; the int32 kernel stays portable.
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
