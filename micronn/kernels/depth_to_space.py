"""DEPTH_TO_SPACE: TFLM's reference kernel, a pure rearrangement of NHWC data.

Each input pixel's channels hold a ``block x block`` tile of output pixels (row-major), each of
``channels / block**2`` channels. TFLM computes the output shape itself from the input and the block size
(it rewrites the output's dims); micronn requires the model's output shape to be that shape.
"""

from __future__ import annotations

from micronn.kernels._spatial import BLOCK_DTYPES, block_size_operands, check_output_shape
from micronn.kernels.base import Kernel, Node, register


@register
class DepthToSpace(Kernel):
    """TFLM DEPTH_TO_SPACE for float32 and int8 4-D tensors."""

    op = "DEPTH_TO_SPACE"
    dtypes = frozenset(BLOCK_DTYPES)

    def prepare(self, node: Node) -> None:
        inp, out, bs = block_size_operands(node)
        n, h, w, c = inp.shape
        if c % (bs * bs):
            raise node.fail(f"input depth {c} is not a multiple of block_size**2 = {bs * bs}")
        self.bs, self.depth = bs, c // (bs * bs)
        check_output_shape(node, out, (n, h * bs, w * bs, self.depth))

    def invoke(self, node: Node) -> None:
        x = node.input(0)
        n, h, w, _ = x.shape
        tiles = x.reshape(n, h, w, self.bs, self.bs, self.depth).transpose(0, 1, 3, 2, 4, 5)
        node.output(0)[...] = tiles.reshape(node.output(0).shape)
