"""REVERSE_V2: a tensor reversed along some axes, like TFLM's reference kernel.

The axes are a 1-D int32 tensor read at every invoke: negative ones wrap, and TFLM fails the invoke on
an axis out of range and on axes that are not contiguous once sorted (which includes a repeated axis).
Reversing a contiguous block of axes is flipping each of them. Values are copied raw, so every type the
wheel accepts works alike. The input has at most 6 dimensions and no fewer than the axes entries; the
output needs as many elements (TFLM writes the input's flat count).
"""

from __future__ import annotations

import numpy as np

from micronn.kernels._extra import element_count, invoke_error, refuse_zero_size
from micronn.kernels.base import Kernel, Node, register

MAX_DIMS = 6


@register
class ReverseV2(Kernel):
    """TFLM REVERSE_V2 for float32, int8, uint8, int16, int32, int64 and bool."""

    op = "REVERSE_V2"
    dtypes = frozenset({"float32", "int8", "uint8", "int16", "int32", "int64", "bool"})
    reads_input_first = True  # the reversed copy is made before the output is written

    def prepare(self, node: Node) -> None:
        if len(node.inputs) != 2 or any(t is None for t in node.inputs) or len(node.outputs) != 1:
            raise node.fail("expects 2 inputs (input, axes) and 1 output")
        inp, axes, out = node.inputs[0], node.inputs[1], node.outputs[0]
        refuse_zero_size(node, [inp, axes, out])
        if len(axes.shape) != 1:
            raise node.fail(f"the axes must be 1-D, got shape {tuple(axes.shape)}")
        if len(inp.shape) > MAX_DIMS:
            raise node.fail(f"the input has {len(inp.shape)} dimensions; TFLM supports at most {MAX_DIMS}")
        if axes.shape[0] > len(inp.shape):
            raise node.fail(f"{axes.shape[0]} axes for a {len(inp.shape)}-D input")
        if axes.dtype != np.int32:
            raise node.fail(f"the axes must be int32, got {axes.dtype.name}")
        if out.dtype != inp.dtype:
            raise node.fail(f"the output is {out.dtype.name} but the input is {inp.dtype.name}")
        if element_count(out) != element_count(inp):
            raise node.fail(f"the output {tuple(out.shape)} must hold as many elements as the input "
                            f"{tuple(inp.shape)}")
        self.axes: tuple[int, ...] | None = None
        if axes.is_constant:
            self.axes = self.resolve(node, node.input(1), node.fail)

    def resolve(self, node: Node, values: np.ndarray, error) -> tuple[int, ...]:
        rank = len(node.inputs[0].shape)
        resolved = []
        for v in values.reshape(-1).tolist():
            a = v + rank if v < 0 else v
            if not 0 <= a < rank:
                raise error(f"axis {v} is out of range for a {rank}-D input (TFLM fails at invoke)")
            resolved.append(a)
        resolved.sort()
        if any(b != a + 1 for a, b in zip(resolved, resolved[1:], strict=False)):
            raise error(f"axes {values.reshape(-1).tolist()} are not contiguous (TFLM supports only a contiguous "
                        "block of distinct axes and fails at invoke)")
        return tuple(resolved)

    def invoke(self, node: Node) -> None:
        axes = self.axes if self.axes is not None else self.resolve(
            node, node.input(1), lambda msg: invoke_error(node, msg))
        out = node.output(0)
        out[...] = np.flip(node.input(0), axes).copy().reshape(out.shape)
