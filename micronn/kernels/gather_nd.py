"""GATHER_ND: pick elements or slices of a tensor by n-dimensional index, like TFLM's reference kernel.

The last dimension of ``indices`` (int32 only) holds ``nd`` coordinates into the first ``nd`` dimensions
of ``params``; each index row selects a slice of the remaining dimensions. TFLM turns a row into a flat
offset (in C int arithmetic) and checks only that the whole slice lies inside ``params``, not each
coordinate: ``[0, 5]`` into a 3x4 tensor reads element (1, 1). micronn computes exactly that, and raises
an InvokeError where TFLM fails ("gather_nd index out of bounds").
"""

from __future__ import annotations

import numpy as np

from micronn.kernels._reduce import invoke_error
from micronn.kernels.base import Kernel, Node, register
from micronn.quant import wrap_int32

MAX_INDICES_ND = 5


@register
class GatherNd(Kernel):
    """TFLM GATHER_ND for float32 and int8 params, int32 indices."""

    op = "GATHER_ND"
    dtypes = frozenset({"float32", "int8"})

    def prepare(self, node: Node) -> None:
        if len(node.inputs) != 2 or any(t is None for t in node.inputs) or len(node.outputs) != 1:
            raise node.fail("expects 2 inputs (params, indices) and 1 output")
        params, indices, out = node.inputs[0], node.inputs[1], node.outputs[0]
        if indices.dtype != np.int32:
            raise node.fail(f"indices must be int32 (TFLM rejects {indices.dtype.name})")
        if params.dtype != out.dtype:
            raise node.fail(f"params are {params.dtype.name} but the output is {out.dtype.name}")
        if len(params.shape) < 1 or len(indices.shape) < 1:
            raise node.fail("params and indices must be at least vectors")
        nd = indices.shape[-1]
        if nd > len(params.shape):
            raise node.fail(f"indices rows have {nd} coordinates, more than the {len(params.shape)} of params")
        if nd > MAX_INDICES_ND:
            raise node.fail(f"indices rows have {nd} coordinates; TFLM allows at most {MAX_INDICES_ND}")
        want = tuple(indices.shape[:-1]) + tuple(params.shape[nd:])
        if tuple(out.shape) != want:
            raise node.fail(f"gathering gives shape {want}, but the output is {out.shape}")
        self.flat_size = int(np.prod(params.shape, dtype=np.int64))
        self.slice_size = int(np.prod(params.shape[nd:], dtype=np.int64))
        self.strides = np.array([int(np.prod(params.shape[j + 1:], dtype=np.int64)) for j in range(nd)], np.int64)
        self.nd = nd
        self.offsets: np.ndarray | None = None
        if indices.is_constant:
            self.offsets = self.flat_offsets(node.input(1), node.fail)

    def flat_offsets(self, indices: np.ndarray, error) -> np.ndarray:
        """Each row's flat offset into params as TFLM's int arithmetic computes it, checked like TFLM."""
        rows = indices.reshape(-1, self.nd).astype(np.int64)
        pos = wrap_int32(wrap_int32(rows * self.strides).sum(axis=1))
        bad = (pos < 0) | (pos + self.slice_size > self.flat_size)
        if bad.any():
            row = rows[np.argmax(bad)].tolist()
            raise error(f"index {row} is out of bounds: its slice starts at flat offset {int(pos[bad][0])} of "
                        f"{self.flat_size} (TFLM fails: gather_nd index out of bounds)")
        return pos

    def invoke(self, node: Node) -> None:
        pos = self.offsets
        if pos is None:
            pos = self.flat_offsets(node.input(1), lambda msg: invoke_error(node, msg))
        flat = node.input(0).reshape(-1)
        take = pos[:, None] + np.arange(self.slice_size)
        out = node.output(0)
        out[...] = flat[take].reshape(out.shape)
