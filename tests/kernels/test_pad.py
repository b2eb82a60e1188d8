"""PAD and PADV2 against the TFLM wheel, byte for byte."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import PrepareError, UnsupportedError
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_tflm, tflm_arena

DTYPES = ["float32", "int8", "int16", "int32"]


def pad_model(dtype: str, shape: tuple[int, ...], paddings, *, value=None, value_q: tuple | None = None,
              q: tuple | None = None, paddings_dtype: str = "int32", out_shape: tuple[int, ...] | None = None,
              op: str | None = None) -> bytes:
    """PAD (or PADV2 with a scalar ``value``); int8/int16 tensors get scale 0.1 and zero point 3 unless told."""
    pads = np.asarray(paddings, np.int64)
    if q is None and dtype in ("int8", "int16"):
        q = (0.1, 3)
    q = q or (None, None)
    if out_shape is None:
        out_shape = tuple(int(d + a + b) for d, (a, b) in zip(shape, pads))
    inputs = [T(shape, dtype, *q), T(pads.shape, paddings_dtype, data=pads)]
    if value is not None:
        inputs.append(T((), dtype, *(value_q or q), data=value))
    return op_model(op or ("PADV2" if value is not None else "PAD"), inputs, [T(out_shape, dtype, *q)])


CASES = [
    ((2, 3), [[1, 0], [2, 1]]),
    ((1, 4, 4, 2), [[0, 0], [1, 1], [2, 0], [0, 0]]),  # the "image style" layout
    ((2, 1, 3, 2, 2), [[1, 0], [0, 1], [1, 1], [0, 2], [3, 0]]),  # 5-D, TFLM's limit
    ((4,), [[0, 0]]),
    ((3, 3), [[-1, 0], [2, 1]]),  # negative paddings: TFLM drops the input's tail
    ((3, 4), [[1, -2], [-1, 3]]),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,paddings", CASES, ids=str)
def test_pad_matches_tflm(dtype: str, shape: tuple, paddings: list) -> None:
    assert_same_as_tflm(pad_model(dtype, shape, paddings), runs=2)


@pytest.mark.parametrize("dtype,value", [("float32", -2.5), ("int8", 5), ("int16", -300), ("int32", 7)])
@pytest.mark.parametrize("shape,paddings", CASES[:3], ids=str)
def test_padv2_matches_tflm(dtype: str, value, shape: tuple, paddings: list) -> None:
    assert_same_as_tflm(pad_model(dtype, shape, paddings, value=value), runs=2)


def test_pad_int8_uses_output_zero_point() -> None:
    results = assert_same_as_tflm(pad_model("int8", (2, 2), [[1, 1], [1, 1]], q=(0.5, -77)), runs=1)
    assert results[0][0][0, 0] == -77


def test_pad_int16_pads_with_zero_not_zero_point() -> None:
    results = assert_same_as_tflm(pad_model("int16", (2, 2), [[1, 1], [1, 1]], q=(0.5, 9)), runs=1)
    assert results[0][0][0, 0] == 0


def test_padv2_int16_value_with_other_quantization() -> None:
    """TFLM checks the pad value's scale and zero point only for int8."""
    assert_same_as_tflm(pad_model("int16", (2, 3), [[1, 0], [2, 1]], value=4, value_q=(0.2, 1)), runs=1)


def test_pad_with_three_inputs_is_padv2() -> None:
    """TFLM registers one kernel for both ops: PAD also takes the optional value."""
    assert_same_as_tflm(pad_model("float32", (2, 3), [[1, 0], [2, 1]], value=1.5, op="PAD"), runs=1)


def test_int64_paddings_read_as_int32_like_tflm() -> None:
    zeros = pad_model("float32", (2, 3), [[0, 0], [0, 0]], paddings_dtype="int64")
    assert_same_as_tflm(zeros, runs=1)  # misread zeros are still zeros
    real = pad_model("float32", (2, 3), [[1, 0], [2, 1]], paddings_dtype="int64")
    with pytest.raises(TflmError):
        run_tflm(real, [np.zeros((2, 3), np.float32)])
    with pytest.raises(PrepareError, match="read as int32"):
        Interpreter(real).allocate_tensors()


@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_pad_head_equals_tflm(dtype: str) -> None:
    model = pad_model(dtype, (1, 4, 4, 2), [[0, 0], [1, 1], [2, 0], [0, 0]])
    it = Interpreter(model, planner="tflm")
    it.allocate_tensors()
    assert it.head == tflm_arena(model)["head"]


REJECTED = {
    "int8 value zero point": dict(dtype="int8", value=4, value_q=(0.1, 2)),
    "int8 value scale": dict(dtype="int8", value=4, value_q=(0.2, 3)),
    "output shape": dict(dtype="float32", out_shape=(3, 7)),
    "6-D": dict(dtype="float32", shape=(1,) * 6, paddings=[[1, 1]] * 6),
}


@pytest.mark.parametrize("name", REJECTED)
def test_pad_rejects_what_tflm_rejects(name: str) -> None:
    kw = dict(REJECTED[name])
    model = pad_model(kw.pop("dtype"), kw.pop("shape", (2, 3)), kw.pop("paddings", [[1, 0], [2, 1]]), **kw)
    with pytest.raises(TflmError):
        run_tflm(model, [])
    with pytest.raises(PrepareError):
        Interpreter(model).allocate_tensors()


def test_pad_rejects_runtime_paddings() -> None:
    model = op_model("PAD", [T((2, 3), "float32"), T((2, 2), "int32")], [T((3, 6), "float32")])
    with pytest.raises(TflmError):
        run_tflm(model, [np.zeros((2, 3), np.float32), np.array([[1, 0], [2, 1]], np.int32)])
    with pytest.raises(PrepareError, match="constant"):
        Interpreter(model).allocate_tensors()


@pytest.mark.parametrize("dtype", ["int64", "bool", "uint8"])
def test_pad_unsupported_types(dtype: str) -> None:
    with pytest.raises(UnsupportedError):
        Interpreter(pad_model(dtype, (2, 3), [[1, 0], [2, 1]]))
