"""DYNAMIC_UPDATE_SLICE against the TFLM wheel, byte for byte, for every operand type it runs: start indices
int32/int64 (computed or constant), clamped into range, including int64 values beyond int32."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import PrepareError, UnsupportedError
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_tflm, tflm_arena

DTYPES = ["float32", "int8", "int16", "int32"]


def dus_model(dtype: str, shape, update_shape, index_dtype: str = "int32", starts=None, out=None, update_dtype=None,
              index_shape=None) -> bytes:
    q = (0.1, 3) if dtype in ("int8", "int16") else (None, None)
    index = T(index_shape or (len(shape),), index_dtype, data=starts)
    return op_model("DYNAMIC_UPDATE_SLICE",
                    [T(shape, dtype, *q), T(update_shape, update_dtype or dtype, *q), index],
                    [out or T(shape, dtype, *q)])


def data(dtype: str, shape, rng: np.random.Generator) -> np.ndarray:
    if dtype == "float32":
        return rng.standard_normal(shape).astype(np.float32)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)


STARTS = [[0, 0, 0], [1, 2, 1], [2, 2, 1], [3, 3, 3], [-1, 5, -7], [100, -100, 1], [2**31 - 1, -(2**31), 0]]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
def test_matches_tflm(dtype: str, index_dtype: str) -> None:
    """Start indices are clamped into [0, operand dim - update dim], whatever their value."""
    rng = np.random.default_rng(DTYPES.index(dtype))
    model = dus_model(dtype, (4, 5, 3), (2, 3, 2), index_dtype)
    for starts in STARTS:
        inputs = [data(dtype, (4, 5, 3), rng), data(dtype, (2, 3, 2), rng), np.array(starts, index_dtype)]
        assert_same_as_tflm(model, inputs)


def test_int64_starts_clamp_in_int64() -> None:
    """int64 starts are clamped as int64 (not truncated to 32 bits first)."""
    model = dus_model("int32", (4, 5), (2, 2), "int64")
    rng = np.random.default_rng(3)
    for starts in ([2**32 + 1, 1], [-(2**40), 2**62], [2**63 - 1, -(2**63)]):
        assert_same_as_tflm(model, [data("int32", (4, 5), rng), data("int32", (2, 2), rng), np.array(starts, np.int64)])


@pytest.mark.parametrize("shape,update_shape,starts", [
    ((6,), (2,), [3]),
    ((6,), (6,), [2]),  # the update covers the operand
    ((3, 4), (3, 1), [0, 2]),
    ((2, 3, 4, 5), (1, 2, 1, 3), [1, 1, 2, 2]),
    ((2, 1, 3, 2, 2, 3), (1, 1, 2, 1, 2, 2), [1, 0, 1, 1, 0, 1]),
], ids=str)
def test_shapes(shape: tuple, update_shape: tuple, starts: list) -> None:
    rng = np.random.default_rng(len(shape))
    computed = dus_model("float32", shape, update_shape)
    assert_same_as_tflm(computed, [data("float32", shape, rng), data("float32", update_shape, rng),
                                   np.array(starts, np.int32)])
    constant = dus_model("float32", shape, update_shape, starts=starts)
    assert_same_as_tflm(constant, runs=2)


def test_head_equals_tflm() -> None:
    model = dus_model("int8", (4, 5, 3), (2, 3, 2), starts=[1, 1, 1])
    it = Interpreter(model, planner="tflm")
    it.allocate_tensors()
    assert it.head == tflm_arena(model)["head"]


@pytest.mark.parametrize("model", [
    dus_model("float32", (2, 3), (3, 3)),
    dus_model("float32", (2, 3), (3,)),
    dus_model("float32", (2, 3), (1, 3), index_shape=(3,)),
    dus_model("float32", (2, 3), (1, 3), index_dtype="int16"),
    dus_model("float32", (2, 3), (1, 3), update_dtype="int32"),
    dus_model("float32", (1, 1, 1, 1, 1, 1, 2), (1, 1, 1, 1, 1, 1, 1)),
], ids=["update larger", "update rank", "index count", "int16 index", "update type", "7-D operand"])
def test_rejects_what_tflm_rejects(model: bytes) -> None:
    with pytest.raises(TflmError):
        run_tflm(model, [])
    with pytest.raises(PrepareError):
        Interpreter(model).allocate_tensors()


@pytest.mark.parametrize("out", [T((2, 3), "int32"), T((3, 2), "float32")], ids=["type", "shape"])
def test_refuses_an_output_unlike_the_operand(out: T) -> None:
    """TFLM does not check the output (it even overwrites its type); micronn requires the operand's."""
    with pytest.raises(PrepareError, match="output"):
        Interpreter(dus_model("float32", (2, 3), (1, 3), out=out)).allocate_tensors()


@pytest.mark.parametrize("dtype", ["int64", "uint8", "bool"])
def test_unsupported_types(dtype: str) -> None:
    """The wheel fails these operand types at invoke; micronn refuses them when loading."""
    model = dus_model(dtype, (2, 3), (1, 3))
    inputs = [np.ones((2, 3), dtype), np.zeros((1, 3), dtype), np.zeros(2, np.int32)]
    with pytest.raises(TflmError, match="not supported"):
        run_tflm(model, inputs)
    with pytest.raises(UnsupportedError):
        Interpreter(model)
