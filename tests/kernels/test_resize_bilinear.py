"""RESIZE_BILINEAR against the TFLM wheel, byte for byte: float32 arithmetic and the int8 fixed-point path."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import PrepareError, UnsupportedError
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_tflm, tflm_arena

DTYPES = ["float32", "int8"]
MODES = [(False, False), (True, False), (False, True)]  # (align_corners, half_pixel_centers); both is refused


def resize(dtype: str, in_shape: tuple[int, ...], size: tuple[int, ...], *, align_corners: bool = False,
           half_pixel_centers: bool = False, out_shape: tuple[int, ...] | None = None,
           q: tuple = (0.1, 3), size_dtype: str = "int32", const_size: bool = True) -> bytes:
    """A bilinear resize of an NHWC input to ``size`` (the first two values); int8 uses ``q`` on both sides."""
    q = q if dtype == "int8" else (None, None)
    if out_shape is None:
        out_shape = (in_shape[0], *size[:2], in_shape[-1])
    data = np.array(size, size_dtype) if const_size else None
    return op_model("RESIZE_BILINEAR", [T(in_shape, dtype, *q), T((len(size),), size_dtype, data=data)],
                    [T(out_shape, dtype, *q)],
                    {"align_corners": align_corners, "half_pixel_centers": half_pixel_centers})


CASES = [
    ((1, 3, 4, 2), (5, 7)),
    ((2, 4, 4, 3), (8, 8)),  # 2x
    ((1, 9, 7, 1), (4, 3)),  # downsample
    ((1, 1, 1, 2), (3, 2)),  # from a single pixel
    ((1, 5, 5, 1), (1, 1)),  # to a single pixel
    ((2, 13, 17, 2), (29, 11)),
    ((1, 2, 3, 1), (45, 40)),  # a scale that rounds up in 1/1024 units, staying inside the input
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("align_corners,half_pixel_centers", MODES)
@pytest.mark.parametrize("in_shape,size", CASES, ids=str)
def test_matches_tflm(dtype, align_corners, half_pixel_centers, in_shape, size) -> None:
    assert_same_as_tflm(resize(dtype, in_shape, size, align_corners=align_corners,
                               half_pixel_centers=half_pixel_centers), runs=2)


@pytest.mark.parametrize("half_pixel_centers", [False, True])
def test_int8_extremes_wrap_like_c(half_pixel_centers) -> None:
    """With half_pixel_centers the first outputs extrapolate (weights above 1 and below 0), so int8 results can
    leave the int8 range: TFLM's static_cast wraps them, and so does micronn."""
    model = resize("int8", (1, 3, 3, 1), (8, 8), half_pixel_centers=half_pixel_centers)
    x = np.array([127, -128, 127, -128, 127, -128, 127, -128, 127], np.int8).reshape(1, 3, 3, 1)
    assert_same_as_tflm(model, [x])
    assert_same_as_tflm(model, [np.full((1, 3, 3, 1), -128, np.int8)])


def test_float32_special_values() -> None:
    model = resize("float32", (1, 2, 3, 1), (3, 5))
    x = np.array([np.inf, -np.inf, 1.0, np.nan, 3e38, -0.0], np.float32).reshape(1, 2, 3, 1)
    assert_same_as_tflm(model, [x])


def test_int8_lower_index_past_the_last_column_reads_the_next_row() -> None:
    """TFLM's int8 scale (1/1024 units, rounded to nearest) can round up, and it does not clamp the lower index:
    resizing a width of 1 to 66 reads "column 1", which in memory is the next row's first pixel. micronn reads
    the same element (the input holds distinct values, so a clamped read would differ)."""
    model = resize("int8", (1, 10, 1, 2), (3, 66))
    x = np.arange(20, dtype=np.int8).reshape(1, 10, 1, 2) * 5
    assert_same_as_tflm(model, [x])
    assert_same_as_tflm(resize("int8", (1, 10, 2, 1), (3, 130)), runs=2)


def test_int8_read_past_the_input_is_refused() -> None:
    """Where TFLM's unclamped lower index reads past the end of the input (the last batch of a 1x1 -> 66x66
    resize), its result is undefined: micronn refuses; the float32 kernel has no such problem."""
    with pytest.raises(PrepareError, match="reads past the end of the input"):
        Interpreter(resize("int8", (2, 1, 1, 3), (66, 66))).allocate_tensors()
    assert_same_as_tflm(resize("float32", (2, 1, 1, 3), (66, 66)), runs=1)


def test_only_the_first_two_size_values_are_read() -> None:
    """TFLM's RESIZE_BILINEAR checks the size is 1-D int32 but not its length."""
    assert_same_as_tflm(resize("float32", (1, 3, 4, 2), (5, 7, 9)), runs=1)


def test_int8_copies_without_requantizing() -> None:
    model = op_model("RESIZE_BILINEAR", [T((1, 2, 2, 1), "int8", 0.1, 0), T((2,), "int32", data=[3, 3])],
                     [T((1, 3, 3, 1), "int8", 0.7, -20)])
    assert_same_as_tflm(model, runs=2)


def test_head_equals_tflm() -> None:
    model = resize("int8", (1, 6, 5, 3), (12, 10))
    assert Interpreter.from_bytes(model, planner="tflm").head == tflm_arena(model)["head"]


@pytest.mark.parametrize("name,model,match", [
    ("align_corners and half_pixel_centers",
     resize("float32", (1, 3, 4, 2), (5, 7), align_corners=True, half_pixel_centers=True), "cannot both"),
    ("size int64", resize("float32", (1, 3, 4, 2), (5, 7), size_dtype="int64"), "int32"),
    ("3-D input", op_model("RESIZE_BILINEAR", [T((3, 4, 2), "float32"), T((2,), "int32", data=[5, 7])],
                           [T((5, 7, 2), "float32")]), "4-D"),
    ("size not constant", resize("float32", (1, 3, 4, 2), (5, 7), const_size=False), "constant"),
])
def test_refused_like_tflm(name, model, match) -> None:
    with pytest.raises(TflmError, match="failed to prepare"):
        run_tflm(model, [])
    with pytest.raises(PrepareError, match=match):
        Interpreter(model).allocate_tensors()


@pytest.mark.parametrize("dtype", ["int16", "uint8", "int32"])
def test_unsupported_types(dtype) -> None:
    model = op_model("RESIZE_BILINEAR", [T((1, 2, 2, 1), dtype, 0.1, 0), T((2,), "int32", data=[4, 4])],
                     [T((1, 4, 4, 1), dtype, 0.1, 0)])
    with pytest.raises(TflmError, match="requires float or int8"):
        run_tflm(model, [np.zeros((1, 2, 2, 1), dtype)])
    with pytest.raises(UnsupportedError):
        Interpreter(model)


@pytest.mark.parametrize("out_shape", [(1, 4, 7, 2), (1, 6, 7, 2), (1, 5, 7, 1)])
def test_output_shape_must_match_size(out_shape) -> None:
    """TFLM writes size[0] x size[1] pixels whatever the output tensor holds: the wheel is not run here."""
    with pytest.raises(PrepareError, match="does not match"):
        Interpreter(resize("float32", (1, 3, 4, 2), (5, 7), out_shape=out_shape)).allocate_tensors()
