"""MIRROR_PAD: pad a tensor with its own mirror image (REFLECT or SYMMETRIC), like TFLM's reference kernel.

REFLECT mirrors around the edge element (``[1 2 3]`` padded by 2 gives ``3 2 [1 2 3] 2 1``), SYMMETRIC
repeats it (``2 1 [1 2 3] 3 2``). TFLM reads the (rank, 2) paddings, int32 or int64, at every invoke, so
they may be computed; it checks nothing about them, so micronn requires what TensorFlow does (paddings
between 0 and the input extent, minus one for REFLECT) and the output shape they give. TFLM's kernel asks
for two scratch buffers of one int per dimension (its output and input strides).
"""

from __future__ import annotations

import numpy as np

from micronn.kernels._reduce import invoke_error
from micronn.kernels.base import Kernel, Node, register

REFLECT, SYMMETRIC = 0, 1  # the schema's MirrorPadMode


@register
class MirrorPad(Kernel):
    """TFLM MIRROR_PAD for float32 and int8."""

    op = "MIRROR_PAD"
    dtypes = frozenset({"float32", "int8"})

    def prepare(self, node: Node) -> None:
        if len(node.inputs) != 2 or any(t is None for t in node.inputs) or len(node.outputs) != 1:
            raise node.fail("expects 2 inputs (input, paddings) and 1 output")
        inp, pads, out = node.inputs[0], node.inputs[1], node.outputs[0]
        rank = len(inp.shape)
        if len(pads.shape) != 2 or pads.shape[0] != rank:
            raise node.fail(f"paddings must have shape ({rank}, 2), got {pads.shape}")
        if pads.shape[1] != 2:
            raise node.fail(f"paddings must have shape ({rank}, 2), got {pads.shape}")
        if pads.dtype not in (np.int32, np.int64):
            raise node.fail(f"paddings must be int32 or int64, got {pads.dtype.name}")
        if inp.dtype != out.dtype:
            raise node.fail(f"input is {inp.dtype.name} but output is {out.dtype.name}")
        if len(out.shape) != rank:
            raise node.fail(f"input rank {rank} differs from output rank {len(out.shape)}")
        mode = node.options.mode if node.options is not None else REFLECT
        if mode not in (REFLECT, SYMMETRIC):
            raise node.fail(f"unknown mirror pad mode {mode}")
        self.offset = 1 if mode == REFLECT else 0
        node.request_scratch(4 * rank)  # output strides
        node.request_scratch(4 * rank)  # input strides
        self.index: tuple[np.ndarray, ...] | None = None
        if pads.is_constant:
            self.index = self.gather_index(node, node.fail)

    def gather_index(self, node: Node, error) -> tuple[np.ndarray, ...]:
        """Per-dimension source indices (an open mesh for ``np.ix_``-style indexing), checked."""
        inp, out = node.inputs[0], node.outputs[0]
        pads = np.asarray(node.input(1), np.int64).reshape(-1, 2)
        mode = "REFLECT" if self.offset else "SYMMETRIC"
        index = []
        for k, (n, (left, right)) in enumerate(zip(inp.shape, pads.tolist())):
            limit = n - self.offset
            if not (0 <= left <= limit and 0 <= right <= limit):
                raise error(f"paddings {[left, right]} of dimension {k} (size {n}) are outside [0, {limit}], "
                            f"the range {mode} allows")
            if n + left + right != out.shape[k]:
                raise error(f"input {inp.shape} padded by {pads.tolist()} does not give the output {out.shape}")
            p = np.arange(-left, n + right)
            src = np.where(p < 0, -p - 1 + self.offset, np.where(p >= n, 2 * n - 1 - self.offset - p, p))
            shape = [1] * len(inp.shape)
            shape[k] = -1
            index.append(src.reshape(shape))
        return tuple(index)

    def invoke(self, node: Node) -> None:
        index = self.index
        if index is None:
            index = self.gather_index(node, lambda msg: invoke_error(node, msg))
        node.output(0)[...] = node.input(0)[index]
