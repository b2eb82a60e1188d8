"""CAST against the TFLM wheel, byte for byte, for every pair of types TFLM casts between."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import PrepareError, UnsupportedError
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_tflm

TYPES = ["float32", "int8", "int16", "int32", "uint32", "bool"]
VALUES = {
    "float32": np.array([
        0, -0.0, 0.9, -0.9, 1.5, -1.5, 127.9, 128, 200, -129, -128.9, 255.5, 256, 32767.5, 32768, -32768.7, -32769,
        65535, 2**31, -(2**31), 2**31 - 128, 3e9, -3e9, 4294967040, 4.3e9, 1e19, -1e19, np.inf, -np.inf, np.nan, 5e-39,
    ], np.float32),
    "int8": np.arange(-128, 128, dtype=np.int8),
    "int16": np.array([-32768, -129, -128, -1, 0, 1, 127, 128, 255, 256, 32767], np.int16),
    "int32": np.array([-(2**31), -(2**24) - 1, -65536, -32769, -129, -1, 0, 1, 255, 65535, 2**24 + 1, 2**31 - 1],
                      np.int32),
    "uint32": np.array([0, 1, 255, 256, 65535, 2**24 + 1, 2**31 - 1, 2**31, 2**32 - 1], np.uint32),
    "bool": np.array([True, False, True]),
}


@pytest.mark.parametrize("src", TYPES)
@pytest.mark.parametrize("dst", TYPES)
def test_matches_tflm(src: str, dst: str) -> None:
    """Integers wrap; float -> integer truncates and saturates (NaN gives 0); anything -> bool is != 0."""
    x = VALUES[src]
    m = op_model("CAST", [T(x.shape, src)], [T(x.shape, dst)])
    assert_same_as_tflm(m, inputs=[x])
    assert_same_as_tflm(m, runs=1)


def test_any_rank_and_reshaped_output() -> None:
    assert_same_as_tflm(op_model("CAST", [T((1, 2, 1, 1, 1, 1, 1, 1, 3), "int8")], [T((6,), "float32")]), runs=2)


def test_quantization_is_ignored() -> None:
    assert_same_as_tflm(op_model("CAST", [T((2, 3), "int8", 0.5, 3)], [T((2, 3), "float32")]), runs=2)


@pytest.mark.parametrize("src", ["int64", "uint8"])
def test_unsupported_sources(src: str) -> None:
    m = op_model("CAST", [T((2, 3), src)], [T((2, 3), "float32")])
    with pytest.raises(TflmError, match="not supported"):
        run_tflm(m, [np.zeros((2, 3), src)])
    with pytest.raises(UnsupportedError):
        Interpreter(m)


@pytest.mark.parametrize("dst", ["int64", "uint8", "float16"])
def test_unsupported_destinations(dst: str) -> None:
    m = op_model("CAST", [T((2, 3), "float32")], [T((2, 3), dst)])
    with pytest.raises(TflmError, match="not supported"):
        run_tflm(m, [np.zeros((2, 3), np.float32)])
    with pytest.raises(PrepareError, match="cannot cast"):
        Interpreter(m).allocate_tensors()


def test_rejects_element_count_mismatch() -> None:
    """TFLM reads or writes out of bounds; micronn refuses."""
    with pytest.raises(PrepareError, match="elements"):
        Interpreter(op_model("CAST", [T((2, 3), "float32")], [T((2, 4), "int32")])).allocate_tensors()
