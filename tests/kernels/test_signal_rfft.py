"""SignalRfft against the TFLM wheel, byte for byte: every FFT length the wheel accepts up to 256 (radices 4, 2, 3
and 5), long lengths, int16/int32/float32, zero padding, frames in leading dimensions, extreme inputs; and the
models micronn refuses (lengths that crash the wheel, frames it would read or write out of bounds)."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import PrepareError, UnsupportedError
from micronn.kernels._custom_options import custom_options
from micronn.kernels._signal_fft import radices, real_fft_length_ok
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_tflm, tflm_arena

TYPE_CODE = {"float32": 0, "int32": 2, "int16": 7}
LENGTHS = [n for n in range(4, 257, 2) if real_fft_length_ok(n)]


def rfft_model(fft_length: int, dtype: str = "int16", frame: int | None = None, lead: tuple = (),
               out_frame: int | None = None, **options) -> bytes:
    frame = fft_length if frame is None else frame
    out_frame = fft_length + 2 if out_frame is None else out_frame
    opts = {"T": TYPE_CODE.get(dtype, 9), "fft_length": fft_length, **options}
    return op_model("SignalRfft", [T((*lead, frame), dtype)], [T((*lead, out_frame), dtype)],
                    custom_options=custom_options(**opts))


def extremes(dtype: str, shape: tuple, seed: int) -> list[np.ndarray]:
    """Random values over the whole range, both rails, alternating rails, and small values."""
    rng = np.random.default_rng(seed)
    if dtype == "float32":
        return [(rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4)).astype(np.float32)]
    lo, hi = np.iinfo(dtype).min, np.iinfo(dtype).max
    alternating = np.where(np.arange(shape[-1]) % 2 == 0, hi, lo) * np.ones(shape, np.int64)
    return [rng.integers(lo, hi, shape, endpoint=True).astype(dtype), np.full(shape, hi, dtype),
            np.full(shape, lo, dtype), alternating.astype(dtype), rng.integers(-3, 4, shape).astype(dtype)]


def test_lengths_cover_every_radix() -> None:
    used = {p for n in LENGTHS for p in radices(n // 2)}
    assert used == {2, 3, 4, 5}
    assert 14 not in LENGTHS and 28 not in LENGTHS and 2 not in LENGTHS  # 7 | n/2, n/2 = 1: the wheel crashes


@pytest.mark.parametrize("fft_length", LENGTHS)
def test_int16_every_length(fft_length: int) -> None:
    model = rfft_model(fft_length, lead=(5,))
    assert_same_as_tflm(model, [np.concatenate(extremes("int16", (1, fft_length), fft_length))])


@pytest.mark.parametrize("dtype", ["int32", "float32"])
@pytest.mark.parametrize("fft_length", [4, 6, 8, 10, 12, 16, 18, 20, 24, 30, 32, 40, 50, 54, 60, 64, 90, 96, 100,
                                        120, 250])
def test_int32_and_float_lengths(dtype: str, fft_length: int) -> None:
    model = rfft_model(fft_length, dtype, lead=(len(extremes(dtype, (1,), 0)),))
    assert_same_as_tflm(model, [np.concatenate(extremes(dtype, (1, fft_length), fft_length))])


@pytest.mark.parametrize("dtype", ["int16", "int32", "float32"])
@pytest.mark.parametrize("fft_length", [512, 960, 1000, 4096])
def test_long_lengths(dtype: str, fft_length: int) -> None:
    assert_same_as_tflm(rfft_model(fft_length, dtype, lead=(2,)), runs=1)


@pytest.mark.parametrize("dtype", ["int16", "int32"])
@pytest.mark.parametrize("fft_length", [16, 24, 40, 60])
def test_impulses_at_every_position(dtype: str, fft_length: int) -> None:
    hi, lo = np.iinfo(dtype).max, np.iinfo(dtype).min
    x = np.concatenate([np.eye(fft_length) * hi, np.eye(fft_length) * lo]).astype(dtype)
    assert_same_as_tflm(rfft_model(fft_length, dtype, lead=(2 * fft_length,)), [x])


@pytest.mark.parametrize("dtype", ["int16", "int32", "float32"])
def test_tones_and_dc(dtype: str) -> None:
    n = 120
    t = np.arange(n)
    scale = 1.0 if dtype == "float32" else np.iinfo(dtype).max
    rows = [np.ones(n)] + [np.cos(2 * np.pi * k * t / n + 0.3 * k) for k in (1, 7, 30, 59, 60)]
    x = (np.stack(rows) * scale).astype(dtype)
    assert_same_as_tflm(rfft_model(n, dtype, lead=(len(rows),)), [x])


@pytest.mark.parametrize("dtype", ["int16", "int32", "float32"])
def test_zero_padding_and_frames(dtype: str) -> None:
    """Frames shorter than fft_length are zero padded; leading dimensions are independent frames."""
    for frame in (1, 37, 63):
        assert_same_as_tflm(rfft_model(64, dtype, frame, lead=(2, 3)), runs=2)


def test_audio_preprocessor_configuration() -> None:
    """The op as in audio_preprocessor_int8.tflite: 480 samples (auto-scaled, so large) into fft_length 512."""
    model = rfft_model(512, "int16", 480)
    rng = np.random.default_rng(7)
    assert_same_as_tflm(model, [(rng.standard_normal(480) * 8000).clip(-32768, 32767).astype(np.int16)])
    assert_same_as_tflm(model, runs=2)


def test_float_special_finite_values() -> None:
    """Subnormals, signed zeros and large finite values round exactly as in TFLM."""
    rng = np.random.default_rng(3)
    rows = [rng.standard_normal(120) * 1e-39, np.full(120, -0.0), rng.standard_normal(120) * 1e36,
            np.where(rng.random(120) < 0.5, 1e-45, -0.0)]
    assert_same_as_tflm(rfft_model(120, "float32", lead=(4,)), [np.stack(rows).astype(np.float32)])


def same_but_nan_payloads(model: bytes, x: np.ndarray) -> None:
    """NaNs where TFLM has them (their sign and payload bits may differ), every other value byte-identical."""
    expected = run_tflm(model, [x])[0]
    it = Interpreter(model)
    it.set_input(x, 0)
    it.invoke()
    got = it.get_output(0)
    assert np.array_equal(np.isnan(got), np.isnan(expected))
    finite = ~np.isnan(expected)
    assert got[finite].tobytes() == expected[finite].tobytes()


def test_float_nan_positions() -> None:
    """NaN and infinite inputs give NaNs where TFLM gives them."""
    x = np.random.default_rng(4).standard_normal((3, 40)).astype(np.float32)
    x[0, 3], x[1, 5], x[2, 7] = np.nan, np.inf, -np.inf
    same_but_nan_payloads(rfft_model(40, "float32", lead=(3,)), x)


def test_head_equals_tflm() -> None:
    """TFLM's scratch copy of a frame (fft_length samples) is requested too."""
    for dtype in ("int16", "float32"):
        model = rfft_model(512, dtype, 480)
        it = Interpreter(model, planner="tflm")
        it.allocate_tensors()
        assert it.head == tflm_arena(model)["head"]


def refused(model: bytes, match: str) -> None:
    with pytest.raises(PrepareError, match=match):
        Interpreter(model).allocate_tensors()


@pytest.mark.parametrize("fft_length", [0, -8, 1, 2, 3, 5, 9, 14, 22, 26, 28, 42, 2**32 + 8])
def test_rejects_lengths_that_crash_tflm(fft_length: int) -> None:
    """The wheel segfaults on these (or reads garbage): micronn refuses them without running it."""
    refused(rfft_model(fft_length, frame=1, out_frame=max(fft_length + 2, 1) if fft_length < 999 else 10), "fft_length")


def test_rejects_what_tflm_reads_or_writes_out_of_bounds() -> None:
    model = rfft_model(16, frame=20)
    with pytest.raises(TflmError, match="input_length <= params->fft_length"):
        run_tflm(model, [np.zeros(20, np.int16)])
    refused(model, "do not fit")
    refused(rfft_model(16, frame=0, lead=(2,)), "do not fit")
    refused(rfft_model(16, out_frame=20), "must hold 18")
    refused(rfft_model(16, out_frame=16), "must hold 18")
    refused(op_model("SignalRfft", [T((2, 16), "int16")], [T((3, 18), "int16")],
                     custom_options=custom_options(T=7, fft_length=16)), "numbers of frames")
    refused(op_model("SignalRfft", [T((2, 16), "int16")], [T((36,), "int16")],
                     custom_options=custom_options(T=7, fft_length=16)), "rank")


def test_rejects_misread_options() -> None:
    model = rfft_model(16, a=8)  # 'a' sorts between 'T' and 'fft_length': TFLM reads 8 as the length
    with pytest.raises(TflmError, match="input_length <= params->fft_length"):
        run_tflm(model, [np.zeros(16, np.int16)])
    refused(model, "exactly")
    refused(op_model("SignalRfft", [T((16,), "int16")], [T((18,), "int16")],
                     custom_options=custom_options(fft_length=16)), "'T' is missing")
    refused(rfft_model(16, T=5), "T = 5")
    refused(op_model("SignalRfft", [T((16,), "int16")], [T((18,), "int16")],
                     custom_options=custom_options(T=7, fft_length=16.0)), "not int")
    refused(op_model("SignalRfft", [T((16,), "int16")], [T((18,), "int16")], custom_options=b"\x01"), "FlexBuffer")


def test_rejects_type_mismatches() -> None:
    model = rfft_model(16, T=2)
    with pytest.raises(TflmError, match="INT16 != INT32"):
        run_tflm(model, [np.zeros(16, np.int16)])
    refused(model, "T option says int32")
    refused(op_model("SignalRfft", [T((16,), "int16")], [T((18,), "int32")],
                     custom_options=custom_options(T=7, fft_length=16)), "output is int32")
    with pytest.raises(UnsupportedError):
        Interpreter(rfft_model(16, "int8"))
