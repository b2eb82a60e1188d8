"""STRIDED_SLICE against the TFLM wheel, byte for byte: masks, negative indices and strides, shrinking."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import PrepareError, UnsupportedError
from micronn.kernels.strided_slice import slice_start, slice_stop
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_tflm, tflm_arena
from micronn.tflite import schema

DTYPES = ["float32", "int8", "int16", "int32", "bool"]


def out_shape_of(shape, begin, end, strides, begin_mask=0, end_mask=0, shrink_axis_mask=0) -> tuple[int, ...]:
    """The output shape TFLM expects (ellipsis, new_axis and offset ignored, like TFLM)."""
    dims = []
    for axis, size in enumerate(shape):
        if shrink_axis_mask >> axis & 1:
            continue
        start = slice_start(begin[axis], strides[axis], size, bool(begin_mask >> axis & 1))
        stop = slice_stop(end[axis], strides[axis], size, bool(end_mask >> axis & 1))
        dims.append(len(range(start, stop, strides[axis])))
    return tuple(dims)


def slice_model(dtype: str, shape, begin, end, strides, *, index_dtype: str = "int32", out_shape=None,
                constant_begin: bool = True, **options) -> bytes:
    masks = {k: v for k, v in options.items() if k in ("begin_mask", "end_mask", "shrink_axis_mask")}
    if out_shape is None:
        out_shape = out_shape_of(shape, begin, end, strides, **masks)
    n = len(begin)
    q = (0.1, 2) if dtype in ("int8", "int16") else (None, None)
    inputs = [T(shape, dtype, *q), T((n,), index_dtype, data=begin if constant_begin else None),
              T((n,), index_dtype, data=end), T((n,), index_dtype, data=strides)]
    return op_model("STRIDED_SLICE", inputs, [T(out_shape, dtype, *q)], schema.options("STRIDED_SLICE", **options))


CASES = [
    ((4, 5, 6), [1, 0, 2], [3, 5, 6], [1, 2, 2], {}),
    ((4, 5, 6), [-1, 4, -1], [0, 0, -7], [-1, -2, -2], {}),  # negative indices and strides
    ((4, 5, 6), [1, 0, 2], [3, 5, 6], [1, 2, 2], {"begin_mask": 5, "end_mask": 2}),
    ((4, 5, 6), [3, 7, -9], [-9, 1, 9], [-2, -3, 4], {"begin_mask": 2, "end_mask": 4}),
    ((4, 5, 6), [1, 0, 2], [3, 5, 6], [1, 2, 2], {"shrink_axis_mask": 1}),
    ((4, 5, 6), [-1, 0, 2], [3, 5, 6], [1, 1, 1], {"shrink_axis_mask": 5}),
    ((3, 4), [1, 2], [2, 3], [1, 1], {"shrink_axis_mask": 3}),  # down to a scalar
    ((2, 3, 4, 5), [0, 1, 0, 2], [2, 3, 4, 5], [1, 1, 2, 1], {}),  # 4-D, TFLM's limit
    ((6,), [1], [5], [2], {}),
    ((6,), [-100], [100], [1], {}),  # clamped to the axis
    ((1, 3), [0, 0, 0], [1, 3, 9], [1, 1, 1], {}),  # longer index vectors: TFLM reads the first rank values
    ((4,), [0], [4], [1], {"shrink_axis_mask": 8}),  # mask bits past the rank are ignored
    ((4,), [0], [1], [1], {"shrink_axis_mask": 1}),  # tiny_unet's idiom: the batch out of SHAPE's vector
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,begin,end,strides,opts", CASES, ids=str)
def test_strided_slice_matches_tflm(dtype: str, shape, begin, end, strides, opts: dict) -> None:
    assert_same_as_tflm(slice_model(dtype, shape, begin, end, strides, **opts), runs=2)


def test_strided_slice_random_against_tflm() -> None:
    """Random non-empty slices over every type, with random begin/end masks."""
    rng = np.random.default_rng(11)
    checked = 0
    for _ in range(400):
        if checked == 25:
            break
        rank = int(rng.integers(1, 5))
        shape = tuple(int(v) for v in rng.integers(1, 6, rank))
        begin, end = [[int(v) for v in rng.integers(-7, 8, rank)] for _ in range(2)]
        strides = [int(v) for v in rng.choice([-3, -2, -1, 1, 2, 3], rank)]
        opts = {"begin_mask": int(rng.integers(0, 2**rank)), "end_mask": int(rng.integers(0, 2**rank))}
        shape_out = out_shape_of(shape, begin, end, strides, **opts)
        if 0 in shape_out:
            continue
        assert_same_as_tflm(slice_model(DTYPES[checked % 5], shape, begin, end, strides, **opts), runs=1)
        checked += 1
    assert checked == 25


def test_strided_slice_ignores_ellipsis_new_axis_and_offset_like_tflm() -> None:
    for opts in ({"ellipsis_mask": 1}, {"new_axis_mask": 1}, {"offset": True}):
        model = slice_model("float32", (3, 6), [1, 2], [2, 5], [1, 1], out_shape=(1, 3), **opts)
        out = assert_same_as_tflm(model, runs=1)[0][0]
        assert out.shape == (1, 3)


def test_strided_slice_int64_indices_read_as_int32_like_tflm() -> None:
    model = slice_model("float32", (3, 6), [1, 2], [2, 5], [1, 1], index_dtype="int64")
    with pytest.raises(TflmError):
        run_tflm(model, [np.zeros((3, 6), np.float32)])
    with pytest.raises(PrepareError):
        Interpreter(model).allocate_tensors()


def test_strided_slice_head_equals_tflm() -> None:
    model = slice_model("float32", (4, 5, 6), [1, 0, 2], [3, 5, 6], [1, 2, 2])
    it = Interpreter(model, planner="tflm")
    it.allocate_tensors()
    assert it.head == tflm_arena(model)["head"]


REJECTED_BY_BOTH = {
    "5-D": ((2, 3, 4, 5, 6), [0] * 5, [2, 3, 4, 5, 6], [1] * 5, {}),
    "zero stride": ((3, 6), [1, 2], [2, 5], [1, 0], {"out_shape": (1, 3)}),
    "short begin": ((3, 6), [1], [2], [1], {"out_shape": (1, 6)}),
    "output shape": ((3, 6), [1, 2], [2, 5], [1, 1], {"out_shape": (1, 4)}),
    "empty slice": ((3, 6), [2, 2], [1, 5], [1, 1], {"out_shape": (0, 3)}),  # TFLM: "dynamic tensor"
}


@pytest.mark.parametrize("name", REJECTED_BY_BOTH)
def test_strided_slice_rejects_what_tflm_rejects(name: str) -> None:
    shape, begin, end, strides, opts = REJECTED_BY_BOTH[name]
    model = slice_model("float32", shape, begin, end, strides, **opts)
    with pytest.raises(TflmError):
        run_tflm(model, [np.zeros(shape, np.float32)])
    with pytest.raises(PrepareError):
        Interpreter(model).allocate_tensors()


def test_strided_slice_rejects_runtime_begin() -> None:
    model = slice_model("float32", (3, 6), [1, 2], [2, 5], [1, 1], constant_begin=False)
    with pytest.raises(PrepareError, match="constant"):
        Interpreter(model).allocate_tensors()


@pytest.mark.parametrize("begin,strides", [([7, 0], [1, 1]), ([1, 0], [-1, 1])])
def test_strided_slice_rejects_shrink_that_tflm_leaves_unwritten(begin, strides) -> None:
    """TFLM accepts these but writes nothing (the output keeps stale arena bytes): micronn refuses them."""
    model = slice_model("float32", (4, 3), begin, [8, 3], strides, shrink_axis_mask=1)
    with pytest.raises(PrepareError, match="unwritten"):
        Interpreter(model).allocate_tensors()


@pytest.mark.parametrize("dtype", ["int64", "uint8"])
def test_strided_slice_unsupported_types(dtype: str) -> None:
    with pytest.raises(UnsupportedError):
        Interpreter(slice_model(dtype, (4,), [0], [2], [1]))
