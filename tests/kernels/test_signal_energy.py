"""SignalEnergy against the TFLM wheel, byte for byte: full and partial bin ranges (micro_speech's 5..241 of 257),
empty ranges, -32768 pairs; bad models are refused.

TFLM writes only the bins of the range; the rest of its output keeps whatever its arena held (a fresh heap is not
necessarily zero), so those elements are not compared with the wheel: micronn's are checked to be zeros instead.
"""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import PrepareError, UnsupportedError
from micronn.kernels._custom_options import custom_options
from micronn.testing import T, TflmError, assert_identical, assert_same_as_tflm, op_model, run_micronn, run_tflm


def energy_model(n_in: int, n_out: int, start: int, end: int, in_dtype: str = "int16", out_dtype: str = "uint32",
                 **extra) -> bytes:
    return op_model("SignalEnergy", [T((n_in,), in_dtype)], [T((n_out,), out_dtype)],
                    custom_options=custom_options(start_index=start, end_index=end, **extra))


def assert_range_matches(model: bytes, x: np.ndarray, start: int, end: int) -> None:
    (expected,), (actual,) = run_tflm(model, [x]), run_micronn(model, [x])
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    assert_identical(actual[start:end], expected[start:end], "bins of the range")
    assert not actual[:start].any() and not actual[max(end, start):].any()


@pytest.mark.parametrize("n_in,n_out,start,end", [
    (514, 257, 0, 257), (514, 257, 5, 241), (514, 257, 1, 2), (12, 6, 0, 6), (13, 6, 0, 6), (12, 5, 0, 5),
    (12, 9, 2, 6), (2, 1, 0, 1), (514, 257, 256, 257),
], ids=str)
def test_matches_tflm(n_in: int, n_out: int, start: int, end: int) -> None:
    model = energy_model(n_in, n_out, start, end)
    rng = np.random.default_rng(n_in + start)
    extremes = np.resize(np.array([-32768, -32768, 32767, 32767, -32768, 32767, 0, 0, 1, -1], np.int16), n_in)
    for x in (rng.integers(-32768, 32768, n_in).astype(np.int16), extremes, -extremes):
        if start == 0 and end == n_out:
            assert_same_as_tflm(model, [x])
        else:
            assert_range_matches(model, x, start, end)


@pytest.mark.parametrize("start,end", [(3, 3), (4, 2), (0, 0), (-5, -9), (1000, 10)], ids=str)
def test_empty_range_writes_nothing(start: int, end: int) -> None:
    """TFLM writes nothing (micronn writes zeros); out-of-bounds indices are harmless when the range is empty."""
    model = energy_model(12, 6, start, end)
    x = np.arange(12, dtype=np.int16)
    run_tflm(model, [x])
    assert not run_micronn(model, [x])[0].any()


@pytest.mark.parametrize("in_dtype,out_dtype", [("int32", "uint32"), ("int16", "int32"), ("float32", "uint32")])
def test_unsupported_types(in_dtype: str, out_dtype: str) -> None:
    model = energy_model(12, 6, 0, 6, in_dtype, out_dtype)
    with pytest.raises(TflmError):
        run_tflm(model, [np.zeros(12, in_dtype)])
    with pytest.raises((UnsupportedError, PrepareError)):
        Interpreter(model).allocate_tensors()


@pytest.mark.parametrize("model,match", [
    (energy_model(12, 6, -1, 6), "start_index"),  # TFLM writes before the output
    (energy_model(12, 6, 0, 7), "end_index"),  # past the output
    (energy_model(14, 6, 0, 7), "end_index"),
    (energy_model(11, 6, 0, 6), "end_index"),  # reads past the input
    (energy_model(12, 6, 0, 2**31), "out of range"),
    (energy_model(12, 6, 0, 6, aaa=1), "exactly the keys"),  # TFLM reads by position: aaa would be its end_index
    (op_model("SignalEnergy", [T((12,), "int16")], [T((6,), "uint32")], custom_options=custom_options(end_index=6)),
     "missing"),
    (op_model("SignalEnergy", [T((12,), "int16")], [T((6,), "uint32")]), "FlexBuffer map"),  # the wheel segfaults
    (op_model("SignalEnergy", [T((2, 6), "int16")], [T((6,), "uint32")],
              custom_options=custom_options(start_index=0, end_index=3)), "1 dimension"),
    (op_model("SignalEnergy", [T((12,), "int16")], [T((1, 6), "uint32")],
              custom_options=custom_options(start_index=0, end_index=3)), "1 dimension"),
    (op_model("SignalEnergy", [T((12,), "int16")], [T((6,), "uint32"), T((6,), "uint32")],
              custom_options=custom_options(start_index=0, end_index=3)), "outputs"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_rejects_bad_models(model: bytes, match: str) -> None:
    with pytest.raises(PrepareError, match=match):
        Interpreter(model).allocate_tensors()
