"""Checks shared by the spatial kernels (RESIZE_*, *_TO_SPACE*, SPACE_TO_*): NHWC shapes and constant sizes."""

from __future__ import annotations

import numpy as np

from micronn.errors import InvokeError
from micronn.ir import Tensor
from micronn.kernels.base import Kernel, Node

BLOCK_DTYPES = ("float32", "int8")  # of DEPTH_TO_SPACE, SPACE_TO_DEPTH, SPACE_TO_BATCH_ND and BATCH_TO_SPACE_ND


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


def resize_operands(node: Node, dtypes: tuple[str, ...], at_least: bool = False) -> tuple[Tensor, Tensor, int, int]:
    """(input, output, output height, output width) of RESIZE_*: 4-D NHWC and a constant int32 size."""
    inp, out = one_in_one_out(node, 2)
    check_same_type(node, inp, out, dtypes)
    if len(inp.shape) != 4:
        raise node.fail(f"input must be 4-D (NHWC), got shape {inp.shape}")
    out_h, out_w = (int(v) for v in constant_int32(node, 1, "size", (2,), at_least=at_least))
    if out_h < 1 or out_w < 1:
        raise node.fail(f"size must be positive, got {out_h}x{out_w}")
    check_output_shape(node, out, (inp.shape[0], out_h, out_w, inp.shape[3]))
    return inp, out, out_h, out_w


def block_size_operands(node: Node) -> tuple[Tensor, Tensor, int]:
    """(input, output, block size) of DEPTH_TO_SPACE / SPACE_TO_DEPTH after TFLM's checks."""
    inp, out = one_in_one_out(node, 1)
    if len(inp.shape) != 4:
        raise node.fail(f"input must be 4-D (NHWC), got shape {inp.shape}")
    check_same_type(node, inp, out, BLOCK_DTYPES)
    bs = node.options.block_size
    if bs < 1:
        raise node.fail(f"block_size must be positive, got {bs}")
    return inp, out, bs


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


class BlockKernel(Kernel):
    """What SPACE_TO_BATCH_ND and BATCH_TO_SPACE_ND share: checks, and a gather mapping computed once per distinct
    block shape and paddings (crops) value by ``build(node, key) -> (mapping, error message or None)``."""

    dtypes = frozenset(BLOCK_DTYPES)
    pads_name: str  # what the third input is called

    def prepare(self, node: Node) -> None:
        inp, out = one_in_one_out(node, 3)
        check_same_type(node, inp, out, BLOCK_DTYPES)
        self.params = BlockParams(node, self.pads_name)
        self.in4, self.out4 = as_4d(inp.shape), as_4d(out.shape)
        self.cache: dict[tuple[int, ...], object] = {}
        if self.params.constant:
            self.mapping(node, prepare=True)

    def build(self, node: Node, key: tuple[int, int, int, int]) -> tuple[object, str | None]:
        raise NotImplementedError

    def mapping(self, node: Node, prepare: bool = False):
        key = self.params.values(node)
        if key not in self.cache:
            block_h, block_w = key[:2]
            msg = None
            if block_h < 1 or block_w < 1:
                msg = f"block shape must be positive, got {block_h}x{block_w}"
            else:
                mapping, msg = self.build(node, key)
            if msg is not None:
                raise node.fail(msg) if prepare else InvokeError(f"operator {node.index} ({self.op}): {msg}")
            self.cache[key] = mapping
        return self.cache[key]
