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


# ---- SPACE_TO_BATCH_ND / BATCH_TO_SPACE_ND ----------------------------------------------------------------------


def as_4d(shape: tuple[int, ...]) -> tuple[int, int, int, int]:
    """TFLM's 4-D view of a 3-D (batch, height, depth) tensor: a width of 1."""
    return (shape[0], shape[1], 1, shape[2]) if len(shape) == 3 else tuple(shape)  # type: ignore[return-value]


class BlockParams:
    """The block shape and paddings (or crops) inputs of the *_ND ops, as TFLM reads them.

    TFLM reads both as int32 and accepts them at run time; a 3-D tensor has one spatial dimension, which
    TFLM treats as a height with a width of 1 (block width 1, no padding). ``values(node)`` gives
    ``(block_h, block_w, before_h, before_w)`` for the current values, checked once per distinct value.
    """

    def __init__(self, node: Node, what: str):
        inp, out = node.inputs[0], node.outputs[0]
        if not 3 <= len(inp.shape) <= 4:
            raise node.fail(f"input must be 3-D or 4-D, got shape {inp.shape}")
        if len(out.shape) != len(inp.shape):
            raise node.fail(f"output rank {len(out.shape)} differs from input rank {len(inp.shape)}")
        if out.shape[-1] != inp.shape[-1]:
            raise node.fail(f"output depth {out.shape[-1]} differs from input depth {inp.shape[-1]}")
        spatial = len(inp.shape) - 2
        for i, name, shape in ((1, "block shape", (spatial,)), (2, what, (spatial, 2))):
            t = node.inputs[i]
            if t.dtype != np.int32:
                raise node.fail(f"the {name} tensor must be int32 (TFLM reads it as int32), got {t.dtype.name}")
            if tuple(t.shape) != shape:
                raise node.fail(f"the {name} tensor must have shape {shape} for a {len(inp.shape)}-D input, "
                                f"got {t.shape}")
        self.spatial = spatial
        self.constant = node.inputs[1].is_constant and node.inputs[2].is_constant

    def values(self, node: Node) -> tuple[int, int, int, int]:
        block = [int(v) for v in np.asarray(node.input(1)).reshape(-1)]
        pads = [int(v) for v in np.asarray(node.input(2)).reshape(-1)]
        if self.spatial == 1:
            return block[0], 1, pads[0], 0
        return block[0], block[1], pads[0], pads[2]
