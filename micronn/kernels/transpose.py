"""TRANSPOSE: permute the dimensions of a tensor, like TFLM's reference kernel.

TFLM needs ``perm`` to be a constant 1-D tensor with one entry per input dimension, each in range, and
reads it as int32 words (so an int64 perm is misread); it allows at most 5 dimensions. micronn also
requires a true permutation (TFLM does not check for repeats) and the output shape it implies.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels._reduce import int32_words
from micronn.kernels.base import Kernel, Node, register

MAX_DIMS = 5


@register
class Transpose(Kernel):
    """TFLM TRANSPOSE for float32, int8 and int16."""

    op = "TRANSPOSE"
    dtypes = frozenset({"float32", "int8", "int16"})

    def prepare(self, node: Node) -> None:
        if len(node.inputs) != 2 or any(t is None for t in node.inputs) or len(node.outputs) != 1:
            raise node.fail("expects 2 inputs (input, perm) and 1 output")
        inp, perm, out = node.inputs[0], node.inputs[1], node.outputs[0]
        rank = len(inp.shape)
        if rank > MAX_DIMS:
            raise node.fail(f"input has {rank} dimensions; TFLM transposes at most {MAX_DIMS}")
        if inp.dtype != out.dtype:
            raise node.fail(f"input is {inp.dtype.name} but output is {out.dtype.name}")
        if not perm.is_constant:
            raise node.fail("perm must be a constant tensor (TFLM rejects a computed perm)")
        if perm.dtype not in (np.int32, np.int64):
            raise node.fail(f"perm must be int32, got {perm.dtype.name}")
        if len(perm.shape) != 1 or perm.shape[0] != rank:
            raise node.fail(f"perm must be 1-D with {rank} entries, got shape {perm.shape}")
        # TFLM reads the first ``rank`` int32 words whatever the type: an int64 perm works only by accident
        self.perm = tuple(int(v) for v in int32_words(node, 1)[:rank])
        if sorted(self.perm) != list(range(rank)):
            raise node.fail(f"perm {list(self.perm)} is not a permutation of the {rank} input dimensions")
        want = tuple(inp.shape[p] for p in self.perm)
        if tuple(out.shape) != want:
            raise node.fail(f"transposing {inp.shape} by {list(self.perm)} gives {want}, the output is {out.shape}")

    def invoke(self, node: Node) -> None:
        node.output(0)[...] = np.transpose(node.input(0), self.perm)
