"""SignalFilterBankSquareRoot against the TFLM wheel, byte for byte: values around every kind of square, rounding and
its saturation at 0xFFFF (below 2**32) and 0xFFFFFFFF, every scale shift given at invoke or as a constant; bad models
are refused."""

from __future__ import annotations

import math

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import InvokeError, PrepareError, UnsupportedError
from micronn.kernels._custom_options import custom_options
from micronn.kernels.signal_filter_bank_square_root import rounded_sqrt
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_tflm


def sqrt_model(n: int, scale: int | None = None, out_n: int | None = None,
               dtypes: tuple = ("uint64", "int32", "uint32"), scale_shape: tuple = (),
               options: bytes | None = None) -> bytes:
    s = T(scale_shape, dtypes[1]) if scale is None else T(scale_shape, dtypes[1], data=scale)
    return op_model("SignalFilterBankSquareRoot", [T((n,), dtypes[0]), s], [T((out_n or n,), dtypes[2])],
                    custom_options=options)


def near_squares() -> np.ndarray:
    roots = [1, 2, 3, 255, 256, 4095, 46340, 65534, 65535, 65536, 65537, 2**31, 3037000499, 3037000500,
             2**32 - 2, 2**32 - 1]
    values = {max(0, min(2**64 - 1, r * r + d)) for r in roots for d in (-r - 1, -r, -1, 0, 1, r - 1, r, r + 1)}
    values |= {0, 1, 2, 3, 2**32 - 1, 2**32, 2**32 + 1, 2**63, 2**64 - 1}
    return np.array(sorted(values), np.uint64)


def spread(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(0, 2**64, n, dtype=np.uint64, endpoint=False) >> rng.integers(0, 64, n).astype(np.uint64)


def test_rounding_rule() -> None:
    """The rule the module states, against Python's exact integer square root."""
    x = np.concatenate([near_squares(), spread(2000, 1)])
    expected = []
    for v in map(int, x):
        s = math.isqrt(v)
        expected.append(s + (v - s * s > s and s != (0xFFFF if v < 2**32 else 0xFFFFFFFF)))
    assert rounded_sqrt(x).tolist() == expected


@pytest.mark.parametrize("shift", [0, 1, 7, 16, 31])
def test_matches_tflm(shift: int) -> None:
    x = np.concatenate([near_squares(), spread(500, shift)])
    model = sqrt_model(len(x))
    assert_same_as_tflm(model, [x, np.array(shift, np.int32)])
    assert_same_as_tflm(sqrt_model(len(x), scale=shift), [x])


def test_random_full_range() -> None:
    model = sqrt_model(40, scale=3)
    assert_same_as_tflm(model, runs=3)


def test_options_are_ignored() -> None:
    x = spread(8, 3)
    for options in (None, custom_options(), custom_options(anything=1)):
        assert_same_as_tflm(sqrt_model(8, 2, options=options), [x])


@pytest.mark.parametrize("shift", [-1, 32, 2**31 - 1])
def test_scale_out_of_range_at_invoke(shift: int) -> None:
    """A C undefined shift (the wheel shifts by shift % 32): refused when it arrives."""
    it = Interpreter(sqrt_model(4))
    it.set_input(np.arange(4, dtype=np.uint64), 0)
    it.set_input(np.array(shift, np.int32), 1)
    with pytest.raises(InvokeError, match="scale_bits"):
        it.invoke()


@pytest.mark.parametrize("dtypes", [("uint32", "int32", "uint32"), ("int64", "int32", "uint32"),
                                    ("uint64", "int64", "uint32"), ("uint64", "int32", "uint64")], ids=str)
def test_unsupported_types(dtypes: tuple) -> None:
    model = sqrt_model(4, 1, dtypes=dtypes)
    with pytest.raises(TflmError):
        run_tflm(model, [np.zeros(4, dtypes[0])])
    with pytest.raises((UnsupportedError, PrepareError)):
        Interpreter(model).allocate_tensors()


@pytest.mark.parametrize("model,match", [
    (sqrt_model(4, scale=32), "out of range"),
    (sqrt_model(4, scale=-1), "out of range"),
    (sqrt_model(4, out_n=3), "elements"),
    (sqrt_model(4, out_n=5), "elements"),  # TFLM loops over the output, reading past the input
    (sqrt_model(4, scale_shape=(1,)), "0 dimensions"),
    (op_model("SignalFilterBankSquareRoot", [T((1, 4), "uint64"), T((), "int32")], [T((1, 4), "uint32")]),
     "1 dimension"),
    (op_model("SignalFilterBankSquareRoot", [T((4,), "uint64")], [T((4,), "uint32")]), "inputs"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_rejects_bad_models(model: bytes, match: str) -> None:
    with pytest.raises(PrepareError, match=match):
        Interpreter(model).allocate_tensors()
