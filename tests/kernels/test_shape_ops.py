"""SHAPE, PACK and RESHAPE against the TFLM wheel, byte for byte, and the SHAPE -> STRIDED_SLICE -> PACK chain."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import ModelError, PrepareError, UnsupportedError
from micronn.testing import (
    Graph,
    Op,
    T,
    TflmError,
    assert_same_as_tflm,
    graph_ir,
    graph_model,
    op_model,
    run_tflm,
    tflm_arena,
)
from micronn.tflite import schema

# ---- SHAPE ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "int8", "int16", "int32", "bool"])
@pytest.mark.parametrize("shape", [(1, 3, 4, 2), (5,), (2, 3)], ids=str)
def test_shape_matches_tflm(dtype: str, shape: tuple) -> None:
    model = op_model("SHAPE", [T(shape, dtype)], [T((len(shape),), "int32")], schema.options("SHAPE", out_type=2))
    out = assert_same_as_tflm(model, runs=1)[0][0]
    assert out.tolist() == list(shape)


def test_shape_reports_the_static_batch_of_a_dynamic_model() -> None:
    """A dynamic batch (-1 in shape_signature) reads as the static 1, as in TFLM."""
    model = op_model("SHAPE", [T((1, 4, 2), "float32", shape_signature=(-1, 4, 2))], [T((3,), "int32")])
    assert assert_same_as_tflm(model, runs=1)[0][0].tolist() == [1, 4, 2]


def test_shape_int64_output_unsupported() -> None:
    """TFLM's SHAPE writes only int32 (an int64 out_type fails at invoke)."""
    model = op_model("SHAPE", [T((2, 3), "float32")], [T((2,), "int64")], schema.options("SHAPE", out_type=4))
    with pytest.raises(TflmError):
        run_tflm(model, [np.zeros((2, 3), np.float32)])
    with pytest.raises(UnsupportedError):
        Interpreter(model)


def test_shape_rejects_wrong_length() -> None:
    model = op_model("SHAPE", [T((2, 3), "float32")], [T((3,), "int32")])
    with pytest.raises(PrepareError):
        Interpreter(model).allocate_tensors()


# ---- PACK ----------------------------------------------------------------------------------------------------


def pack_model(dtype: str, shapes: list[tuple[int, ...]], axis: int, values_count: int | None = None,
               out_shape: tuple[int, ...] | None = None) -> bytes:
    if out_shape is None:
        rank = len(shapes[0]) + 1
        out = list(shapes[0])
        out.insert(axis + rank if axis < 0 else axis, len(shapes))
        out_shape = tuple(out)
    q = (0.1, 1) if dtype in ("int8", "int16") else (None, None)
    opts = schema.options("PACK", values_count=len(shapes) if values_count is None else values_count, axis=axis)
    return op_model("PACK", [T(s, dtype, *q) for s in shapes], [T(out_shape, dtype, *q)], opts)


@pytest.mark.parametrize("dtype", ["float32", "int8", "int16", "int32", "int64"])
@pytest.mark.parametrize("shapes,axis", [
    ([(2, 3)] * 3, 1), ([(2, 3)] * 4, -1), ([(4,)] * 2, 0), ([(1,)] * 3, 1), ([(1, 2, 3)] * 2, -2),
    ([(2, 3)] * 2, -3), ([(1, 2, 3)] * 5, 3),
], ids=str)
def test_pack_matches_tflm(dtype: str, shapes: list, axis: int) -> None:
    assert_same_as_tflm(pack_model(dtype, shapes, axis), runs=2)


def test_pack_scalars() -> None:
    """Scalars stacked into a vector (as tiny_unet builds its output_shape); constant here, because the
    comparison harness cannot feed 0-d model inputs to the wheel."""
    scalars = [T((), "int32", data=v) for v in (1, 80, 120, -3)]
    model = op_model("PACK", scalars, [T((4,), "int32")], schema.options("PACK", values_count=4, axis=0))
    assert assert_same_as_tflm(model, inputs=[])[0][0].tolist() == [1, 80, 120, -3]


def test_pack_head_equals_tflm() -> None:
    model = pack_model("float32", [(2, 3)] * 3, 1)
    it = Interpreter(model, planner="tflm")
    it.allocate_tensors()
    assert it.head == tflm_arena(model)["head"]


@pytest.mark.parametrize("kw", [
    {"values_count": 2},  # TFLM would pack only the first two and leave the rest unwritten
    {"out_shape": (2, 4, 3)},
    {"axis": 3},
])
def test_pack_rejects_inconsistent_models(kw: dict) -> None:
    """TFLM's PACK has no prepare and trusts these; micronn refuses them."""
    kw = dict(kw)
    axis = kw.pop("axis", 1)
    with pytest.raises(PrepareError):
        Interpreter(pack_model("float32", [(2, 3)] * 3, axis, **kw)).allocate_tensors()


def test_pack_bool_unsupported() -> None:
    with pytest.raises(UnsupportedError):
        Interpreter(pack_model("bool", [(2, 3)] * 2, 0))


# ---- RESHAPE -------------------------------------------------------------------------------------------------

RESHAPE_TYPES = ["float32", "float16", "float64", "int8", "int16", "int32", "int64", "uint8", "uint32", "uint64",
                 "bool"]


def reshape_model(dtype: str, in_shape, out_shape, shape_input=None, new_shape=None,
                  constant_shape: bool = True) -> bytes:
    inputs = [T(in_shape, dtype)]
    if shape_input is not None:
        inputs.append(T((len(shape_input),), "int32", data=shape_input if constant_shape else None))
    opts = schema.options("RESHAPE", new_shape=tuple(new_shape)) if new_shape is not None else None
    return op_model("RESHAPE", inputs, [T(out_shape, dtype)], opts)


def _values(dtype: str, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if np.issubdtype(np.dtype(dtype), np.floating):
        return rng.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -2**40), min(info.max, 2**40), shape, endpoint=True).astype(dtype)


@pytest.mark.parametrize("dtype", RESHAPE_TYPES)
def test_reshape_matches_tflm(dtype: str) -> None:
    model = reshape_model(dtype, (2, 6), (3, 4), [3, 4])
    out = assert_same_as_tflm(model, inputs=[x := _values(dtype, (2, 6))])[0][0]
    assert out.tobytes() == x.tobytes()


@pytest.mark.parametrize("kw", [
    {},  # no shape input, no option
    {"new_shape": [12]},
    {"shape_input": [4, 3]},  # TFLM ignores the shape input's values: the output's static shape wins
    {"shape_input": [3, 4], "constant_shape": False},  # a shape computed at run time changes nothing
], ids=str)
def test_reshape_shape_sources(kw: dict) -> None:
    out_shape = (12,) if "new_shape" in kw else (3, 4)
    model = reshape_model("float32", (2, 6), out_shape, **kw)
    inputs = [_values("float32", (2, 6))]
    if not kw.get("constant_shape", True):
        inputs.append(np.array(kw["shape_input"], np.int32))
    assert_same_as_tflm(model, inputs=inputs)


@pytest.mark.parametrize("out_shape", [(6, 4), (24,), (1, 24)], ids=str)
def test_reshape_empty_shape_tensor_nothing_produces(out_shape: tuple) -> None:
    """An empty shape input that no operator writes holds nothing to read: TFLM runs the model (a public model
    does this), and so does micronn; the output's static shape wins."""
    graph = Graph({"x": T((2, 3, 4), "float32"), "s": T((0,), "int32"), "y": T(out_shape, "float32")},
                  [Op("RESHAPE", ["x", "s"], ["y"])], ["x"], ["y"])
    assert_same_as_tflm(graph_model(graph), [np.arange(24, dtype=np.float32).reshape(2, 3, 4)])


def test_reshape_head_equals_tflm() -> None:
    model = reshape_model("float32", (2, 6), (3, 4), [3, 4])
    it = Interpreter(model, planner="tflm")
    it.allocate_tensors()
    assert it.head == tflm_arena(model)["head"]


def test_reshape_rejects_element_count_mismatch() -> None:
    model = reshape_model("float32", (2, 6), (3, 5), [3, 5])
    with pytest.raises(TflmError):
        run_tflm(model, [np.zeros((2, 6), np.float32)])
    with pytest.raises(PrepareError):
        Interpreter(model).allocate_tensors()


def test_reshape_rejects_unknown_output_dimension() -> None:
    """A -1 in the output's static shape crashes the TFLM wheel (so it is not run here); the reader refuses
    such a file, and the kernel refuses such an IR built in code."""
    with pytest.raises(ModelError):
        Interpreter(reshape_model("float32", (2, 6), (3, -1), [3, -1]))
    graph = Graph({"x": T((2, 6), "float32"), "y": T((3, -1), "float32")}, [Op("RESHAPE", ["x"], ["y"])], ["x"], ["y"])
    with pytest.raises(PrepareError, match="-1"):
        Interpreter(graph_ir(graph)).allocate_tensors()


# ---- the dynamic-batch chain of tiny_unet --------------------------------------------------------------------


def test_shape_slice_pack_chain_feeds_transpose_conv() -> None:
    """SHAPE -> STRIDED_SLICE -> PACK computes TRANSPOSE_CONV's output_shape at run time, as in tiny_unet."""
    rng = np.random.default_rng(5)
    tensors = {
        "x": T((1, 3, 4, 2), "float32", shape_signature=(-1, 3, 4, 2)),
        "shape": T((4,), "int32"),
        "begin": T((1,), "int32", data=[0]), "end": T((1,), "int32", data=[1]), "one": T((1,), "int32", data=[1]),
        "batch": T((), "int32"),
        "h": T((), "int32", data=6), "w": T((), "int32", data=8), "c": T((), "int32", data=5),
        "out_shape": T((4,), "int32"),
        "weights": T((5, 3, 3, 2), "float32", data=rng.standard_normal((5, 3, 3, 2)).astype(np.float32)),
        "y": T((1, 6, 8, 5), "float32", shape_signature=(-1, 6, 8, 5)),
    }
    ops = [
        Op("SHAPE", ["x"], ["shape"]),
        Op("STRIDED_SLICE", ["shape", "begin", "end", "one"], ["batch"], {"shrink_axis_mask": 1}),
        Op("PACK", ["batch", "h", "w", "c"], ["out_shape"], {"values_count": 4, "axis": 0}),
        Op("TRANSPOSE_CONV", ["out_shape", "weights", "x", None], ["y"], {"stride_h": 2, "stride_w": 2}),
    ]
    model = graph_model(Graph(tensors, ops, ["x"], ["y", "out_shape"]))
    results = assert_same_as_tflm(model, runs=2)
    assert results[0][1].tolist() == [1, 6, 8, 5]
    it = Interpreter(model, planner="tflm")
    it.allocate_tensors()
    assert it.head == tflm_arena(model)["head"]
