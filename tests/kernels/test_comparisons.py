"""EQUAL, NOT_EQUAL, LESS, LESS_EQUAL, GREATER and GREATER_EQUAL against the TFLM wheel, byte for byte."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import PrepareError, UnsupportedError
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_tflm

OPS = ["EQUAL", "NOT_EQUAL", "LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL"]
DTYPES = ["float32", "int8", "int32", "int64"]
SHAPES = [
    ((2, 3), (2, 3), (2, 3)),
    ((2, 3, 4), (4,), (2, 3, 4)),
    ((3, 1), (1, 4), (3, 4)),
    ((1,), (2, 2, 3), (2, 2, 3)),
    ((2, 1, 3, 1, 2, 1), (1, 3, 1, 2, 1, 2), (2, 3, 3, 2, 2, 2)),
    ((2, 3), (2, 3), (6,)),
]


def model(op: str, dtype: str, shapes=((2, 3), (2, 3), (2, 3)), quant: list | None = None) -> bytes:
    q = quant or ([(0.05, 3), (0.02, -7)] if dtype == "int8" else [(None, None)] * 2)
    a, b = (T(s, dtype, *qq) for s, qq in zip(shapes[:2], q))
    return op_model(op, [a, b], [T(shapes[2], "bool")])


def small_values(shapes: tuple, dtype: str, seed: int) -> list[np.ndarray]:
    """Values from a small range, so that ties (where the operators differ most) are frequent."""
    rng = np.random.default_rng(seed)
    return [rng.integers(-3, 4, s).astype(dtype) for s in shapes[:2]]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_matches_tflm(op: str, dtype: str, shapes: tuple) -> None:
    m = model(op, dtype, shapes)
    assert_same_as_tflm(m, runs=1)
    assert_same_as_tflm(m, inputs=small_values(shapes, dtype, 1))


@pytest.mark.parametrize("op", ["EQUAL", "NOT_EQUAL"])
def test_bool(op: str) -> None:
    assert_same_as_tflm(model(op, "bool", ((3, 1, 4), (5, 4), (3, 5, 4))), runs=2)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("quant", [
    [(0.1, 3), (0.1, 3)],
    [(0.02, -7), (0.05, 100)],
    [(0.5, 1), (0.07, -1)],
    [(0.0001, 0), (0.9, 0)],
    [(0.25, -128), (0.125, 127)],  # exact ties across scales
], ids=str)
def test_int8_rescaled_every_pair(op: str, quant: list) -> None:
    """int8 operands compare by (fixed-point rounded) real value: all 65,536 pairs."""
    x = np.arange(-128, 128, dtype=np.int8)
    m = model(op, "int8", ((256, 1), (1, 256), (256, 256)), quant)
    assert_same_as_tflm(m, inputs=[x.reshape(256, 1), x.reshape(1, 256)])


@pytest.mark.parametrize("op", OPS)
def test_float_special_values(op: str) -> None:
    x = np.array([np.nan, 1, 0.0, -0.0, np.nan, np.inf, -np.inf, 1e-45], np.float32)
    y = np.array([1, np.nan, -0.0, 0.0, np.nan, np.inf, 3, 0], np.float32)
    assert_same_as_tflm(model(op, "float32", ((8,), (8,), (8,))), inputs=[x, y])


def test_int16_greater_is_refused() -> None:
    """TFLM's GREATER accepts int16 but does not compute the comparison (its output does not follow the inputs:
    all False in a fresh process, stale arena bytes after other models); micronn refuses it."""
    m = model("GREATER", "int16", quant=[(0.1, 0), (0.1, 0)])
    with pytest.raises(UnsupportedError, match=r"GREATER \(int16\)"):
        Interpreter(m).allocate_tensors()


@pytest.mark.parametrize("op,dtype", [(op, "int16") for op in OPS if op != "GREATER"]
                         + [(op, "bool") for op in OPS[2:]] + [("LESS", "uint8")])
def test_unsupported_types(op: str, dtype: str) -> None:
    m = model(op, dtype)
    with pytest.raises(TflmError):
        run_tflm(m, [np.zeros((2, 3), dtype)] * 2)
    with pytest.raises(UnsupportedError):
        Interpreter(m)


def test_rejects_int8_scale_of_one_or_more() -> None:
    """TFLM aborts (its scale multiplier must be below one): not run on the wheel."""
    with pytest.raises(PrepareError, match="multiplier"):
        Interpreter(model("EQUAL", "int8", quant=[(1.0, 0), (0.5, 0)])).allocate_tensors()


@pytest.mark.parametrize("specs", [
    [T((2, 3), "float32"), T((2, 3), "float32"), T((2, 3), "int8")],  # output not bool
    [T((2, 3), "float32"), T((2, 3), "int32"), T((2, 3), "bool")],  # operand types differ
    [T((2, 3), "float32"), T((2, 4), "float32"), T((2, 4), "bool")],  # no broadcast
    [T((2, 3), "float32"), T((2, 3), "float32"), T((2, 4), "bool")],  # output too large
], ids=["output type", "mixed types", "broadcast", "output shape"])
def test_rejects_invalid_models(specs: list) -> None:
    """TFLM computes garbage (or crashes) on these; micronn refuses them."""
    with pytest.raises(PrepareError):
        Interpreter(op_model("LESS", specs[:2], specs[2:])).allocate_tensors()
