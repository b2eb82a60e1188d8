"""SignalFilterBankLog against the TFLM wheel, byte for byte: every input up to 2**17 and a spread over uint32 (every
segment of the log table at every magnitude), scales small to 2**32 - 1 (TFLM's uint32 scaling wraps), correction
shifts that push bits out, saturation at 32767; bad models are refused."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import PrepareError, UnsupportedError
from micronn.kernels._custom_options import custom_options
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_tflm


def log_model(n: int, output_scale: int = 64, bits: int = 3, out_n: int | None = None,
              dtypes: tuple = ("uint32", "int16"), options: bytes | None = None) -> bytes:
    o = custom_options(input_correction_bits=bits, output_scale=output_scale) if options is None else options
    return op_model("SignalFilterBankLog", [T((n,), dtypes[0])], [T((out_n or n,), dtypes[1])], custom_options=o)


def inputs() -> np.ndarray:
    rng = np.random.default_rng(0)
    spread = rng.integers(0, 2**32, 20000, dtype=np.uint64) >> rng.integers(0, 32, 20000).astype(np.uint64)
    edges = np.array([v for b in range(32) for v in (2**b - 1, 2**b, 2**b + 1)], np.uint64)
    return np.concatenate([np.arange(2**17), spread, edges, [2**32 - 1]]).astype(np.uint32)


X = inputs()


@pytest.mark.parametrize("output_scale,bits", [
    (64, 3), (64, 0), (1, 0), (1489, 2), (32768, 0), (65536, 0), (2**20 + 3, 0), (2**31 - 1, 0), (2**32 - 1, 0),
    (-1, 0), (2**32 + 64, 1), (64, 16), (64, 31), (0, 0),
], ids=str)
def test_matches_tflm(output_scale: int, bits: int) -> None:
    assert_same_as_tflm(log_model(len(X), output_scale, bits), [X])


def test_random_full_range() -> None:
    assert_same_as_tflm(log_model(64, 700, 1), runs=3)


@pytest.mark.parametrize("dtypes", [("int32", "int16"), ("uint32", "int32"), ("uint64", "int16")], ids=str)
def test_unsupported_types(dtypes: tuple) -> None:
    model = log_model(4, dtypes=dtypes)
    with pytest.raises(TflmError):
        run_tflm(model, [np.zeros(4, dtypes[0])])
    with pytest.raises((UnsupportedError, PrepareError)):
        Interpreter(model).allocate_tensors()


@pytest.mark.parametrize("model,match", [
    (log_model(4, bits=32), "out of range"),  # the wheel shifts by 32 % 32
    (log_model(4, bits=-1), "out of range"),
    (log_model(4, out_n=3), "elements"),
    (log_model(4, out_n=5), "elements"),  # TFLM loops over the output, reading past the input
    (log_model(4, options=custom_options(output_scale=64)), "missing"),
    (log_model(4, options=custom_options(input_correction_bits=3, output_scale=64, zz=1)), "exactly the keys"),
    (log_model(4, options=b""), "FlexBuffer map"),  # the wheel segfaults
    (op_model("SignalFilterBankLog", [T((1, 4), "uint32")], [T((1, 4), "int16")],
              custom_options=custom_options(input_correction_bits=3, output_scale=64)), "1 dimension"),
    (op_model("SignalFilterBankLog", [T((4,), "uint32"), T((4,), "uint32")], [T((4,), "int16")],
              custom_options=custom_options(input_correction_bits=3, output_scale=64)), "inputs"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_rejects_bad_models(model: bytes, match: str) -> None:
    with pytest.raises(PrepareError, match=match):
        Interpreter(model).allocate_tensors()
