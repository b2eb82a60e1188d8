"""RESIZE_NEAREST_NEIGHBOR against the TFLM wheel, byte for byte, and the models TFLM refuses."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import PrepareError, UnsupportedError
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_tflm, tflm_arena

DTYPES = ["float32", "int8", "int16"]
MODES = [(False, False), (True, False), (False, True), (True, True)]  # (align_corners, half_pixel_centers)


def resize(dtype: str, in_shape: tuple[int, ...], size: tuple[int, ...], *, align_corners: bool = False,
           half_pixel_centers: bool = False, out_shape: tuple[int, ...] | None = None,
           size_dtype: str = "int32", const_size: bool = True) -> bytes:
    """A resize of an NHWC input to ``size``; int8/int16 get scale 0.1 and zero point 3 (int16: 0)."""
    q = {"int8": (0.1, 3), "int16": (0.1, 0)}.get(dtype, (None, None))
    if out_shape is None:
        out_shape = (in_shape[0], *size, in_shape[-1])
    data = np.array(size, size_dtype) if const_size else None
    return op_model("RESIZE_NEAREST_NEIGHBOR", [T(in_shape, dtype, *q), T((len(size),), size_dtype, data=data)],
                    [T(out_shape, dtype, *q)],
                    {"align_corners": align_corners, "half_pixel_centers": half_pixel_centers})


CASES = [
    ((1, 3, 4, 2), (5, 7)),  # upsample by odd factors
    ((2, 4, 4, 3), (8, 8)),  # 2x
    ((1, 9, 7, 1), (4, 3)),  # downsample
    ((1, 1, 1, 2), (3, 2)),  # from a single pixel
    ((1, 5, 5, 1), (1, 1)),  # to a single pixel
    ((1, 13, 17, 2), (29, 11)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("align_corners,half_pixel_centers", MODES)
@pytest.mark.parametrize("in_shape,size", CASES, ids=str)
def test_matches_tflm(dtype, align_corners, half_pixel_centers, in_shape, size) -> None:
    assert_same_as_tflm(resize(dtype, in_shape, size, align_corners=align_corners,
                               half_pixel_centers=half_pixel_centers), runs=1)


@pytest.mark.parametrize("in_hw,size", [((2, 1), (48, 123)), ((3, 5), (100, 3)), ((59, 2), (247, 61))], ids=str)
@pytest.mark.parametrize("align_corners,half_pixel_centers", MODES)
def test_float32_index_arithmetic(in_hw, size, align_corners, half_pixel_centers) -> None:
    """Sizes where float32 rounding matters: 23.5 * (1/47) is 0.49999997f, which C's round() takes to 0.

    The input holds each pixel's own index, so any wrong source index shows.
    """
    in_shape = (1, *in_hw, 1)
    model = resize("int16", in_shape, size, align_corners=align_corners, half_pixel_centers=half_pixel_centers)
    assert_same_as_tflm(model, [np.arange(np.prod(in_shape), dtype=np.int16).reshape(in_shape)])


def test_int8_copies_without_requantizing() -> None:
    """TFLM copies quantized values whatever the output's scale and zero point."""
    model = op_model("RESIZE_NEAREST_NEIGHBOR", [T((1, 2, 2, 1), "int8", 0.1, 0), T((2,), "int32", data=[4, 4])],
                     [T((1, 4, 4, 1), "int8", 0.7, -20)])
    assert_same_as_tflm(model, runs=2)


def test_head_equals_tflm() -> None:
    model = resize("int8", (1, 6, 5, 3), (12, 10))
    assert Interpreter.from_bytes(model, planner="tflm").head == tflm_arena(model)["head"]


@pytest.mark.parametrize("name,model,match", [
    ("size int64", resize("float32", (1, 3, 4, 2), (5, 7), size_dtype="int64"), "int32"),
    ("size of 3", resize("float32", (1, 3, 4, 2), (5, 7, 1), out_shape=(1, 5, 7, 2)), "shape"),
    ("3-D input", op_model("RESIZE_NEAREST_NEIGHBOR", [T((3, 4, 2), "float32"), T((2,), "int32", data=[5, 7])],
                           [T((5, 7, 2), "float32")]), "4-D"),
    ("size not constant", resize("float32", (1, 3, 4, 2), (5, 7), const_size=False), "constant"),
])
def test_refused_like_tflm(name, model, match) -> None:
    with pytest.raises(TflmError, match="failed to prepare"):
        run_tflm(model, [])
    with pytest.raises(PrepareError, match=match):
        Interpreter(model).allocate_tensors()


@pytest.mark.parametrize("dtype", ["uint8", "int32"])
def test_unsupported_types(dtype) -> None:
    model = resize(dtype, (1, 2, 2, 1), (4, 4))
    with pytest.raises(TflmError, match="not supported"):
        run_tflm(model, [np.zeros((1, 2, 2, 1), dtype)])
    with pytest.raises(UnsupportedError):
        Interpreter(model)


@pytest.mark.parametrize("out_shape", [(1, 4, 7, 2), (1, 6, 7, 2), (1, 5, 7, 1)])
def test_output_shape_must_match_size(out_shape) -> None:
    """TFLM writes size[0] x size[1] pixels whatever the output tensor holds (out of bounds when it is
    smaller), so micronn refuses an output that disagrees with the size; the wheel is not run here."""
    with pytest.raises(PrepareError, match="does not match"):
        Interpreter(resize("float32", (1, 3, 4, 2), (5, 7), out_shape=out_shape)).allocate_tensors()
