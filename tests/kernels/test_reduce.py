"""MEAN, SUM, REDUCE_MAX and REDUCE_MIN against the TFLM wheel, byte for byte, and what TFLM refuses."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import InvokeError, PrepareError, UnsupportedError
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_tflm, tflm_arena

QUANT = {"int8": ((0.05, -3), (0.03, 5)), "int16": ((0.02, 0), (0.05, 0)), "float32": ((None, None), (None, None))}


def reduce_model(op: str, dtype: str, shape: tuple[int, ...], axes: list[int], keep_dims: bool = False,
                 qin: tuple | None = None, qout: tuple | None = None, constant_axes: bool = True,
                 axis_dtype: str = "int32", out_shape: tuple[int, ...] | None = None) -> bytes:
    """One reducer; the output shape follows keep_dims unless given."""
    qin = qin or QUANT[dtype][0]
    qout = qout or (qin if op.startswith("REDUCE") else QUANT[dtype][1])
    if out_shape is None:
        rank = len(shape)
        reduced = {a + rank if a < 0 else a for a in axes}
        out_shape = tuple(1 if k in reduced else d for k, d in enumerate(shape) if keep_dims or k not in reduced)
    axis = T((len(axes),), axis_dtype, data=axes if constant_axes else None)
    return op_model(op, [T(shape, dtype, *qin), axis], [T(out_shape or (1,), dtype, *qout)], {"keep_dims": keep_dims})


CASES = [
    ((2, 3, 4), [1], False),
    ((2, 3, 4), [-1], True),
    ((2, 3, 4), [0, 2], False),
    ((2, 3, 4), [2, 0, -1], True),  # duplicates count once
    ((1, 5, 5, 8), [1, 2], True),  # global average pooling
    ((2, 4, 3, 5), [2, 1], False),
    ((7,), [0], False),
    ((3, 5), [0, 1], True),
    ((2, 1, 3, 2, 2), [0, 2, 4], False),  # 5-D, three axes
    ((2, 1, 2, 1, 2, 3), [5, 1, 3, 0], True),  # 6-D
]


@pytest.mark.parametrize("op", ["MEAN", "SUM"])
@pytest.mark.parametrize("dtype", ["float32", "int8", "int16"])
@pytest.mark.parametrize("shape,axes,keep", CASES, ids=str)
def test_mean_sum_match_tflm(op: str, dtype: str, shape: tuple, axes: list, keep: bool) -> None:
    assert_same_as_tflm(reduce_model(op, dtype, shape, axes, keep), runs=2)


@pytest.mark.parametrize("op", ["REDUCE_MAX", "REDUCE_MIN"])
@pytest.mark.parametrize("dtype", ["float32", "int8"])
@pytest.mark.parametrize("shape,axes,keep", CASES, ids=str)
def test_max_min_match_tflm(op: str, dtype: str, shape: tuple, axes: list, keep: bool) -> None:
    assert_same_as_tflm(reduce_model(op, dtype, shape, axes, keep), runs=2)


# (input scale, zero point), (output scale, zero point): equal, small and large ratios, extreme zero points
INT8_PARAMS = [
    ((0.1, 0), (0.1, 0)),
    ((0.05, 7), (0.05, 7)),
    ((0.5, 100), (0.003, -128)),
    ((0.02, -128), (0.7, 127)),
    ((1e-6, 3), (0.1, 0)),  # the 1/count pre-shift is clamped to 31 + shift
    ((0.1, 3), (1e-5, 0)),
]


@pytest.mark.parametrize("op", ["MEAN", "SUM"])
@pytest.mark.parametrize("qin,qout", INT8_PARAMS, ids=str)
def test_mean_sum_int8_rescaling(op: str, qin: tuple, qout: tuple) -> None:
    assert_same_as_tflm(reduce_model(op, "int8", (2, 6, 6, 3), [1, 2], True, qin, qout), runs=2)
    model = reduce_model(op, "int8", (3, 300), [1], False, qin, qout)
    assert_same_as_tflm(model, runs=1)
    for v in (-128, 127):
        assert_same_as_tflm(model, [np.full((3, 300), v, np.int8)])


@pytest.mark.parametrize("op", ["MEAN", "SUM"])
@pytest.mark.parametrize("qin,qout", [((0.5, 0), (0.25, 0)), ((1e-6, 0), (1.0, 0)), ((0.9, 0), (1e-4, 0))], ids=str)
def test_mean_sum_int16_long_rows(op: str, qin: tuple, qout: tuple) -> None:
    """70,000 extreme int16 values overflow TFLM's int32 sum, which wraps; micronn wraps the same way."""
    model = reduce_model(op, "int16", (1, 70000), [1], False, qin, qout)
    for v in (-32768, 32767):
        assert_same_as_tflm(model, [np.full((1, 70000), v, np.int16)])
    assert_same_as_tflm(model, runs=1)


@pytest.mark.parametrize("op", ["MEAN", "SUM"])
def test_mean_sum_int16_zero_points(op: str) -> None:
    """TFLM does not insist on symmetric int16 here: non-zero zero points are used as given."""
    assert_same_as_tflm(reduce_model(op, "int16", (3, 50), [1], False, (0.01, 7), (0.02, -5)), runs=2)


def float_specials() -> np.ndarray:
    """Rows with NaNs (of several payloads), signed zeros, infinities and values that overflow when summed."""
    x = np.zeros((9, 6), np.float32)
    bits = x.view(np.uint32)
    bits[0, 1], bits[0, 3] = 0x7FC00001, 0xFFC00002  # two NaNs: the first one reached is kept
    bits[1, 1], bits[1, 3] = 0xFFC00003, 0x7F800004  # a quiet and a signalling NaN
    x[2] = -0.0
    x[3] = [np.inf, -np.inf, 1, 2, 3, 4]
    x[4] = [3e38, 3e38, -3e38, 1, -0.0, 2]
    x[5] = [-0.0, 0.0, -0.0, -1, -2, -3]
    x[6] = [0.0, -0.0, 5, -np.inf, np.nan, 1]
    x[7] = [-1, -0.0, 0.0, -2, 0.0, -3]  # a zero result: the first zero seen decides its sign
    x[8] = [-1, 0.0, -0.0, -0.0, -2, -0.0]
    return x


@pytest.mark.parametrize("op", ["MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN"])
def test_float_special_values(op: str) -> None:
    model = reduce_model(op, "float32", (9, 6), [1])
    x = float_specials()
    assert_same_as_tflm(model, [x])
    assert_same_as_tflm(model, [-x])
    assert_same_as_tflm(model, [np.full((9, 6), -np.inf, np.float32)])
    assert_same_as_tflm(model, [np.full((9, 6), np.nan, np.float32)])


@pytest.mark.parametrize("op", ["MEAN", "SUM"])
def test_float_sum_is_sequential(op: str) -> None:
    """TFLM adds in order in float32; numpy's pairwise sum would round differently on long rows."""
    rng = np.random.default_rng(3)
    model = reduce_model(op, "float32", (4, 2000), [1])
    assert_same_as_tflm(model, [(rng.standard_normal((4, 2000)) * 1000).astype(np.float32)])
    model = reduce_model(op, "float32", (1, 10, 10, 30), [1, 2], True)
    assert_same_as_tflm(model, [(rng.standard_normal((1, 10, 10, 30)) * 100).astype(np.float32)])


@pytest.mark.parametrize("op", ["MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN"])
@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_computed_axes(op: str, dtype: str) -> None:
    """TFLM reads the axis tensor at every invoke: a model input works, and so does micronn."""
    model = reduce_model(op, dtype, (2, 3, 4), [0, 0], constant_axes=False, out_shape=(3,))
    rng = np.random.default_rng(1)
    x = rng.integers(-100, 100, (2, 3, 4)).astype(dtype)
    for axes in ([0, 2], [2, 0], [-1, -3]):
        assert_same_as_tflm(model, [x, np.array(axes, np.int32)])


def test_computed_axes_out_of_range_fail_at_invoke() -> None:
    model = reduce_model("MEAN", "float32", (2, 3, 4), [0, 0], constant_axes=False, out_shape=(3,))
    inputs = [np.zeros((2, 3, 4), np.float32), np.array([0, 3], np.int32)]
    with pytest.raises(TflmError):
        run_tflm(model, inputs)
    it = Interpreter(model)
    for i, x in enumerate(inputs):
        it.set_input(x, i)
    with pytest.raises(InvokeError, match="out of range"):
        it.invoke()


HEAD_CASES = [
    ("float32", (2, 3, 4), [1]),
    ("int8", (2, 3, 4), [1]),
    ("int16", (2, 3, 4), [1]),
    ("float32", (2, 2, 2, 2, 2), [0, 0, 0, 0, 0]),  # the axis buffer counts duplicates
    ("int8", (2, 2, 2, 2, 2, 2), [0, 1, 2, 3, 4, 5, 0, 1, 2]),
    ("int16", (1, 7, 7, 16), [1, 2]),
]


@pytest.mark.parametrize("op,dtype,shape,axes", [
    (op, *case) for op in ("MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN") for case in HEAD_CASES
    if not (op.startswith("REDUCE") and case[0] == "int16")  # TFLM has no int16 REDUCE_MAX/MIN
], ids=str)
def test_head_equals_tflm(op: str, dtype: str, shape: tuple, axes: list) -> None:
    """Scratch: 4 bytes per input dimension and per axis entry, plus (MEAN/SUM int) 4 bytes per output."""
    model = reduce_model(op, dtype, shape, axes)
    it = Interpreter(model, planner="tflm")
    it.allocate_tensors()
    assert it.head == tflm_arena(model)["head"]


@pytest.mark.parametrize("op", ["MEAN", "REDUCE_MAX"])
def test_rejects_int64_axis(op: str) -> None:
    model = reduce_model(op, "float32", (2, 3), [1], axis_dtype="int64")
    with pytest.raises(TflmError):
        run_tflm(model, [np.zeros((2, 3), np.float32)])
    with pytest.raises(PrepareError, match="int32"):
        Interpreter(model).allocate_tensors()


@pytest.mark.parametrize("op", ["SUM", "REDUCE_MIN"])
def test_rejects_constant_axis_out_of_range(op: str) -> None:
    """TFLM fails at invoke; micronn already at prepare."""
    model = reduce_model(op, "float32", (2, 3), [2], out_shape=(2, 3))
    with pytest.raises(TflmError):
        run_tflm(model, [np.zeros((2, 3), np.float32)])
    with pytest.raises(PrepareError, match="out of range"):
        Interpreter(model).allocate_tensors()


def test_rejects_wrong_output_size() -> None:
    """TFLM does not check the output's size (and leaves or overruns elements); micronn refuses."""
    with pytest.raises(PrepareError, match="holds"):
        Interpreter(reduce_model("MEAN", "float32", (2, 3), [1], out_shape=(3,))).allocate_tensors()


@pytest.mark.parametrize("op", ["REDUCE_MAX", "REDUCE_MIN"])
@pytest.mark.parametrize("qout", [(0.2, -3), (0.05, 4)], ids=str)
def test_max_min_int8_rejects_rescaling(op: str, qout: tuple) -> None:
    model = reduce_model(op, "int8", (2, 3), [1], qin=(0.05, -3), qout=qout)
    with pytest.raises(TflmError):
        run_tflm(model, [np.zeros((2, 3), np.int8)])
    with pytest.raises(PrepareError, match="scale and zero point"):
        Interpreter(model).allocate_tensors()


@pytest.mark.parametrize("op,dtype", [("MEAN", "int32"), ("SUM", "uint8"), ("REDUCE_MAX", "int16"),
                                      ("REDUCE_MIN", "int32")])
def test_unsupported_types(op: str, dtype: str) -> None:
    q = (0.1, 0) if dtype in ("int16", "uint8") else (None, None)
    model = reduce_model(op, dtype, (2, 3), [1], qin=q, qout=q)
    with pytest.raises(TflmError):
        run_tflm(model, [np.zeros((2, 3), dtype)])
    with pytest.raises(UnsupportedError):
        Interpreter(model)
