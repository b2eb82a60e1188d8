"""UNPACK: slice a tensor along one axis into ``num`` tensors of one rank less, like TFLM's reference kernel.

TFLM loops over the ``num`` option (not over the operator's outputs) and uses it as the input's extent
along the axis, so micronn requires num, the number of outputs and that extent to agree.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels.base import Kernel, Node, register


@register
class Unpack(Kernel):
    """TFLM UNPACK for float32, int8, int16 and int32."""

    op = "UNPACK"
    dtypes = frozenset({"float32", "int8", "int16", "int32"})

    def prepare(self, node: Node) -> None:
        if len(node.inputs) != 1 or node.inputs[0] is None or not node.outputs:
            raise node.fail("expects 1 input and at least 1 output")
        inp = node.inputs[0]
        rank = len(inp.shape)
        opts = node.options
        num, axis = (opts.num, opts.axis) if opts is not None else (0, 0)
        self.axis = axis + rank if axis < 0 else axis
        if not 0 <= self.axis < rank:
            raise node.fail(f"axis {axis} is out of range for a {rank}-D input")
        if not num == len(node.outputs) == inp.shape[self.axis]:
            raise node.fail(f"num is {num}, there are {len(node.outputs)} outputs and the input has "
                            f"{inp.shape[self.axis]} along axis {self.axis}; TFLM unpacks num slices, leaving "
                            "other outputs unwritten or reading past the input")
        want = tuple(d for k, d in enumerate(inp.shape) if k != self.axis)
        for i, t in enumerate(node.outputs):
            if t.dtype != inp.dtype:
                raise node.fail(f"output {i} is {t.dtype.name}, the input {inp.dtype.name}")
            if int(np.prod(t.shape, dtype=np.int64)) != int(np.prod(want, dtype=np.int64)):
                raise node.fail(f"output {i} has shape {t.shape}, expected {want}")

    def invoke(self, node: Node) -> None:
        x = node.input(0)
        for i in range(len(node.outputs)):
            out = node.output(i)
            out[...] = np.take(x, i, axis=self.axis).reshape(out.shape)
