"""Checks shared by the spatial kernels (RESIZE_*, *_TO_SPACE*, SPACE_TO_*): NHWC shapes and constant sizes."""

from __future__ import annotations

import numpy as np

from micronn.ir import Tensor
from micronn.kernels.base import Node


def one_in_one_out(node: Node, n_inputs: int) -> tuple[Tensor, Tensor]:
    """The first input and the output, after checking the operator's arity."""
    if len(node.inputs) != n_inputs or len(node.outputs) != 1 or any(t is None for t in node.inputs):
        raise node.fail(f"expects {n_inputs} input(s) and 1 output")
    return node.inputs[0], node.outputs[0]


def check_same_type(node: Node, inp: Tensor, out: Tensor, allowed: tuple[str, ...]) -> None:
    """TFLM's type checks: the input type is one the kernel handles and the output has the same type."""
    if inp.dtype.name not in allowed:
        raise node.fail(f"input type {inp.dtype.name} is not supported (TFLM handles {', '.join(allowed)})")
    if out.dtype != inp.dtype:
        raise node.fail(f"input is {inp.dtype.name} but output is {out.dtype.name}")


def constant_int32(node: Node, i: int, what: str, shape: tuple[int, ...], at_least: bool = False) -> np.ndarray:
    """Input ``i`` as an int64 array: TFLM needs it constant (the output shape is fixed), int32, of ``shape``.

    With ``at_least`` a longer 1-D tensor is accepted too and only its first ``shape[0]`` values are used.
    """
    t = node.inputs[i]
    if t.dtype != np.int32:
        raise node.fail(f"the {what} tensor must be int32, got {t.dtype.name}")
    ok = len(t.shape) == 1 and t.shape[0] >= shape[0] if at_least else tuple(t.shape) == shape
    if not ok:
        raise node.fail(f"the {what} tensor must have shape {shape}{' or longer' if at_least else ''}, got {t.shape}")
    if not t.is_constant:
        raise node.fail(f"the {what} tensor must be constant (TFLM does not resize tensors at run time)")
    return np.asarray(node.input(i), np.int64).reshape(-1)[: int(np.prod(shape))].reshape(shape)


def check_output_shape(node: Node, out: Tensor, expected: tuple[int, ...]) -> None:
    """TFLM writes as many elements as ``expected`` holds: refuse an output tensor of any other shape."""
    expected = tuple(int(d) for d in expected)
    if tuple(out.shape) != expected:
        raise node.fail(f"output shape {tuple(out.shape)} does not match the computed shape {expected}")
