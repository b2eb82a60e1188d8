"""GATHER: pick slices of a tensor along one axis by index, like TFLM's reference kernel.

The input splits into (batch, outer, axis, inner) around ``axis`` and ``batch_dims``; the positions
(int32 only) pick along the axis, separately per batch. TFLM checks at invoke that every position lies in
[0, axis size) and fails otherwise: micronn raises an InvokeError then (a PrepareError for constant
positions). TFLM computes the output shape itself; micronn requires the model's to agree.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels._reduce import invoke_error
from micronn.kernels.base import Kernel, Node, register


@register
class Gather(Kernel):
    """TFLM GATHER for float32 and int8 values, int32 positions."""

    op = "GATHER"
    dtypes = frozenset({"float32", "int8"})

    def prepare(self, node: Node) -> None:
        if len(node.inputs) != 2 or any(t is None for t in node.inputs) or len(node.outputs) != 1:
            raise node.fail("expects 2 inputs (input, positions) and 1 output")
        inp, coords, out = node.inputs[0], node.inputs[1], node.outputs[0]
        if coords.dtype != np.int32:
            raise node.fail(f"positions must be int32 (TFLM rejects {coords.dtype.name})")
        if inp.dtype != out.dtype:
            raise node.fail(f"input is {inp.dtype.name} but output is {out.dtype.name}")
        rank, crank = len(inp.shape), len(coords.shape)
        opts = node.options
        axis, batch_dims = (opts.axis, opts.batch_dims) if opts is not None else (0, 0)
        self.axis = axis + rank if axis < 0 else axis
        if not 0 <= self.axis < rank:
            raise node.fail(f"axis {axis} is out of range for a {rank}-D input")
        bd = batch_dims + crank if batch_dims < 0 else batch_dims
        if not (0 <= bd < rank and bd <= crank and bd <= self.axis):
            raise node.fail(f"batch_dims {batch_dims} must lie in [0, min(axis, rank of positions)] "
                            f"(axis {self.axis}, positions {coords.shape}, input {inp.shape})")
        if tuple(inp.shape[:bd]) != tuple(coords.shape[:bd]):
            raise node.fail(f"the first {bd} dimensions of input {inp.shape} and positions {coords.shape} differ")
        want = tuple(inp.shape[: self.axis]) + tuple(coords.shape[bd:]) + tuple(inp.shape[self.axis + 1:])
        if tuple(out.shape) != want:
            raise node.fail(f"gathering gives shape {want}, but the output is {out.shape}")
        batch = int(np.prod(inp.shape[:bd], dtype=np.int64))
        outer = int(np.prod(inp.shape[bd: self.axis], dtype=np.int64))
        inner = int(np.prod(inp.shape[self.axis + 1:], dtype=np.int64))
        self.in_shape = (batch, outer, inp.shape[self.axis], inner)
        self.coords_shape = (batch, -1)
        self.batch_index = np.arange(batch).reshape(batch, 1, 1)
        self.outer_index = np.arange(outer).reshape(1, outer, 1)
        if coords.is_constant:
            self.check(node.input(1), node.fail)

    def check(self, coords: np.ndarray, error) -> None:
        size = self.in_shape[2]
        bad = (coords < 0) | (coords >= size)
        if bad.any():
            raise error(f"position {int(coords[bad].reshape(-1)[0])} is outside [0, {size}) (TFLM fails at invoke)")

    def invoke(self, node: Node) -> None:
        coords = node.input(1)
        self.check(coords, lambda msg: invoke_error(node, msg))
        x = node.input(0).reshape(self.in_shape)
        c = coords.reshape(self.coords_shape)[:, None, :]
        out = node.output(0)
        out[...] = x[self.batch_index, self.outer_index, c].reshape(out.shape)
