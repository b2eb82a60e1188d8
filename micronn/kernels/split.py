"""SPLIT: cut a tensor into equal parts along one axis, like TFLM's reference kernel.

TFLM needs the axis (input 0) to be a constant of the model and reads its first int32 word. Every
output gets the extent of output 0 along the axis; micronn checks the outputs really are equal parts of
the input (TFLM only asserts this in debug builds) and then copies.
"""

from __future__ import annotations

import numpy as np

from micronn.ir import Tensor
from micronn.kernels._reduce import int32_words
from micronn.kernels.base import Kernel, Node, register


def split_axis(node: Node, index: int, rank: int) -> int:
    """The constant split axis in input ``index``, wrapped like TFLM (which rejects a computed axis)."""
    t = node.inputs[index]
    if t is None or not t.is_constant:
        raise node.fail("the axis must be a constant tensor (TFLM rejects a computed axis)")
    if t.dtype not in (np.int32, np.int64):
        raise node.fail(f"the axis must be int32 (TFLM reads an int32 from it), got {t.dtype.name}")
    value = int(int32_words(node, index)[0])
    axis = value + rank if value < 0 else value
    if not 0 <= axis < rank:
        raise node.fail(f"axis {value} is out of range for a {rank}-D input (TFLM fails at invoke)")
    return axis


def check_parts(node: Node, inp: Tensor, axis: int) -> list[int]:
    """Check the outputs tile the input along ``axis``; returns the split points."""
    inp_shape = tuple(inp.shape)
    sizes = []
    for i, t in enumerate(node.outputs):
        same_rank = len(t.shape) == len(inp_shape)
        if not same_rank or any(d != e for k, (d, e) in enumerate(zip(t.shape, inp_shape)) if k != axis):
            raise node.fail(f"output {i} has shape {t.shape}, which is not a part of input {inp_shape} "
                            f"along axis {axis}")
        if t.dtype != inp.dtype:
            raise node.fail(f"output {i} is {t.dtype.name}, the input {inp.dtype.name}")
        sizes.append(int(t.shape[axis]))
    if sum(sizes) != inp_shape[axis]:
        raise node.fail(f"the outputs add up to {sum(sizes)} along axis {axis}, the input has {inp_shape[axis]}")
    return [int(v) for v in np.cumsum(sizes)[:-1]]


@register
class Split(Kernel):
    """TFLM SPLIT for float32, int8, int16 and int32 (the data is input 1; input 0 is the axis)."""

    op = "SPLIT"
    dtypes = frozenset({"float32", "int8", "int16", "int32"})
    data = 1  # the input holding the data (SPLIT_V: 0)

    def dtype_key(self, node: Node) -> str:
        t = node.inputs[self.data] if len(node.inputs) > self.data else None
        return (t if t is not None else node.outputs[0]).dtype.name

    def prepare(self, node: Node) -> None:
        if len(node.inputs) != 2 or any(t is None for t in node.inputs) or not node.outputs:
            raise node.fail("expects 2 inputs (axis, input) and at least 1 output")
        inp = node.inputs[1]
        self.axis = split_axis(node, 0, len(inp.shape))
        shapes = {tuple(t.shape) for t in node.outputs}
        if len(shapes) != 1:
            raise node.fail(f"the outputs have different shapes {sorted(shapes)}; TFLM's SPLIT gives every output "
                            "the shape of output 0")
        self.points = check_parts(node, inp, self.axis)

    def invoke(self, node: Node) -> None:
        for i, part in enumerate(np.split(node.input(self.data), self.points, axis=self.axis)):
            node.output(i)[...] = part
