"""LOG of a float32 tensor, like TFLM's reference kernel: C's ``logf`` bit for bit.

Zero gives -inf, negative inputs NaN. TFLM has no integer LOG.
"""

from __future__ import annotations

from micronn.kernels import _unary as un
from micronn.kernels.base import Kernel, Node, register


@register
class Log(Kernel):
    op = "LOG"
    dtypes = frozenset({"float32"})
    reads_input_first = True

    def prepare(self, node: Node) -> None:
        un.unary_operands(node)

    def invoke(self, node: Node) -> None:
        out = node.output(0)
        out[...] = un.logf(node.input(0)).reshape(out.shape)
