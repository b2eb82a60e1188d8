"""SELECT_V2: ``x if condition else y`` elementwise, with numpy broadcasting of all three operands,
like TFLM's reference kernel. Values are copied raw (no requantization between x, y and the output).
"""

from __future__ import annotations

import numpy as np

from micronn.kernels import _elementwise as ew
from micronn.kernels.base import Kernel, Node, register


@register
class SelectV2(Kernel):
    """TFLM SELECT_V2 for float32, int8 and int16 values (the condition is bool)."""

    op = "SELECT_V2"
    dtypes = frozenset({"float32", "int8", "int16"})

    def dtype_key(self, node: Node) -> str:
        """The type of the selected values (the first input is the bool condition)."""
        t = node.inputs[1] if len(node.inputs) > 1 and node.inputs[1] is not None else node.outputs[0]
        return t.dtype.name

    def prepare(self, node: Node) -> None:
        (cond, x, y), out = ew.operands(node, 3)
        if cond.dtype != np.bool_:
            raise node.fail(f"the condition must be bool, got {cond.dtype.name}")
        ew.same_types(node, [x, y, out], ["x", "y", "the output"])
        ew.check_broadcast(node, [cond, x, y], out)

    def invoke(self, node: Node) -> None:
        cond, x, y = ew.broadcast_inputs(node, 3)
        out = node.output(0)
        out[...] = np.where(cond, x, y).reshape(out.shape)
