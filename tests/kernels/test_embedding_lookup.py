"""EMBEDDING_LOOKUP against the TFLM wheel, byte for byte: float32 and int8 tables copied raw, int8 tables
dequantized into float32 (with the first scale only), out-of-range ids, and what TFLM refuses."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import InvokeError, PrepareError, UnsupportedError
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_tflm, tflm_arena


def table_data(dtype: str, shape, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == "float32":
        return rng.standard_normal(shape).astype(np.float32)
    return rng.integers(-128, 128, shape).astype(np.int8)


def lookup_model(dtype: str, table_shape, n_ids: int, out_dtype: str | None = None, q=(None, None),
                 constant_table: bool = True, ids=None, out_shape=None) -> bytes:
    data = table_data(dtype, table_shape) if constant_table else None
    out_shape = out_shape or (n_ids, *table_shape[1:])
    return op_model("EMBEDDING_LOOKUP", [T((n_ids,), "int32", data=ids), T(table_shape, dtype, *q, data=data)],
                    [T(out_shape, out_dtype or dtype)])


def ids_for(rows: int, n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, rows, n).astype(np.int32)


CASES = [((4, 3), 5), ((6, 3, 2), 4), ((3, 2, 2, 2), 7), ((10, 1), 1), ((2, 1, 3, 1, 2), 3)]


@pytest.mark.parametrize("dtype,out_dtype,q", [("float32", "float32", (None, None)), ("int8", "int8", (0.1, 3)),
                                               ("int8", "float32", (0.37, 0)), ("int8", "float32", (1e-30, 0))],
                         ids=["float32", "int8", "int8 to float32", "tiny scale"])
@pytest.mark.parametrize("table_shape,n_ids", CASES, ids=str)
def test_matches_tflm(dtype: str, out_dtype: str, q: tuple, table_shape: tuple, n_ids: int) -> None:
    model = lookup_model(dtype, table_shape, n_ids, out_dtype, q)
    for seed in range(2):
        assert_same_as_tflm(model, [ids_for(table_shape[0], n_ids, seed)])


def test_computed_table() -> None:
    model = lookup_model("int8", (5, 4), 3, "float32", (0.05, 0), constant_table=False)
    rng = np.random.default_rng(1)
    for _ in range(2):
        assert_same_as_tflm(model, [ids_for(5, 3, 7), rng.integers(-128, 128, (5, 4)).astype(np.int8)])


def test_dequantize_uses_the_first_scale() -> None:
    """A per-row quantized table: TFLM dequantizes every row with the first scale."""
    model = op_model("EMBEDDING_LOOKUP", [T((3,), "int32"), T((4, 3), "int8", [0.5, 0.25, 2.0, 4.0], 0,
                                                               data=table_data("int8", (4, 3)))],
                     [T((3, 3), "float32")])
    assert_same_as_tflm(model, [np.array([0, 3, 1], np.int32)])


def test_unquantized_int8_table_to_float32() -> None:
    """Without quantization the scale is 0: zeros, negative ones for negative values."""
    model = lookup_model("int8", (4, 3), 4, "float32")
    out = assert_same_as_tflm(model, [np.array([0, 1, 2, 3], np.int32)])[0][0]
    assert (out == 0).all()


@pytest.mark.parametrize("ids", [[1, 4], [-1, 0], [0, 2**31 - 1]], ids=str)
def test_out_of_range_ids_fail_at_invoke(ids: list) -> None:
    model = lookup_model("float32", (4, 3), 2)
    inputs = [np.array(ids, np.int32)]
    with pytest.raises(TflmError, match="out of bounds"):
        run_tflm(model, inputs)
    it = Interpreter(model)
    it.set_input(inputs[0], 0)
    with pytest.raises(InvokeError, match="outside"):
        it.invoke()


def test_constant_out_of_range_id_fails_at_prepare() -> None:
    with pytest.raises(PrepareError, match="outside"):
        Interpreter(lookup_model("float32", (4, 3), 2, ids=[0, 4])).allocate_tensors()


@pytest.mark.parametrize("model", [
    lookup_model("int8", (4, 3), 2, "float32", (0.5, 3)),
    lookup_model("float32", (4, 3, 2), 2, out_shape=(2, 6)),
    op_model("EMBEDDING_LOOKUP", [T((1, 2), "int32"), T((4, 3), "float32", data=table_data("float32", (4, 3)))],
             [T((2, 3), "float32")]),
    op_model("EMBEDDING_LOOKUP", [T((2,), "int64"), T((4, 3), "float32", data=table_data("float32", (4, 3)))],
             [T((2, 3), "float32")]),
    op_model("EMBEDDING_LOOKUP", [T((2,), "int32"), T((4,), "float32", data=[1, 2, 3, 4])], [T((2,), "float32")]),
    lookup_model("float32", (4, 3), 2, "int8"),
    lookup_model("int8", (4, 3), 2, "int16", (0.1, 0)),
], ids=["zero point", "output rank", "2-D ids", "int64 ids", "1-D table", "float32 to int8", "int8 to int16"])
def test_rejects_what_tflm_rejects(model: bytes) -> None:
    with pytest.raises(TflmError):
        run_tflm(model, [np.zeros(2, np.int32)])
    with pytest.raises(PrepareError):
        Interpreter(model).allocate_tensors()


def test_refuses_an_output_shape_tflm_would_rewrite() -> None:
    """TFLM rewrites the output's dimensions to (ids,) + table row shape; micronn requires that shape."""
    with pytest.raises(PrepareError, match="shape"):
        Interpreter(lookup_model("float32", (4, 3, 2), 2, out_shape=(3, 3, 2))).allocate_tensors()


@pytest.mark.parametrize("dtype,out_dtype", [("float32", "float32"), ("int8", "float32")])
def test_head_equals_tflm(dtype: str, out_dtype: str) -> None:
    model = lookup_model(dtype, (6, 3, 2), 5, out_dtype, (0.5, 0) if dtype == "int8" else (None, None),
                         ids=[0, 5, 2, 2, 1])
    it = Interpreter(model, planner="tflm")
    it.allocate_tensors()
    assert it.head == tflm_arena(model)["head"]


@pytest.mark.parametrize("dtype", ["int16", "int32", "uint8"])
def test_unsupported_types(dtype: str) -> None:
    model = op_model("EMBEDDING_LOOKUP", [T((2,), "int32"), T((4, 3), dtype, data=np.ones((4, 3)))],
                     [T((2, 3), dtype)])
    with pytest.raises(TflmError):
        run_tflm(model, [np.zeros(2, np.int32)])
    with pytest.raises(UnsupportedError):
        Interpreter(model)
