"""SLICE: a contiguous block of a tensor (``begin`` and ``size`` per dimension), like TFLM's reference kernel.

TFLM reads ``begin`` and ``size`` (int32 or int64, both read as begin's type) at every invoke, so they may
be computed; a size of -1 means "to the end". It then walks the block and writes the output in order,
without bounds checks: micronn checks the block lies inside the input and has the output's shape (at
prepare for constant begin/size, else at invoke).
"""

from __future__ import annotations

import numpy as np

from micronn.kernels._reduce import invoke_error
from micronn.kernels.base import Kernel, Node, register

MAX_DIMS = 5


@register
class Slice(Kernel):
    """TFLM SLICE for float32, int8, int16, int32 and bool."""

    op = "SLICE"
    dtypes = frozenset({"float32", "int8", "int16", "int32", "bool"})

    def prepare(self, node: Node) -> None:
        if len(node.inputs) != 3 or any(t is None for t in node.inputs) or len(node.outputs) != 1:
            raise node.fail("expects 3 inputs (input, begin, size) and 1 output")
        inp, begin, size = node.inputs
        out = node.outputs[0]
        if inp.dtype != out.dtype:
            raise node.fail(f"input is {inp.dtype.name} but output is {out.dtype.name}")
        for name, t in (("begin", begin), ("size", size)):
            if t.dtype not in (np.int32, np.int64):
                raise node.fail(f"{name} must be int32 or int64, got {t.dtype.name}")
            if len(t.shape) != 1:
                raise node.fail(f"{name} must be 1-D, got shape {t.shape}")
        if size.dtype != begin.dtype:
            raise node.fail(f"begin is {begin.dtype.name} but size is {size.dtype.name}; TFLM reads both as "
                            "begin's type")
        if begin.shape != size.shape:
            raise node.fail(f"begin {begin.shape} and size {size.shape} differ in length")
        if len(inp.shape) > MAX_DIMS:
            raise node.fail(f"input has {len(inp.shape)} dimensions; TFLM slices at most {MAX_DIMS}")
        if begin.shape[0] < len(inp.shape):
            raise node.fail(f"begin and size have {begin.shape[0]} entries for a {len(inp.shape)}-D input: TFLM reads "
                            "one per input dimension, past their end, so its result is undefined")
        self.index: tuple[slice, ...] | None = None
        if begin.is_constant and size.is_constant:
            self.index = self.block(node, node.fail)

    def block(self, node: Node, error) -> tuple[slice, ...]:
        """The input block as slices, checked against the input and output shapes."""
        inp, out = node.inputs[0], node.outputs[0]
        rank = len(inp.shape)
        begin = node.input(1).reshape(-1)[:rank].astype(np.int64)
        size = node.input(2).reshape(-1)[:rank].astype(np.int64)
        stop = np.where(size == -1, np.array(inp.shape, np.int64), begin + size)
        shape = tuple(int(v) for v in stop - begin)
        if (begin < 0).any() or (stop > np.array(inp.shape)).any() or (stop < begin).any():
            raise error(f"begin {begin.tolist()} and size {size.tolist()} reach outside the input {inp.shape} "
                        "(TFLM would read out of bounds)")
        if shape != tuple(out.shape):
            raise error(f"the slice has shape {shape} but the output is {out.shape}")
        return tuple(slice(int(b), int(e)) for b, e in zip(begin, stop))

    def invoke(self, node: Node) -> None:
        index = self.index if self.index is not None else self.block(node, lambda msg: invoke_error(node, msg))
        node.output(0)[...] = node.input(0)[index]
