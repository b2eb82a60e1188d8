"""SignalIrfft against the TFLM wheel, byte for byte: every FFT length the wheel accepts up to 256 (radices 4, 2, 3
and 5), long lengths, int16/int32/float32 (with TFLM's float division by fft_length), frames in leading dimensions,
extreme spectra, a forward-then-inverse graph; and the models micronn refuses."""

from __future__ import annotations

import numpy as np
import pytest
from test_signal_rfft import LENGTHS, TYPE_CODE, extremes, same_but_nan_payloads

from micronn import Interpreter
from micronn.errors import PrepareError, UnsupportedError
from micronn.kernels._custom_options import custom_options
from micronn.testing import Graph, Op, T, TflmError, assert_same_as_tflm, graph_model, op_model, run_tflm, tflm_arena


def irfft_model(fft_length: int, dtype: str = "int16", lead: tuple = (), in_frame: int | None = None,
                out_frame: int | None = None, **options) -> bytes:
    in_frame = fft_length + 2 if in_frame is None else in_frame
    out_frame = fft_length if out_frame is None else out_frame
    opts = {"T": TYPE_CODE.get(dtype, 9), "fft_length": fft_length, **options}
    return op_model("SignalIrfft", [T((*lead, in_frame), dtype)], [T((*lead, out_frame), dtype)],
                    custom_options=custom_options(**opts))


@pytest.mark.parametrize("fft_length", LENGTHS)
def test_int16_every_length(fft_length: int) -> None:
    x = np.concatenate(extremes("int16", (1, fft_length + 2), fft_length))
    assert_same_as_tflm(irfft_model(fft_length, lead=(len(x),)), [x])


@pytest.mark.parametrize("dtype", ["int32", "float32"])
@pytest.mark.parametrize("fft_length", [4, 6, 8, 10, 12, 16, 18, 20, 24, 30, 32, 40, 50, 54, 60, 64, 90, 96, 100,
                                        120, 250])
def test_int32_and_float_lengths(dtype: str, fft_length: int) -> None:
    x = np.concatenate(extremes(dtype, (1, fft_length + 2), fft_length))
    assert_same_as_tflm(irfft_model(fft_length, dtype, lead=(len(x),)), [x])


@pytest.mark.parametrize("dtype", ["int16", "int32", "float32"])
@pytest.mark.parametrize("fft_length", [512, 960, 1000, 4096])
def test_long_lengths(dtype: str, fft_length: int) -> None:
    assert_same_as_tflm(irfft_model(fft_length, dtype, lead=(2,)), runs=1)


@pytest.mark.parametrize("dtype", ["int16", "int32"])
@pytest.mark.parametrize("fft_length", [16, 24, 40, 60])
def test_single_bins(dtype: str, fft_length: int) -> None:
    """Every real and imaginary input value alone at both rails (bin 0's and the last bin's imaginary parts are
    ignored by TFLM, and by micronn)."""
    hi, lo = np.iinfo(dtype).max, np.iinfo(dtype).min
    eye = np.eye(fft_length + 2)
    x = np.concatenate([eye * hi, eye * lo]).astype(dtype)
    assert_same_as_tflm(irfft_model(fft_length, dtype, lead=(len(x),)), [x])


@pytest.mark.parametrize("dtype", ["int16", "int32", "float32"])
def test_frames_in_leading_dimensions(dtype: str) -> None:
    assert_same_as_tflm(irfft_model(48, dtype, lead=(2, 3)), runs=2)


@pytest.mark.parametrize("dtype", ["int16", "int32", "float32"])
@pytest.mark.parametrize("fft_length", [64, 120, 512])
def test_forward_then_inverse(dtype: str, fft_length: int) -> None:
    """Real spectra: SignalRfft's output fed to SignalIrfft, as a two-operator graph."""
    opts = custom_options(T=TYPE_CODE[dtype], fft_length=fft_length)
    graph = Graph({"x": T((3, fft_length), dtype), "bins": T((3, fft_length + 2), dtype),
                   "y": T((3, fft_length), dtype)},
                  [Op("SignalRfft", ["x"], ["bins"], custom_options=opts),
                   Op("SignalIrfft", ["bins"], ["y"], custom_options=opts)], ["x"], ["y", "bins"])
    assert_same_as_tflm(graph_model(graph), runs=2)


def test_float_special_finite_values() -> None:
    rng = np.random.default_rng(3)
    rows = [rng.standard_normal(122) * 1e-39, np.full(122, -0.0), rng.standard_normal(122) * 1e35,
            np.where(rng.random(122) < 0.5, 1e-45, -0.0)]
    assert_same_as_tflm(irfft_model(120, "float32", lead=(4,)), [np.stack(rows).astype(np.float32)])


def test_float_nan_positions() -> None:
    """NaN and infinite inputs give NaNs where TFLM gives them (their sign and payload bits may differ)."""
    x = np.random.default_rng(4).standard_normal((3, 42)).astype(np.float32)
    x[0, 3], x[1, 6], x[2, 9] = np.nan, np.inf, -np.inf
    same_but_nan_payloads(irfft_model(40, "float32", lead=(3,)), x)


def test_head_equals_tflm() -> None:
    model = irfft_model(512, "int16")
    it = Interpreter(model, planner="tflm")
    it.allocate_tensors()
    assert it.head == tflm_arena(model)["head"]


def refused(model: bytes, match: str) -> None:
    with pytest.raises(PrepareError, match=match):
        Interpreter(model).allocate_tensors()


@pytest.mark.parametrize("fft_length", [0, -8, 2, 3, 5, 14, 22, 26, 28, 42])
def test_rejects_lengths_that_crash_tflm(fft_length: int) -> None:
    refused(irfft_model(fft_length, in_frame=max(fft_length + 2, 1), out_frame=max(fft_length, 1)), "fft_length")


def test_rejects_frames_tflm_would_overrun() -> None:
    """TFLM reads fft_length + 2 values and writes fft_length per frame whatever the shapes say."""
    refused(irfft_model(16, in_frame=16), "must hold 18")
    refused(irfft_model(16, in_frame=20), "must hold 18")
    refused(irfft_model(16, out_frame=8), "must hold fft_length")
    refused(op_model("SignalIrfft", [T((2, 18), "int16")], [T((1, 16), "int16")],
                     custom_options=custom_options(T=7, fft_length=16)), "numbers of frames")


def test_rejects_misread_options_and_types() -> None:
    refused(irfft_model(16, a=8), "exactly")
    refused(op_model("SignalIrfft", [T((18,), "int16")], [T((16,), "int16")],
                     custom_options=custom_options(fft_length=16)), "'T' is missing")
    model = irfft_model(16, T=0)
    with pytest.raises(TflmError, match="INT16 != FLOAT32"):
        run_tflm(model, [np.zeros(18, np.int16)])
    refused(model, "T option says float32")
    with pytest.raises(UnsupportedError):
        Interpreter(irfft_model(16, "int8"))
