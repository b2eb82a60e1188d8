"""SQUEEZE: drop dimensions of size 1, a byte copy like TFLM's reference kernel.

With ``squeeze_dims`` empty TFLM drops every dimension of size 1, otherwise the listed ones (negative
counts from the end), which must have size 1. The output's static shape must be what remains.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels.base import Kernel, Node, register

MAX_DIMS = 8


@register
class Squeeze(Kernel):
    """TFLM SQUEEZE: a byte copy for every fixed-size type."""

    op = "SQUEEZE"
    dtypes = frozenset({"float32", "float16", "int8", "int16", "int32", "int64", "uint8", "bool"})  # as verified

    def prepare(self, node: Node) -> None:
        if len(node.inputs) != 1 or node.inputs[0] is None or len(node.outputs) != 1:
            raise node.fail("expects 1 input and 1 output")
        inp, out = node.inputs[0], node.outputs[0]
        if inp.dtype != out.dtype:
            raise node.fail(f"input is {inp.dtype.name} but output is {out.dtype.name}")
        rank = len(inp.shape)
        if rank > MAX_DIMS:
            raise node.fail(f"input has {rank} dimensions; TFLM squeezes at most {MAX_DIMS}")
        dims = node.options.squeeze_dims if node.options is not None else ()
        if not dims:
            drop = {k for k, d in enumerate(inp.shape) if d == 1}
        else:
            drop = set()
            for v in dims:
                k = v + rank if v < 0 else v
                if not 0 <= k < rank or inp.shape[k] != 1:
                    raise node.fail(f"cannot squeeze dimension {v} of input {inp.shape}")
                drop.add(k)
        want = tuple(d for k, d in enumerate(inp.shape) if k not in drop)
        if tuple(out.shape) != want:
            raise node.fail(f"squeezing {inp.shape} gives {want}, but the output is {out.shape}")

    def invoke(self, node: Node) -> None:
        dst = node.output(0)
        dst[...] = np.reshape(node.input(0), dst.shape)
