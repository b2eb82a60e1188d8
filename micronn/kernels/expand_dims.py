"""EXPAND_DIMS: insert a dimension of size 1, a copy like TFLM's reference kernel.

TFLM needs the axis to be a constant int32 tensor of at most one dimension (it reads the first value),
accepts axis in [-rank - 1, rank] and checks the output's static shape at prepare.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels.base import Kernel, Node, register


@register
class ExpandDims(Kernel):
    """TFLM EXPAND_DIMS for float32, int8 and int16."""

    op = "EXPAND_DIMS"
    dtypes = frozenset({"float32", "int8", "int16"})

    def prepare(self, node: Node) -> None:
        if len(node.inputs) != 2 or any(t is None for t in node.inputs) or len(node.outputs) != 1:
            raise node.fail("expects 2 inputs (input, axis) and 1 output")
        inp, axis, out = node.inputs[0], node.inputs[1], node.outputs[0]
        if inp.dtype != out.dtype:
            raise node.fail(f"input is {inp.dtype.name} but output is {out.dtype.name}")
        if not axis.is_constant:
            raise node.fail("the axis must be a constant tensor (TFLM rejects a computed axis)")
        if len(axis.shape) > 1:
            raise node.fail(f"the axis must be a scalar or 1-D, got shape {axis.shape}")
        if axis.dtype != np.int32:
            raise node.fail(f"the axis must be int32 (TFLM rejects {axis.dtype.name})")
        rank = len(inp.shape)
        value = int(node.input(1).reshape(-1)[0])
        a = value + rank + 1 if value < 0 else value
        if not 0 <= a <= rank:
            raise node.fail(f"axis {value} is out of range for a {rank}-D input")
        want = tuple(inp.shape[:a]) + (1,) + tuple(inp.shape[a:])
        if tuple(out.shape) != want:
            raise node.fail(f"expanding {inp.shape} at axis {value} gives {want}, but the output is {out.shape}")

    def invoke(self, node: Node) -> None:
        dst = node.output(0)
        dst[...] = np.reshape(node.input(0), dst.shape)
