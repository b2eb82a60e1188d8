"""EMBEDDING_LOOKUP: rows of a value table picked by int32 ids, like TFLM's reference kernel.

The ids are a 1-D int32 tensor; the table has at least 2 dimensions, rows along the first. float32 and
int8 tables are copied raw (int8 rows stay int8, whatever the quantization). An int8 table with a float32
output is dequantized row by row, ``scale * (float)q`` in float32 with TFLM's per-tensor scale (the
first one) and a zero point that must be 0. An id outside [0, rows) fails the invoke (a constant one,
the prepare). TFLM rewrites the output's shape to (ids,) + table shape[1:]; micronn requires it.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels._extra import invoke_error, refuse_zero_size
from micronn.kernels.base import Kernel, Node, register


@register
class EmbeddingLookup(Kernel):
    """TFLM EMBEDDING_LOOKUP for float32 and int8 tables (int8 to int8 or, dequantized, to float32)."""

    op = "EMBEDDING_LOOKUP"
    dtypes = frozenset({"float32", "int8"})
    reads_input_first = True  # the looked-up rows are gathered before the output is written

    def dtype_key(self, node: Node) -> str:
        """The table's type decides what TFLM computes (input 0 holds the int32 ids)."""
        t = node.inputs[1] if len(node.inputs) > 1 and node.inputs[1] is not None else node.outputs[0]
        return t.dtype.name

    def prepare(self, node: Node) -> None:
        if len(node.inputs) != 2 or any(t is None for t in node.inputs) or len(node.outputs) != 1:
            raise node.fail("expects 2 inputs (ids, table) and 1 output")
        ids, table, out = node.inputs[0], node.inputs[1], node.outputs[0]
        refuse_zero_size(node, [ids, table, out])
        if len(ids.shape) != 1 or ids.dtype != np.int32:
            raise node.fail(f"the ids must be a 1-D int32 tensor, got {ids.dtype.name} of shape {tuple(ids.shape)}")
        if len(table.shape) < 2:
            raise node.fail(f"the table needs at least 2 dimensions, got shape {tuple(table.shape)}")
        allowed = (np.float32,) if table.dtype == np.float32 else (np.float32, np.int8)
        if out.dtype not in allowed:
            raise node.fail(f"a {table.dtype.name} table cannot give a {out.dtype.name} output")
        expected = (ids.shape[0], *table.shape[1:])
        if tuple(out.shape) != expected:
            raise node.fail(f"the output shape {tuple(out.shape)} must be {expected} (TFLM rewrites it)")
        self.dequantize = table.dtype == np.int8 and out.dtype == np.float32
        if self.dequantize:
            if table.zero_point != 0:
                raise node.fail(f"dequantizing an int8 table needs a zero point of 0, got {table.zero_point}")
            self.scale = np.float32(table.scale)
        if ids.is_constant:
            self.check(node, node.input(0), node.fail)

    def check(self, node: Node, ids: np.ndarray, error) -> None:
        rows = node.inputs[1].shape[0]
        bad = (ids < 0) | (ids >= rows)
        if bad.any():
            raise error(f"id {int(ids[bad][0])} is outside [0, {rows}) (TFLM fails at invoke)")

    def invoke(self, node: Node) -> None:
        ids = node.input(0)
        self.check(node, ids, lambda msg: invoke_error(node, msg))
        rows = node.input(1)[ids]
        if self.dequantize:
            rows = self.scale * rows.astype(np.float32)
        node.output(0)[...] = rows
