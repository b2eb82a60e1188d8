"""FILL: a tensor of the output's shape holding one value everywhere, like TFLM's reference kernel.

TFLM needs ``dims`` (input 0) to be a constant tensor equal to the output's static shape, and the value
(input 1) to be a scalar of the output's type; it copies the raw value (no requantization).
"""

from __future__ import annotations

import numpy as np

from micronn.kernels.base import Kernel, Node, register


@register
class Fill(Kernel):
    """TFLM FILL for float32, int8 and int32 values (the type is the value's, input 1)."""

    op = "FILL"
    dtypes = frozenset({"float32", "int8", "int32"})

    def dtype_key(self, node: Node) -> str:
        t = node.inputs[1] if len(node.inputs) > 1 and node.inputs[1] is not None else node.outputs[0]
        return t.dtype.name

    def prepare(self, node: Node) -> None:
        if len(node.inputs) != 2 or any(t is None for t in node.inputs) or len(node.outputs) != 1:
            raise node.fail("expects 2 inputs (dims, value) and 1 output")
        dims, value, out = node.inputs[0], node.inputs[1], node.outputs[0]
        if len(value.shape) != 0:
            raise node.fail(f"the value must be a scalar, got shape {value.shape}")
        if value.dtype != out.dtype:
            raise node.fail(f"the value is {value.dtype.name} but the output is {out.dtype.name}")
        if not dims.is_constant:
            raise node.fail("dims must be a constant tensor (TFLM rejects computed dims)")
        if dims.dtype not in (np.int8, np.int16, np.int32, np.int64):
            raise node.fail(f"dims must be an integer tensor, got {dims.dtype.name}")
        if len(dims.shape) != 1:
            raise node.fail(f"dims must be 1-D, got shape {dims.shape}")
        values = tuple(int(v) for v in node.input(0))
        if values != tuple(out.shape):
            raise node.fail(f"dims {list(values)} differ from the output shape {out.shape}")

    def invoke(self, node: Node) -> None:
        node.output(0)[...] = node.input(1).reshape(())
