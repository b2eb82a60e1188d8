"""LOGICAL_NOT of a bool tensor, like TFLM's reference kernel (which refuses other types at invoke)."""

from __future__ import annotations

import numpy as np

from micronn.kernels import _elementwise as ew
from micronn.kernels.base import Kernel, Node, register


@register
class LogicalNot(Kernel):
    op = "LOGICAL_NOT"
    dtypes = frozenset({"bool"})
    reads_input_first = True  # computes the whole result before writing

    def prepare(self, node: Node) -> None:
        (a,), out = ew.operands(node, 1)
        ew.same_types(node, [a, out], ["the input", "the output"])
        ew.check_broadcast(node, [a], out, max_dims=None)

    def invoke(self, node: Node) -> None:
        out = node.output(0)
        out[...] = np.logical_not(node.input(0)).reshape(out.shape)
