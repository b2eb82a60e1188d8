"""SPACE_TO_DEPTH against the TFLM wheel, byte for byte, and the models TFLM refuses."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import PrepareError, UnsupportedError
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_tflm, tflm_arena

DTYPES = ["float32", "int8"]


def s2d(dtype: str, in_shape: tuple[int, ...], block: int, out_shape: tuple[int, ...] | None = None) -> bytes:
    q = (0.1, -4) if dtype in ("int8", "int16") else (0.1, 4) if dtype == "uint8" else (None, None)
    if out_shape is None:
        n, h, w, c = in_shape
        out_shape = (n, h // max(block, 1), w // max(block, 1), c * block * block)
    return op_model("SPACE_TO_DEPTH", [T(in_shape, dtype, *q)], [T(out_shape, dtype, *q)], {"block_size": block})


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("in_shape,block", [((1, 4, 4, 1), 2), ((2, 6, 4, 3), 2), ((1, 6, 9, 2), 3),
                                            ((1, 3, 3, 5), 1), ((2, 4, 4, 2), 4)], ids=str)
def test_matches_tflm(dtype, in_shape, block) -> None:
    assert_same_as_tflm(s2d(dtype, in_shape, block), runs=2)


def test_known_layout() -> None:
    """A block x block tile becomes one pixel's channels, row by row."""
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    out = assert_same_as_tflm(s2d("float32", (1, 4, 4, 1), 2), [x])[0][0]
    assert out[0, 0, 0].tolist() == [0, 1, 4, 5]


def test_head_equals_tflm() -> None:
    model = s2d("int8", (1, 8, 8, 3), 2)
    assert Interpreter.from_bytes(model, planner="tflm").head == tflm_arena(model)["head"]


@pytest.mark.parametrize("name,model,match", [
    ("height not a multiple", s2d("float32", (1, 5, 4, 1), 2, out_shape=(1, 2, 2, 4)), "multiples"),
    ("block -1", s2d("float32", (1, 4, 4, 1), -1, out_shape=(1, 4, 4, 1)), "positive"),
    ("3-D", op_model("SPACE_TO_DEPTH", [T((4, 4, 1), "float32")], [T((2, 2, 4), "float32")], {"block_size": 2}),
     "4-D"),
])
def test_refused_like_tflm(name, model, match) -> None:
    with pytest.raises(TflmError, match="failed to prepare"):
        run_tflm(model, [])
    with pytest.raises(PrepareError, match=match):
        Interpreter(model).allocate_tensors()


@pytest.mark.parametrize("dtype", ["int16", "int32", "uint8"])
def test_unsupported_types(dtype) -> None:
    model = s2d(dtype, (1, 2, 2, 1), 2)
    with pytest.raises(TflmError, match="failed to prepare"):
        run_tflm(model, [])
    with pytest.raises(UnsupportedError):
        Interpreter(model)


def test_output_shape_must_be_the_computed_one() -> None:
    """TFLM rewrites the output's dims (writing past a smaller output tensor): micronn insists on the shape."""
    with pytest.raises(PrepareError, match="does not match"):
        Interpreter(s2d("float32", (1, 6, 6, 2), 3, out_shape=(1, 2, 2, 9))).allocate_tensors()
