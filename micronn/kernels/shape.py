"""SHAPE: write the input's (static) dimensions into an int32 vector, like TFLM.

TFLM sees only the static shape stored in the model (a dynamic batch reads as 1) and writes int32
only: an int64 ``out_type`` fails in TFLM at invoke, so micronn refuses it at prepare.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels.base import Kernel, Node, register


@register
class Shape(Kernel):
    """TFLM SHAPE: any input type, int32 output."""

    op = "SHAPE"
    dtypes = frozenset({"int32"})

    def dtype_key(self, node: Node) -> str:
        """The type SHAPE produces (its input may have any type)."""
        return node.outputs[0].dtype.name

    def prepare(self, node: Node) -> None:
        if len(node.inputs) != 1 or node.inputs[0] is None or len(node.outputs) != 1:
            raise node.fail("expects 1 input and 1 output")
        inp, out = node.inputs[0], node.outputs[0]
        if out.dtype != np.int32:
            raise node.fail(f"TFLM's SHAPE writes int32 only, the output is {out.dtype.name}")
        if int(np.prod(out.shape)) != len(inp.shape):
            raise node.fail(f"the output has {int(np.prod(out.shape))} elements for a {len(inp.shape)}-D input")
        self.dims = np.array(inp.shape, np.int32)

    def invoke(self, node: Node) -> None:
        node.output(0).reshape(-1)[...] = self.dims
