"""LOGICAL_AND of two bool tensors with numpy broadcasting, like TFLM's reference kernel.

TFLM checks no types here and reads any operand as bytes of bool; micronn accepts bool only.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels import _elementwise as ew
from micronn.kernels.base import Kernel, Node, register


@register
class LogicalAnd(Kernel):
    op = "LOGICAL_AND"
    dtypes = frozenset({"bool"})
    reads_input_first = True  # computes the whole result before writing

    def prepare(self, node: Node) -> None:
        (a, b), out = ew.operands(node, 2)
        ew.same_types(node, [a, b, out], ["input 1", "input 2", "the output"])
        ew.check_broadcast(node, [a, b], out)

    @staticmethod
    def combine(x1: np.ndarray, x2: np.ndarray) -> np.ndarray:
        return np.logical_and(x1, x2)

    def invoke(self, node: Node) -> None:
        x1, x2 = ew.broadcast_inputs(node, 2)
        out = node.output(0)
        out[...] = self.combine(x1, x2).reshape(out.shape)
