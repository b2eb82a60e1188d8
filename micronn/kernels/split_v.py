"""SPLIT_V: cut a tensor into parts of given sizes along one axis, like TFLM's reference kernel.

TFLM needs the axis (input 2) to be a constant and ignores the ``size_splits`` input: each output's static
shape gives its extent along the axis. micronn checks those extents tile the input, then copies.
"""

from __future__ import annotations

from micronn.kernels.base import Node, register
from micronn.kernels.split import Split, check_parts, split_axis


@register
class SplitV(Split):
    """TFLM SPLIT_V for float32, int8, int16 and int32."""

    op = "SPLIT_V"
    data = 0

    def prepare(self, node: Node) -> None:
        if len(node.inputs) != 3 or node.inputs[0] is None or node.inputs[2] is None or not node.outputs:
            raise node.fail("expects 3 inputs (input, size_splits, axis) and at least 1 output")
        inp = node.inputs[0]
        self.axis = split_axis(node, 2, len(inp.shape))
        self.points = check_parts(node, inp, self.axis)
