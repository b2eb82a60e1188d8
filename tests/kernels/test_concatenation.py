"""CONCATENATION against the TFLM wheel, byte for byte, and the models TFLM refuses."""

from __future__ import annotations

import pytest

from micronn import Interpreter
from micronn.errors import PrepareError, UnsupportedError
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_tflm, tflm_arena
from micronn.tflite import schema

DTYPES = ["float32", "int8", "int16", "int32", "int64", "bool"]


def concat_model(dtype: str, shapes: list[tuple[int, ...]], axis: int, *, act: int = 0,
                 scales: list[float] | None = None, zero_points: list[int] | None = None,
                 out_q: tuple[float, int] | None = None, out_shape: tuple[int, ...] | None = None) -> bytes:
    """Concatenate ``shapes`` along ``axis``; int8/int16 get scale 0.1 and zero point 0 unless told."""
    n = len(shapes)
    quantized = dtype in ("int8", "int16")
    scales = scales or ([0.1] * n if quantized else [None] * n)
    zero_points = zero_points or ([0] * n if quantized else [None] * n)
    out_q = out_q or ((0.1, 0) if quantized else (None, None))
    inputs = [T(s, dtype, sc, zp) for s, sc, zp in zip(shapes, scales, zero_points)]
    if out_shape is None:
        ax = axis + len(shapes[0]) if axis < 0 else axis
        out_shape = tuple(sum(s[ax] for s in shapes) if k == ax else d for k, d in enumerate(shapes[0]))
    opts = schema.options("CONCATENATION", axis=axis, fused_activation_function=act)
    return op_model("CONCATENATION", inputs, [T(out_shape, dtype, *out_q)], opts)


CASES = [
    ([(2, 3, 4), (2, 1, 4), (2, 5, 4)], 1),
    ([(2, 3, 4), (2, 3, 1)], -1),
    ([(1, 2), (3, 2)], 0),
    ([(1, 2), (3, 2)], -2),
    ([(1, 1, 1, 1, 2, 3), (1, 1, 1, 1, 1, 3)], -2),  # 6-D, TFLM's limit
    ([(5,)], 0),
    ([(2, 1)] * 10, 1),  # 10 inputs, TFLM's limit
    ([(1, 4, 4, 8), (1, 4, 4, 16)], 3),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shapes,axis", CASES, ids=lambda v: str(v))
def test_concatenation_matches_tflm(dtype: str, shapes: list, axis: int) -> None:
    assert_same_as_tflm(concat_model(dtype, shapes, axis), runs=2)


def test_concatenation_int8_shared_nonzero_params() -> None:
    """Equal (scale, zero point) everywhere: a raw copy."""
    model = concat_model("int8", [(2, 3), (2, 2)], 1, scales=[0.37, 0.37], zero_points=[-7, -7], out_q=(0.37, -7))
    assert_same_as_tflm(model, runs=2)


def test_concatenation_int16_different_scales() -> None:
    """int16 scales may differ (symmetric): TFLM still copies the raw values, so does micronn."""
    model = concat_model("int16", [(2, 3), (2, 2)], 1, scales=[0.1, 0.3], out_q=(0.2, 0))
    assert_same_as_tflm(model, runs=2)


@pytest.mark.parametrize("dtype", ["float32", "int8", "int64"])
def test_concatenation_head_equals_tflm(dtype: str) -> None:
    model = concat_model(dtype, [(2, 3, 4), (2, 1, 4), (2, 5, 4)], 1)
    it = Interpreter(model, planner="tflm")
    it.allocate_tensors()
    assert it.head == tflm_arena(model)["head"]


REJECTED = {
    "int8 scales differ": dict(dtype="int8", scales=[0.1, 0.2], out_q=(0.1, 0)),
    "int8 zero points differ": dict(dtype="int8", zero_points=[1, 2], scales=[0.1, 0.1], out_q=(0.1, 1)),
    "int8 output scale differs": dict(dtype="int8", out_q=(0.2, 0)),
    "int8 output zero point differs": dict(dtype="int8", out_q=(0.1, 3)),
    "int16 non-zero zero point": dict(dtype="int16", zero_points=[1, 1], scales=[0.1, 0.1], out_q=(0.1, 1)),
    "fused activation": dict(dtype="float32", act=1),
}


@pytest.mark.parametrize("name", REJECTED)
def test_concatenation_rejects_what_tflm_rejects(name: str) -> None:
    kw = dict(REJECTED[name])
    model = concat_model(kw.pop("dtype"), [(2, 3), (2, 2)], 1, **kw)
    with pytest.raises(TflmError):
        run_tflm(model, [])
    with pytest.raises(PrepareError):
        Interpreter(model).allocate_tensors()


def test_concatenation_rejects_too_many_inputs() -> None:
    model = concat_model("float32", [(1, 2)] * 11, 0)
    with pytest.raises(TflmError):
        run_tflm(model, [])
    with pytest.raises(PrepareError, match="at most 10"):
        Interpreter(model).allocate_tensors()


@pytest.mark.parametrize("shapes,axis,out_shape", [
    ([(2, 3), (3, 3)], 1, (5, 3)),  # inputs disagree off the axis
    ([(2, 3), (2, 4)], 1, (2, 8)),  # output too long
    ([(2, 3), (2, 4)], -3, (2, 7)),  # axis out of range
    ([(2, 3), (2, 3, 1)], 1, (2, 6)),  # ranks differ
])
def test_concatenation_rejects_bad_shapes(shapes: list, axis: int, out_shape: tuple) -> None:
    """TFLM does not check these (it would read or write out of bounds); micronn refuses them."""
    with pytest.raises(PrepareError):
        Interpreter(concat_model("float32", shapes, axis, out_shape=out_shape)).allocate_tensors()


def test_concatenation_uint8_unsupported() -> None:
    with pytest.raises(UnsupportedError):
        Interpreter(concat_model("uint8", [(2, 3), (2, 2)], 1))
