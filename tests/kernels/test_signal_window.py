"""SignalWindow against the TFLM wheel, byte for byte: window sizes and shifts, frames spanning rows, saturation,
floor shifts, a window given as a model input; bad models are refused."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import PrepareError, UnsupportedError
from micronn.kernels._custom_options import custom_options
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_tflm


def hann(n: int) -> np.ndarray:
    return np.round((0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n) / n)) * 4096).astype(np.int16)


def window_model(shape: tuple, weights: np.ndarray | None, shift: int = 12, out_shape: tuple | None = None,
                 n_weights: int | None = None, dtype: str = "int16", **extra) -> bytes:
    w = T((n_weights,), dtype) if weights is None else T((len(weights),), dtype, data=weights)
    return op_model("SignalWindow", [T(shape, dtype), w], [T(out_shape or shape, dtype)],
                    custom_options=custom_options(shift=shift, **extra))


def extremes(shape: tuple) -> np.ndarray:
    values = np.array([32767, -32768, 1, -1, 0, 3, -3, 100, -100, 12345], np.int16)
    return np.resize(values, shape)


@pytest.mark.parametrize("shift", [0, 1, 5, 12, 15, 16, 31])
@pytest.mark.parametrize("shape,n", [((1, 480), 480), ((8,), 8), ((2, 3, 4), 4), ((2, 8), 16), ((6,), 2), ((3, 5), 1)],
                         ids=str)
def test_matches_tflm(shape: tuple, n: int, shift: int) -> None:
    rng = np.random.default_rng(n + shift)
    for weights in (hann(n), rng.integers(-32768, 32768, n).astype(np.int16)):
        model = window_model(shape, weights, shift)
        assert_same_as_tflm(model, runs=2)
        assert_same_as_tflm(model, [extremes(shape)])


def test_saturates_and_floors() -> None:
    """int32 products saturate to int16 after the shift; the shift floors (-3 >> 1 is -2)."""
    x = np.array([[1, -1, 3, -3, 32767, -32768, 100, -100]], np.int16)
    w = np.array([1, 1, 1, 1, 32767, 32767, -7, 7], np.int16)
    for shift in (0, 1, 15, 16):
        (out,) = run_tflm(window_model((1, 8), w, shift), [x])
        assert_same_as_tflm(window_model((1, 8), w, shift), [x])
    assert out.tolist() == [[0, -1, 0, -1, 16383, -16384, -1, -1]]


def test_window_as_model_input() -> None:
    model = window_model((2, 6), None, 3, n_weights=6)
    rng = np.random.default_rng(7)
    for _ in range(3):
        assert_same_as_tflm(model, [rng.integers(-32768, 32768, (2, 6)).astype(np.int16),
                                    rng.integers(-32768, 32768, 6).astype(np.int16)])


def test_output_of_another_shape_same_size() -> None:
    assert_same_as_tflm(window_model((1, 8), hann(4), 2, out_shape=(2, 4)), runs=2)


def test_empty_input() -> None:
    assert_same_as_tflm(window_model((0,), hann(3), 1), [np.zeros(0, np.int16)])


@pytest.mark.parametrize("dtype", ["int8", "int32", "float32"])
def test_unsupported_types(dtype: str) -> None:
    model = window_model((1, 8), np.ones(8, dtype), 1, dtype=dtype)
    with pytest.raises(TflmError):
        run_tflm(model, [np.zeros((1, 8), dtype)])
    with pytest.raises(UnsupportedError):
        Interpreter(model)


def opts(**kw) -> bytes:
    return custom_options(**kw)


@pytest.mark.parametrize("model,match", [
    (window_model((1, 8), hann(8), 32), "out of range"),  # the wheel shifts by 32 % 32
    (window_model((1, 8), hann(8), -1), "out of range"),
    (window_model((1, 8), hann(3), 0), "whole number"),  # TFLM's last frame runs past both buffers
    (window_model((1, 8), hann(16), 0), "whole number"),
    (window_model((1, 8), np.zeros(0, np.int16), 0), "whole number"),  # TFLM loops forever
    (window_model((1, 8), hann(8), 0, out_shape=(1, 9)), "elements"),  # TFLM leaves the 9th unwritten
    (window_model((1, 8), hann(8), 0, out_shape=(8,)), "dimensions"),
    (window_model((1, 8), hann(8), 0, aaa=4), "exactly the keys"),  # TFLM would read shift = 4 (by position)
    (op_model("SignalWindow", [T((1, 8), "int16"), T((8,), "int16", data=hann(8))], [T((1, 8), "int16")]),
     "FlexBuffer map"),  # the wheel segfaults without options
    (op_model("SignalWindow", [T((1, 8), "int16"), T((8,), "int16", data=hann(8))], [T((1, 8), "int16")],
              custom_options=opts()), "missing"),
    (op_model("SignalWindow", [T((1, 8), "int16"), T((8,), "int16", data=hann(8))], [T((1, 8), "int16")],
              custom_options=opts(shift=1.5)), "not int"),
    (op_model("SignalWindow", [T((), "int16"), T((1,), "int16", data=[3])], [T((), "int16")],
              custom_options=opts(shift=1)), "at least one dimension"),
    (op_model("SignalWindow", [T((1, 8), "int16"), T((2, 4), "int16", data=hann(8))], [T((1, 8), "int16")],
              custom_options=opts(shift=1)), "dimension"),
    (op_model("SignalWindow", [T((1, 8), "int16"), T((8,), "int16", data=hann(8))], [T((1, 8), "int32")],
              custom_options=opts(shift=1)), "int16"),
    (op_model("SignalWindow", [T((1, 8), "int16"), T((8,), "int32", data=hann(8))], [T((1, 8), "int16")],
              custom_options=opts(shift=1)), "int16"),
    (op_model("SignalWindow", [T((1, 8), "int16")], [T((1, 8), "int16")], custom_options=opts(shift=1)), "inputs"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_rejects_bad_models(model: bytes, match: str) -> None:
    with pytest.raises(PrepareError, match=match):
        Interpreter(model).allocate_tensors()
