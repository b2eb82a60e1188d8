"""BATCH_MATMUL against the TFLM wheel, byte for byte: float32, int8 and int16, adj_x/adj_y, broadcasting."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import PrepareError, UnsupportedError
from micronn.quant import multiply_by_quantized_multiplier, quantize_multiplier
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_tflm, tflm_arena

DTYPES = ["float32", "int8", "int16"]
QUANT = {  # (lhs, rhs, output) scale and zero point
    "float32": ((None, None),) * 3,
    "int8": ((0.05, 3), (0.02, -7), (0.11, -1)),
    "int16": ((0.001, 0), (0.002, 0), (0.01, 0)),
}


def matmul_shapes(lhs: tuple[int, ...], rhs: tuple[int, ...], adj_x: bool, adj_y: bool) -> tuple[int, ...]:
    a = np.empty(lhs, np.int8)
    b = np.empty(rhs, np.int8)
    return np.matmul(np.swapaxes(a, -1, -2) if adj_x else a, np.swapaxes(b, -1, -2) if adj_y else b).shape


def bmm(dtype: str, lhs: tuple[int, ...], rhs: tuple[int, ...], adj_x: bool = False, adj_y: bool = False, *,
        q=None, out_shape=None, lhs_data=None, rhs_data=None, rhs_dtype=None) -> bytes:
    ql, qr, qo = q or QUANT[dtype]
    if out_shape is None:
        out_shape = matmul_shapes(lhs, rhs, adj_x, adj_y)
    return op_model("BATCH_MATMUL", [T(lhs, dtype, *ql, data=lhs_data), T(rhs, rhs_dtype or dtype, *qr, data=rhs_data)],
                    [T(out_shape, dtype, *qo)], {"adj_x": adj_x, "adj_y": adj_y})


def adjusted(shape: tuple[int, ...], adj: bool) -> tuple[int, ...]:
    return shape[:-2] + (shape[-1], shape[-2]) if adj else shape


CASES = [  # lhs, rhs as (..., M, K) and (..., K, N) before any adj
    ((2, 3), (3, 4)),
    ((2, 2, 3), (2, 3, 4)),
    ((5, 2, 7), (7, 3)),  # rhs broadcast over the batch
    ((2, 7), (3, 7, 2)),  # lhs broadcast over the batch
    ((2, 1, 2, 3), (1, 3, 3, 4)),  # both broadcast
    ((1, 2, 1, 2, 3), (2, 1, 2, 3, 4)),  # 5-D, TFLM's limit
    ((4, 300), (300, 5)),  # a long accumulation
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("adj_x,adj_y", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("lhs,rhs", CASES, ids=str)
def test_matches_tflm(dtype, adj_x, adj_y, lhs, rhs) -> None:
    assert_same_as_tflm(bmm(dtype, adjusted(lhs, adj_x), adjusted(rhs, adj_y), adj_x, adj_y), runs=2)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("adj_x,adj_y", [(False, False), (True, True)])
@pytest.mark.parametrize("which", ["rhs", "lhs"])
def test_constant_operand(dtype, adj_x, adj_y, which) -> None:
    """A constant RHS is transposed once (TFLM caches it); constant LHS works the same as a variable one."""
    lhs, rhs = adjusted((2, 5, 3), adj_x), adjusted((2, 3, 4), adj_y)
    rng = np.random.default_rng(4)

    def data(shape):
        if dtype == "float32":
            return rng.uniform(-1, 1, shape)
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, endpoint=True)

    kw = {"rhs_data": data(rhs)} if which == "rhs" else {"lhs_data": data(lhs)}
    assert_same_as_tflm(bmm(dtype, lhs, rhs, adj_x, adj_y, **kw), runs=3)


def test_int8_multiplier_multiplies_scales_in_double() -> None:
    """TFLM's multiplier is double(lhs_scale) * double(rhs_scale) / double(out_scale); multiplying the scales in
    float32 first changes the quantized multiplier and, for these scales, some outputs (checked here over every
    product of two int8 values)."""
    ls, rs, os = 0.01364, 0.062997, 0.056725
    f32 = [float(np.float32(v)) for v in (ls, rs, os)]
    vals = np.arange(-128, 128, dtype=np.int8)
    acc = vals.astype(np.int64)[:, None] * vals.astype(np.int64)[None, :]

    def outputs(real):
        return np.clip(multiply_by_quantized_multiplier(acc, *quantize_multiplier(real)), -128, 127)

    in_double = outputs(f32[0] * f32[1] / f32[2])
    in_float = outputs(float(np.float32(f32[0]) * np.float32(f32[1])) / f32[2])
    model = bmm("int8", (256, 1), (1, 256), q=((ls, 0), (rs, 0), (os, 0)), rhs_data=vals.reshape(1, 256))
    expected = assert_same_as_tflm(model, [vals.reshape(256, 1)])[0][0]
    assert (in_float != in_double).any(), "these scales no longer tell the two formulas apart"
    np.testing.assert_array_equal(expected, in_double)


def test_int8_saturates_and_wraps_like_c() -> None:
    """Outputs clamp to int8; an accumulation beyond int32 wraps around as TFLM's int32 sum does."""
    k = 40000
    model = bmm("int8", (1, k), (k, 2), q=((0.05, 127), (0.02, 127), (1e3, 0)))
    assert_same_as_tflm(model, [np.full((1, k), -128, np.int8), np.full((k, 2), -128, np.int8)])
    small_out = bmm("int8", (3, 4), (4, 2), q=((0.5, 0), (0.5, 0), (0.01, 0)))
    assert_same_as_tflm(small_out, runs=2)


@pytest.mark.parametrize("out_scale", [0.01, 3.0, 1.0 / 12000])  # the last: a multiplier of about 2**13
def test_int16_rescaling(out_scale) -> None:
    model = bmm("int16", (3, 50), (50, 2), q=((0.5, 0), (0.25, 0), (out_scale, 0)))
    assert_same_as_tflm(model, runs=2)
    assert_same_as_tflm(model, [np.full((3, 50), -32768, np.int16), np.full((50, 2), -32768, np.int16)])


def test_float32_special_values_and_nan_payloads() -> None:
    """Which NaN comes out follows TFLM: the running total's, then the RHS element's in a product."""
    model = bmm("float32", (1, 3), (3, 1))
    nan = np.float32(np.nan).view(np.uint32)
    a = np.array([[np.nan, np.nan, 2]], np.float32)
    a.view(np.uint32)[0, :2] = [nan | 5, nan | 9 | 0x80000000]
    b = np.array([[np.nan], [np.nan], [3]], np.float32)
    b.view(np.uint32)[:2, 0] = [nan | 7, nan | 9]
    plain_a, plain_b = np.array([[1, 2, 3]], np.float32), np.array([[1], [2], [3]], np.float32)
    for x, y in [(a, b), (a, plain_b), (plain_a, b)]:
        assert_same_as_tflm(model, [x, y])
    assert_same_as_tflm(model, [np.array([[np.inf, 1, 0]], np.float32), np.array([[0], [1], [np.inf]], np.float32)])
    assert_same_as_tflm(model, [np.array([[-0.0, 1, 0]], np.float32), np.array([[1], [-0.0], [-0.0]], np.float32)])


@pytest.mark.parametrize("adj_x,adj_y", [(False, False), (True, False), (False, True)])
def test_head_equals_tflm(adj_x, adj_y) -> None:
    """TFLM keeps its transposed operands in the persistent tail, not in scratch: the head is just tensors."""
    model = bmm("int8", adjusted((2, 6, 5), adj_x), adjusted((5, 7), adj_y), adj_x, adj_y)
    assert Interpreter.from_bytes(model, planner="tflm").head == tflm_arena(model)["head"]


def test_transposition_buffers_are_persistent() -> None:
    model = bmm("float32", (3, 2), (3, 4), True, False)  # both operands transposed: 6 and 12 floats
    tail = [e for e in Interpreter.from_bytes(model, planner="tflm").arena_report()["tail"]
            if "BATCH_MATMUL" in e["what"]]
    assert sorted(e["size"] for e in tail) == [24, 48]


@pytest.mark.parametrize("name,model,match", [
    ("hybrid", bmm("float32", (2, 3), (3, 4), q=((None, None), (0.1, 0), (None, None)), rhs_dtype="int8"),
     "hybrid"),
    ("int16 zero point", bmm("int16", (2, 3), (3, 4), q=((0.001, 1), (0.002, 0), (0.01, 0))), "zero points"),
    ("int16 output zero point", bmm("int16", (2, 3), (3, 4), q=((0.001, 0), (0.002, 0), (0.01, 5))), "zero points"),
    ("batch mismatch", bmm("float32", (2, 2, 3), (3, 3, 4), out_shape=(3, 2, 4)), "broadcast"),
    ("depth mismatch", bmm("float32", (2, 3), (4, 4), out_shape=(2, 4)), "accumulation depth"),
    ("rank 6", bmm("float32", (1, 1, 1, 1, 2, 3), (3, 4)), "2 to 5"),
    ("rank 1", bmm("float32", (3,), (3, 4), out_shape=(4,)), "2 to 5"),
    ("output type", op_model("BATCH_MATMUL", [T((2, 3), "int8", 0.1, 0), T((3, 4), "int8", 0.1, 0)],
                             [T((2, 4), "int16", 0.1, 0)]), "output"),
])
def test_refused_like_tflm(name, model, match) -> None:
    with pytest.raises(TflmError, match="failed to prepare"):
        run_tflm(model, [])
    with pytest.raises(PrepareError, match=match):
        Interpreter(model).allocate_tensors()


def test_int32_is_unsupported_like_tflm() -> None:
    model = bmm("int32", (2, 3), (3, 4), q=((None, None),) * 3)
    with pytest.raises(TflmError, match="failed to prepare"):
        run_tflm(model, [])
    with pytest.raises(UnsupportedError):
        Interpreter(model)


@pytest.mark.parametrize("out_shape", [(4, 2), (1, 2, 4)])
def test_output_shape_must_be_the_computed_one(out_shape) -> None:
    """TFLM rewrites the output's dims when the element count matches; micronn insists on the shape itself."""
    with pytest.raises(PrepareError, match="does not match"):
        Interpreter(bmm("float32", (2, 3), (3, 4), out_shape=out_shape)).allocate_tensors()


def test_int16_multiplier_too_large_is_refused() -> None:
    """A multiplier of 2**15 or more makes TFLM's 64-bit rescaling shift by a negative amount (undefined in C);
    micronn refuses rather than guess."""
    model = bmm("int16", (2, 3), (3, 4), q=((1.0, 0), (1.0, 0), (1.0 / 40000, 0)))
    with pytest.raises(PrepareError, match="too large"):
        Interpreter(model).allocate_tensors()


@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_attention_pattern(dtype) -> None:
    """softmax(Q K^T) V, as transformer models use BATCH_MATMUL: adj_y with a variable RHS, then a plain one,
    compared whole (outputs and TFLM's planned head)."""
    from micronn.testing import Graph, Op, graph_model

    if dtype == "float32":
        q = dict.fromkeys("qkvsay", (None, None))
    else:
        q = {"q": (0.05, 1), "k": (0.04, -2), "v": (0.03, 0), "s": (0.2, 3), "a": (1 / 256, -128), "y": (0.02, -1)}
    tensors = {
        "q": T((2, 5, 8), dtype, *q["q"]), "k": T((2, 5, 8), dtype, *q["k"]), "v": T((2, 5, 6), dtype, *q["v"]),
        "s": T((2, 5, 5), dtype, *q["s"]), "a": T((2, 5, 5), dtype, *q["a"]), "y": T((2, 5, 6), dtype, *q["y"]),
    }
    ops = [
        Op("BATCH_MATMUL", ["q", "k"], ["s"], {"adj_y": True}),
        Op("SOFTMAX", ["s"], ["a"], {"beta": 1.0}),
        Op("BATCH_MATMUL", ["a", "v"], ["y"]),
    ]
    model = graph_model(Graph(tensors, ops, ["q", "k", "v"], ["y"]))
    assert_same_as_tflm(model, runs=2)
    assert Interpreter.from_bytes(model, planner="tflm").head == tflm_arena(model)["head"]
