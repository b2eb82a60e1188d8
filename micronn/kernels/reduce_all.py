"""REDUCE_ALL: logical AND over some axes of a bool tensor, like TFLM's reference kernel.

TFLM (bool only) shares the prepare of REDUCE_MAX: an int32 axis tensor, read at every invoke, and two
scratch requests for its index bookkeeping (4 bytes per input dimension, 4 per axis entry). Axes wrap
when negative and may repeat; an axis out of range fails the invoke. The output starts true and takes
``in && current`` for each element (see ``_reduce.Reducer``).
"""

from __future__ import annotations

import numpy as np

from micronn.kernels._extra import refuse_zero_size
from micronn.kernels._reduce import Reducer, reduced_2d
from micronn.kernels.base import Node, register


@register
class ReduceAll(Reducer):
    """TFLM REDUCE_ALL for bool (the wheel refuses other types at prepare)."""

    op = "REDUCE_ALL"
    dtypes = frozenset({"bool"})
    reads_input_first = True  # the whole result is computed before the output is written

    def prepare(self, node: Node) -> None:
        refuse_zero_size(node, [*node.inputs, *node.outputs])
        self.check_common(node)

    def invoke(self, node: Node) -> None:
        x2 = reduced_2d(node.input(0), self.current_axes(node))
        node.output(0).reshape(-1)[...] = np.all(x2, axis=1)
