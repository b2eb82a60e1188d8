"""PACK: stack N same-shaped tensors along a new axis, a raw copy like TFLM's reference kernel.

TFLM's PACK has no prepare: it trusts ``values_count``, ``axis`` and the output shape and copies raw
values (quantized inputs are not requantized). micronn checks those at prepare instead, because a
mismatch would make TFLM read or write out of bounds.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels.base import Kernel, Node, register


@register
class Pack(Kernel):
    """TFLM PACK for float32, int8, int16, int32 and int64."""

    op = "PACK"
    dtypes = frozenset({"float32", "int8", "int16", "int32", "int64"})

    def prepare(self, node: Node) -> None:
        inputs, out = node.inputs, node.outputs[0]
        if not inputs or any(t is None for t in inputs) or len(node.outputs) != 1:
            raise node.fail("expects at least one input and exactly one output")
        opts = node.options
        count = opts.values_count if opts is not None else 0
        if count != len(inputs):
            raise node.fail(f"values_count is {count} but the operator has {len(inputs)} inputs")
        first = inputs[0]
        for i, t in enumerate(inputs):
            if t.dtype != out.dtype:
                raise node.fail(f"input {i} is {t.dtype.name} but the output is {out.dtype.name}")
            if tuple(t.shape) != tuple(first.shape):
                raise node.fail(f"input {i} has shape {t.shape}, input 0 has {first.shape}")
        rank = len(out.shape)
        axis = opts.axis if opts is not None else 0
        self.axis = axis + rank if axis < 0 else axis
        if not 0 <= self.axis < rank:
            raise node.fail(f"axis {axis} is out of range for a {rank}-D output")
        expected = list(first.shape)
        expected.insert(self.axis, len(inputs))
        if tuple(expected) != tuple(out.shape):
            raise node.fail(f"stacking {len(inputs)} x {first.shape} on axis {self.axis} gives {tuple(expected)}, "
                            f"the output is {out.shape}")

    def invoke(self, node: Node) -> None:
        np.stack([node.input(i) for i in range(len(node.inputs))], axis=self.axis, out=node.output(0))
