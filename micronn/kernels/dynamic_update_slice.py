"""DYNAMIC_UPDATE_SLICE: the operand with a block overwritten by ``update``, like TFLM's reference kernel.

The start of the block comes from a 1-D int32/int64 tensor (one entry per operand dimension, read at every
invoke) and is clamped into ``[0, operand dim - update dim]`` in int64, so it never fails at run time.
The update has the operand's rank and no larger dimensions. Values are copied raw (no requantization).
The wheel runs float32, int8, int16 and int32 operands; it fails other types at invoke, and refuses operands
of rank 0 or above 6 at prepare. TFLM never checks the output: micronn requires the operand's shape and type.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels._extra import refuse_zero_size
from micronn.kernels.base import Kernel, Node, register

MAX_DIMS = 6


@register
class DynamicUpdateSlice(Kernel):
    """TFLM DYNAMIC_UPDATE_SLICE for float32, int8, int16 and int32 operands."""

    op = "DYNAMIC_UPDATE_SLICE"
    dtypes = frozenset({"float32", "int8", "int16", "int32"})
    reads_input_first = True  # the updated copy is built before the output is written

    def prepare(self, node: Node) -> None:
        if len(node.inputs) != 3 or any(t is None for t in node.inputs) or len(node.outputs) != 1:
            raise node.fail("expects 3 inputs (operand, update, start indices) and 1 output")
        operand, update, start, out = *node.inputs, node.outputs[0]
        refuse_zero_size(node, [operand, update, start, out])
        if update.dtype != operand.dtype:
            raise node.fail(f"the update is {update.dtype.name} but the operand is {operand.dtype.name}")
        if out.dtype != operand.dtype:
            raise node.fail(f"the output is {out.dtype.name} but the operand is {operand.dtype.name}")
        if start.dtype not in (np.int32, np.int64):
            raise node.fail(f"the start indices must be int32 or int64, got {start.dtype.name}")
        rank = len(operand.shape)
        if len(start.shape) != 1 or start.shape[0] != rank:
            raise node.fail(f"the start indices must be 1-D with one entry per operand dimension ({rank}), got "
                            f"shape {tuple(start.shape)}")
        if len(update.shape) != rank:
            raise node.fail(f"the update has rank {len(update.shape)}, the operand {rank}")
        if any(u > d for u, d in zip(update.shape, operand.shape, strict=True)):
            raise node.fail(f"the update {tuple(update.shape)} is larger than the operand {tuple(operand.shape)}")
        if rank > MAX_DIMS:
            raise node.fail(f"the operand has {rank} dimensions; TFLM supports at most {MAX_DIMS}")
        if tuple(out.shape) != tuple(operand.shape):
            raise node.fail(f"the output {tuple(out.shape)} differs from the operand {tuple(operand.shape)}")
        self.limits = np.array(operand.shape, np.int64) - np.array(update.shape, np.int64)

    def invoke(self, node: Node) -> None:
        starts = np.clip(node.input(2).astype(np.int64).reshape(-1), 0, self.limits)
        update = node.input(1)
        result = np.array(node.input(0), copy=True)
        block = tuple(slice(int(s), int(s) + n) for s, n in zip(starts, update.shape, strict=True))
        result[block] = update
        node.output(0)[...] = result
