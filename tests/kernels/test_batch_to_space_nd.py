"""BATCH_TO_SPACE_ND against the TFLM wheel, byte for byte, and the models micronn refuses."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import InvokeError, PrepareError, UnsupportedError
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_tflm, tflm_arena

DTYPES = ["float32", "int8"]


def b2s(dtype: str, in_shape: tuple[int, ...], block, crops, out_shape: tuple[int, ...], *, const: bool = True,
        param_dtype: str = "int32") -> bytes:
    q = (0.1, -3) if dtype != "float32" else (None, None)
    block = np.array(block, param_dtype)
    crops = np.array(crops, param_dtype).reshape(-1, 2)
    params = [T(block.shape, param_dtype, data=block if const else None),
              T(crops.shape, param_dtype, data=crops if const else None)]
    return op_model("BATCH_TO_SPACE_ND", [T(in_shape, dtype, *q), *params], [T(out_shape, dtype, *q)])


CASES = [
    ((4, 2, 2, 1), [2, 2], [[0, 0], [0, 0]], (1, 4, 4, 1)),
    ((12, 3, 2, 3), [2, 3], [[1, 0], [2, 1]], (2, 5, 3, 3)),
    ((6, 3, 3, 3), [3, 1], [[2, 2], [0, 0]], (2, 5, 3, 3)),
    ((2, 3, 3), [2], [[1, 1]], (1, 4, 3)),  # 3-D: one spatial dimension
    ((8, 2, 2, 1), [2, 2], [[0, 0], [0, 0]], (2, 4, 4, 1)),
    ((8, 2, 2, 1), [2, 2], [[0, 0], [0, 0]], (1, 4, 4, 1)),  # two inputs per output: the later one wins
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("in_shape,block,crops,out_shape", CASES, ids=str)
def test_matches_tflm(dtype, in_shape, block, crops, out_shape) -> None:
    assert_same_as_tflm(b2s(dtype, in_shape, block, crops, out_shape), runs=2)


@pytest.mark.parametrize("in_shape,block,crops,out_shape", CASES[:4], ids=str)
def test_block_and_crops_given_at_run_time(in_shape, block, crops, out_shape) -> None:
    model = b2s("float32", in_shape, block, crops, out_shape, const=False)
    x = np.random.default_rng(2).uniform(-1, 1, in_shape).astype(np.float32)
    assert_same_as_tflm(model, [x, np.array(block, np.int32), np.array(crops, np.int32)])


def test_known_layout() -> None:
    x = np.arange(4, dtype=np.float32).reshape(4, 1, 1, 1)
    out = assert_same_as_tflm(b2s("float32", (4, 1, 1, 1), [2, 2], [[0, 0], [0, 0]], (1, 2, 2, 1)), [x])[0][0]
    assert out.reshape(2, 2).tolist() == [[0, 1], [2, 3]]


def test_head_equals_tflm() -> None:
    model = b2s("int8", (4, 4, 4, 3), [2, 2], [[0, 0], [0, 0]], (1, 8, 8, 3))
    assert Interpreter.from_bytes(model, planner="tflm").head == tflm_arena(model)["head"]


def test_refused_like_tflm() -> None:
    model = b2s("float32", (4, 2, 2, 2, 1), [2, 2, 1], [[0, 0]] * 3, (1, 4, 4, 2, 1))
    with pytest.raises(TflmError, match="failed to prepare"):
        run_tflm(model, [])
    with pytest.raises(PrepareError, match="3-D or 4-D"):
        Interpreter(model).allocate_tensors()


@pytest.mark.parametrize("dtype", ["int16", "int32"])
def test_unsupported_types(dtype) -> None:
    model = b2s(dtype, (4, 2, 2, 1), [2, 2], [[0, 0], [0, 0]], (1, 4, 4, 1))
    with pytest.raises(TflmError, match="not supported"):
        run_tflm(model, [np.zeros((4, 2, 2, 1), dtype)])
    with pytest.raises(UnsupportedError):
        Interpreter(model)


def test_uncovered_output_is_refused() -> None:
    """TFLM never checks the output shape against the block and crops: output elements no input lands on keep
    stale arena bytes, so micronn refuses (at prepare, or at invoke for parameters given at run time)."""
    with pytest.raises(PrepareError, match="unwritten"):
        Interpreter(b2s("float32", (4, 2, 2, 1), [2, 2], [[0, 0], [0, 0]], (1, 5, 4, 1))).allocate_tensors()
    it = Interpreter.from_bytes(b2s("float32", (4, 2, 2, 1), [2, 2], [[0, 0], [0, 0]], (1, 4, 4, 1), const=False))
    it.set_input(np.zeros((4, 2, 2, 1), np.float32), 0)
    it.set_input(np.array([1, 2], np.int32), 1)
    it.set_input(np.zeros((2, 2), np.int32), 2)
    with pytest.raises(InvokeError, match="unwritten"):
        it.invoke()


def test_int64_parameters_are_refused() -> None:
    """TFLM reads them as int32 (an int64 block [2, 2] reads as [2, 0]: it divides by zero and the process
    dies, so the wheel is not run here)."""
    with pytest.raises(PrepareError, match="int32"):
        Interpreter(b2s("float32", (4, 2, 2, 1), [2, 2], [[0, 0], [0, 0]], (1, 4, 4, 1),
                        param_dtype="int64")).allocate_tensors()
