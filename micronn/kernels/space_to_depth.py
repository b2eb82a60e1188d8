"""SPACE_TO_DEPTH: TFLM's reference kernel, the inverse rearrangement of DEPTH_TO_SPACE.

Each ``block x block`` tile of input pixels becomes one output pixel whose channels hold the tile's
pixels in row-major order. The input's height and width must be multiples of the block size; TFLM
computes the output shape itself, and micronn requires the model's output shape to be that shape.
"""

from __future__ import annotations

from micronn.kernels._spatial import BLOCK_DTYPES, block_size_operands, check_output_shape
from micronn.kernels.base import Kernel, Node, register


@register
class SpaceToDepth(Kernel):
    """TFLM SPACE_TO_DEPTH for float32 and int8 4-D tensors."""

    op = "SPACE_TO_DEPTH"
    dtypes = frozenset(BLOCK_DTYPES)

    def prepare(self, node: Node) -> None:
        inp, out, bs = block_size_operands(node)
        n, h, w, c = inp.shape
        if h % bs or w % bs:
            raise node.fail(f"input height and width {h}x{w} are not multiples of block_size {bs}")
        self.bs = bs
        check_output_shape(node, out, (n, h // bs, w // bs, c * bs * bs))

    def invoke(self, node: Node) -> None:
        x = node.input(0)
        n, h, w, c = x.shape
        tiles = x.reshape(n, h // self.bs, self.bs, w // self.bs, self.bs, c).transpose(0, 1, 3, 2, 4, 5)
        node.output(0)[...] = tiles.reshape(node.output(0).shape)
