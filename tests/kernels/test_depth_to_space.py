"""DEPTH_TO_SPACE against the TFLM wheel, byte for byte, and the models TFLM refuses."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import PrepareError, UnsupportedError
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_tflm, tflm_arena

DTYPES = ["float32", "int8"]


def d2s(dtype: str, in_shape: tuple[int, ...], block: int, out_shape: tuple[int, ...] | None = None) -> bytes:
    q = (0.1, -4) if dtype in ("int8", "int16") else (0.1, 4) if dtype == "uint8" else (None, None)
    if out_shape is None:
        n, h, w, c = in_shape
        out_shape = (n, h * block, w * block, c // (block * block))
    return op_model("DEPTH_TO_SPACE", [T(in_shape, dtype, *q)], [T(out_shape, dtype, *q)], {"block_size": block})


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("in_shape,block", [((1, 2, 2, 4), 2), ((2, 3, 4, 8), 2), ((1, 2, 3, 18), 3),
                                            ((1, 3, 3, 5), 1), ((2, 1, 1, 32), 4)], ids=str)
def test_matches_tflm(dtype, in_shape, block) -> None:
    assert_same_as_tflm(d2s(dtype, in_shape, block), runs=2)


def test_known_layout() -> None:
    """Each input pixel's channels fill a block x block tile row by row."""
    x = np.arange(8, dtype=np.float32).reshape(1, 1, 1, 8)
    out = assert_same_as_tflm(d2s("float32", (1, 1, 1, 8), 2), [x])[0][0]
    assert out[0, :, :, 0].tolist() == [[0, 2], [4, 6]]


def test_head_equals_tflm() -> None:
    model = d2s("int8", (1, 4, 4, 16), 2)
    assert Interpreter.from_bytes(model, planner="tflm").head == tflm_arena(model)["head"]


@pytest.mark.parametrize("name,model,match", [
    ("depth not a multiple", d2s("float32", (1, 2, 2, 6), 2, out_shape=(1, 4, 4, 1)), "multiple"),
    ("block 0", d2s("float32", (1, 2, 2, 4), 0, out_shape=(1, 4, 4, 1)), "positive"),
    ("3-D", op_model("DEPTH_TO_SPACE", [T((2, 2, 4), "float32")], [T((4, 4, 1), "float32")], {"block_size": 2}),
     "4-D"),
])
def test_refused_like_tflm(name, model, match) -> None:
    with pytest.raises(TflmError, match="failed to prepare"):
        run_tflm(model, [])
    with pytest.raises(PrepareError, match=match):
        Interpreter(model).allocate_tensors()


@pytest.mark.parametrize("dtype", ["int16", "int32", "uint8"])
def test_unsupported_types(dtype) -> None:
    model = d2s(dtype, (1, 2, 2, 4), 2)
    with pytest.raises(TflmError, match="failed to prepare"):
        run_tflm(model, [])
    with pytest.raises(UnsupportedError):
        Interpreter(model)


def test_output_shape_must_be_the_computed_one() -> None:
    """TFLM rewrites the output's dims to the shape it computes (and writes past a smaller output): micronn
    insists the model says that shape."""
    with pytest.raises(PrepareError, match="does not match"):
        Interpreter(d2s("float32", (1, 2, 2, 4), 2, out_shape=(1, 2, 8, 1))).allocate_tensors()
