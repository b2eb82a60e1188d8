"""REVERSE_V2 against the TFLM wheel, byte for byte, in every type it runs: contiguous axis blocks, negative
axes, computed axes, and the non-contiguous, repeated or out-of-range axes TFLM fails at invoke."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import InvokeError, PrepareError, UnsupportedError
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_tflm, tflm_arena

DTYPES = ["float32", "int8", "uint8", "int16", "int32", "int64", "bool"]


def reverse_model(dtype: str, shape, axes=None, n_axes: int | None = None, out_shape=None,
                  axes_dtype: str = "int32") -> bytes:
    """Constant ``axes``, or a computed axes input of ``n_axes`` entries."""
    axes_spec = T((len(axes),), axes_dtype, data=axes) if axes is not None else T((n_axes,), axes_dtype)
    q = (0.1, 3) if dtype in ("int8", "int16") else (None, None)
    return op_model("REVERSE_V2", [T(shape, dtype, *q), axes_spec], [T(out_shape or shape, dtype, *q)])


@pytest.mark.parametrize("dtype", DTYPES)
def test_matches_tflm(dtype: str) -> None:
    for axes in ([0], [1], [-1], [1, 2], [2, 1], [0, 1, 2], [-3, -2]):
        assert_same_as_tflm(reverse_model(dtype, (2, 3, 4), axes), runs=1)


@pytest.mark.parametrize("shape,axes", [((7,), [0]), ((2, 3, 4, 5), [1, 2]), ((2, 3, 4, 5), [3]),
                                        ((1, 2, 3, 2, 2, 3), [2, 3, 4]), ((1, 2, 3, 2, 2, 3), [0]),
                                        ((3, 1, 4), [1])], ids=str)
def test_shapes(shape: tuple, axes: list) -> None:
    assert_same_as_tflm(reverse_model("float32", shape, axes), runs=2)


def test_computed_axes() -> None:
    """TFLM reads the axes at every invoke; they may be a model input."""
    model = reverse_model("int16", (2, 3, 4), n_axes=2)
    x = np.arange(24, dtype=np.int16).reshape(2, 3, 4)
    for axes in ([0, 1], [2, 1], [-1, -2], [-3, 1]):
        assert_same_as_tflm(model, [x, np.array(axes, np.int32)])


def test_output_needs_only_the_element_count() -> None:
    """TFLM writes the input's elements in order into whatever shape the output has."""
    assert_same_as_tflm(reverse_model("float32", (2, 3), [0], out_shape=(3, 2)), runs=1)


@pytest.mark.parametrize("axes", [[0, 2], [1, 1], [3], [-4], [0, 2, 1, 0]], ids=str)
def test_bad_axes_fail_at_invoke(axes: list) -> None:
    """Non-contiguous, repeated and out-of-range axes: TFLM fails the invoke, micronn too (or the prepare when
    the axes are constant)."""
    x = np.zeros((2, 3, 4), np.float32)
    if len(axes) <= 3:
        model = reverse_model("float32", (2, 3, 4), n_axes=len(axes))
        inputs = [x, np.array(axes, np.int32)]
        with pytest.raises(TflmError):
            run_tflm(model, inputs)
        it = Interpreter(model)
        for i, v in enumerate(inputs):
            it.set_input(v, i)
        with pytest.raises(InvokeError):
            it.invoke()
    constant = reverse_model("float32", (2, 3, 4), axes)
    with pytest.raises(TflmError):
        run_tflm(constant, [x])
    with pytest.raises(PrepareError):
        Interpreter(constant).allocate_tensors()


@pytest.mark.parametrize("model", [
    reverse_model("float32", (2, 3), [0], axes_dtype="int64"),
    op_model("REVERSE_V2", [T((2, 3), "float32"), T((1, 1), "int32", data=[[0]])], [T((2, 3), "float32")]),
    reverse_model("float32", (1, 2, 1, 2, 1, 2, 2), [1]),
    op_model("REVERSE_V2", [T((2, 3), "float32"), T((1,), "int32", data=[0])], [T((2, 3), "int32")]),
    op_model("REVERSE_V2", [T((), "float32", data=1.0), T((1,), "int32", data=[0])], [T((), "float32")]),
], ids=["int64 axes", "2-D axes", "7-D input", "output type", "more axes than dimensions"])
def test_rejects_what_tflm_rejects(model: bytes) -> None:
    with pytest.raises(TflmError):
        run_tflm(model, [])
    with pytest.raises(PrepareError):
        Interpreter(model).allocate_tensors()


def test_refuses_an_output_with_another_element_count() -> None:
    with pytest.raises(PrepareError, match="elements"):
        Interpreter(reverse_model("float32", (2, 3), [0], out_shape=(5,))).allocate_tensors()


@pytest.mark.parametrize("dtype", ["int8", "bool"])
def test_head_equals_tflm(dtype: str) -> None:
    model = reverse_model(dtype, (3, 5, 2), [0, 1])
    it = Interpreter(model, planner="tflm")
    it.allocate_tensors()
    assert it.head == tflm_arena(model)["head"]


@pytest.mark.parametrize("dtype", ["float16", "uint16"])
def test_unsupported_types(dtype: str) -> None:
    model = reverse_model(dtype, (2, 3), [0])
    with pytest.raises(TflmError):
        run_tflm(model, [])
    with pytest.raises(UnsupportedError):
        Interpreter(model)
