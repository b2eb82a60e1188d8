"""MIRROR_PAD against the TFLM wheel, byte for byte: REFLECT and SYMMETRIC, int32/int64 and computed paddings."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import InvokeError, PrepareError, UnsupportedError
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_tflm, tflm_arena

REFLECT, SYMMETRIC = 0, 1


def mirror_model(dtype: str, shape, pads, mode: int, pad_dtype: str = "int32", constant: bool = True,
                 out_shape=None) -> bytes:
    q = (0.1, 3) if dtype == "int8" else (None, None)
    if out_shape is None:
        out_shape = tuple(d + a + b for d, (a, b) in zip(shape, pads))
    pads_t = T(np.shape(pads), pad_dtype, data=pads if constant else None)
    return op_model("MIRROR_PAD", [T(shape, dtype, *q), pads_t], [T(out_shape, dtype, *q)], {"mode": mode})


CASES = [
    ((3, 4), [[1, 2], [2, 0]]),
    ((5,), [[4, 4]]),  # the largest REFLECT padding
    ((2, 3, 4, 5), [[0, 1], [2, 2], [3, 0], [1, 3]]),
    ((1, 3, 1), [[0, 0], [1, 2], [0, 0]]),
    ((2, 2, 2, 2, 2, 2), [[1, 1]] * 6),
]


@pytest.mark.parametrize("dtype", ["float32", "int8"])
@pytest.mark.parametrize("mode", [REFLECT, SYMMETRIC], ids=["reflect", "symmetric"])
@pytest.mark.parametrize("pad_dtype", ["int32", "int64"])
@pytest.mark.parametrize("shape,pads", CASES, ids=str)
def test_matches_tflm(dtype: str, mode: int, pad_dtype: str, shape: tuple, pads: list) -> None:
    assert_same_as_tflm(mirror_model(dtype, shape, pads, mode, pad_dtype), runs=2)


@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_symmetric_pads_up_to_the_full_extent(dtype: str) -> None:
    assert_same_as_tflm(mirror_model(dtype, (3, 2), [[3, 3], [2, 1]], SYMMETRIC), runs=2)
    assert_same_as_tflm(mirror_model(dtype, (1, 4), [[1, 1], [0, 4]], SYMMETRIC), runs=2)


@pytest.mark.parametrize("mode", [REFLECT, SYMMETRIC], ids=["reflect", "symmetric"])
def test_computed_paddings(mode: int) -> None:
    """TFLM reads the paddings at invoke, so they may be a model input (the output shape stays static)."""
    model = mirror_model("float32", (3, 4), [[1, 1], [1, 1]], mode, constant=False)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    for pads in ([[1, 1], [1, 1]], [[2, 0], [0, 2]], [[0, 2], [2, 0]]):
        assert_same_as_tflm(model, [x, np.array(pads, np.int32)])
    it = Interpreter(model)
    it.set_input(x, 0)
    it.set_input(np.array([[1, 1], [2, 1]], np.int32), 1)
    with pytest.raises(InvokeError, match="does not give the output"):
        it.invoke()


@pytest.mark.parametrize("shape", [(3, 4), (2, 2, 2, 2, 2)], ids=str)
def test_head_equals_tflm(shape: tuple) -> None:
    """TFLM asks for two scratch buffers of 4 bytes per dimension (output and input strides)."""
    model = mirror_model("int8", shape, [[1, 1]] * len(shape), REFLECT)
    it = Interpreter(model, planner="tflm")
    it.allocate_tensors()
    assert it.head == tflm_arena(model)["head"]


def test_rejects_paddings_of_the_wrong_shape() -> None:
    model = mirror_model("float32", (3, 4), [[1, 1], [1, 1], [0, 0]], REFLECT, out_shape=(5, 6))
    with pytest.raises(TflmError):
        run_tflm(model, [])
    with pytest.raises(PrepareError, match="shape"):
        Interpreter(model).allocate_tensors()


@pytest.mark.parametrize("shape,pads,mode", [
    ((3, 4), [[3, 0], [0, 0]], REFLECT),  # REFLECT allows at most size - 1
    ((3, 4), [[0, 0], [0, 5]], SYMMETRIC),  # SYMMETRIC allows at most size
    ((3, 4), [[-1, 0], [0, 0]], REFLECT),
], ids=["reflect too far", "symmetric too far", "negative"])
def test_rejects_paddings_tensorflow_rejects(shape: tuple, pads: list, mode: int) -> None:
    """TFLM checks nothing here and reads outside the input; micronn refuses."""
    with pytest.raises(PrepareError, match="outside"):
        Interpreter(mirror_model("float32", shape, pads, mode)).allocate_tensors()


def test_rejects_wrong_output_shape() -> None:
    model = mirror_model("float32", (3, 4), [[1, 1], [1, 1]], REFLECT, out_shape=(5, 7))
    with pytest.raises(PrepareError, match="does not give the output"):
        Interpreter(model).allocate_tensors()


@pytest.mark.parametrize("dtype", ["int16", "int32", "bool"])
def test_unsupported_types(dtype: str) -> None:
    model = mirror_model(dtype, (3, 4), [[1, 1], [1, 1]], REFLECT)
    with pytest.raises(TflmError):
        run_tflm(model, [np.zeros((3, 4), dtype)])
    with pytest.raises(UnsupportedError):
        Interpreter(model)
