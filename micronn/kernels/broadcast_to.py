"""BROADCAST_TO: repeat a tensor along dimensions of size 1 (and new leading ones), like TFLM's kernel.

TFLM needs the target ``shape`` (int32 or int64) to be a constant equal to the output's static shape, of
at most 5 dimensions, broadcastable from the input (numpy's rules); it copies bytes, so every type works.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels.base import Kernel, Node, register

MAX_DIMS = 5


@register
class BroadcastTo(Kernel):
    """TFLM BROADCAST_TO: a byte copy for every fixed-size type."""

    op = "BROADCAST_TO"
    dtypes = frozenset({"float32", "float16", "int8", "int16", "int32", "int64", "uint8", "bool"})  # as verified

    def prepare(self, node: Node) -> None:
        if len(node.inputs) != 2 or any(t is None for t in node.inputs) or len(node.outputs) != 1:
            raise node.fail("expects 2 inputs (input, shape) and 1 output")
        inp, shape, out = node.inputs[0], node.inputs[1], node.outputs[0]
        if len(inp.shape) > MAX_DIMS or len(out.shape) > MAX_DIMS:
            raise node.fail(f"TFLM's BROADCAST_TO supports at most {MAX_DIMS} dimensions")
        if shape.dtype not in (np.int32, np.int64):
            raise node.fail(f"the shape must be int32 or int64, got {shape.dtype.name}")
        if inp.dtype != out.dtype:
            raise node.fail(f"input is {inp.dtype.name} but output is {out.dtype.name}")
        if not shape.is_constant:
            raise node.fail("the shape must be a constant tensor (TFLM rejects a computed shape)")
        if len(shape.shape) != 1:
            raise node.fail(f"the shape must be 1-D, got shape {shape.shape}")
        target = tuple(int(v) for v in node.input(1))
        if target != tuple(out.shape):
            raise node.fail(f"the shape {list(target)} differs from the output shape {out.shape}")
        extra = len(target) - len(inp.shape)
        if extra < 0 or any(d not in (1, target[extra + k]) for k, d in enumerate(inp.shape)):
            raise node.fail(f"input {inp.shape} cannot be broadcast to {target}")

    def invoke(self, node: Node) -> None:
        out = node.output(0)
        out[...] = np.broadcast_to(node.input(0), out.shape)
