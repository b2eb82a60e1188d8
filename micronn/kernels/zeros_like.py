"""ZEROS_LIKE: a tensor of zeros shaped like the input, like TFLM's reference kernel.

The zeros are raw zeros, whatever the output's zero point.
"""

from __future__ import annotations

from micronn.kernels.base import Kernel, Node, register


@register
class ZerosLike(Kernel):
    """TFLM ZEROS_LIKE for float32, int8, int32 and int64."""

    op = "ZEROS_LIKE"
    dtypes = frozenset({"float32", "int8", "int32", "int64"})

    def prepare(self, node: Node) -> None:
        if len(node.inputs) != 1 or node.inputs[0] is None or len(node.outputs) != 1:
            raise node.fail("expects 1 input and 1 output")
        inp, out = node.inputs[0], node.outputs[0]
        if inp.dtype != out.dtype:
            raise node.fail(f"input is {inp.dtype.name} but output is {out.dtype.name}")
        if int(inp.nbytes) != int(out.nbytes):
            raise node.fail(f"input {inp.shape} and output {out.shape} differ in size")

    def invoke(self, node: Node) -> None:
        node.output(0)[...] = 0
