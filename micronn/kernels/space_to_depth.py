"""SPACE_TO_DEPTH: TFLM's reference kernel, the inverse rearrangement of DEPTH_TO_SPACE.

Each ``block x block`` tile of input pixels becomes one output pixel whose channels hold the tile's
pixels in row-major order. The input's height and width must be multiples of the block size; TFLM
computes the output shape itself, and micronn requires the model's output shape to be that shape.
"""

from __future__ import annotations

from micronn.kernels._spatial import check_output_shape, check_same_type, one_in_one_out
from micronn.kernels.base import Kernel, Node, register

DTYPES = ("float32", "int8")


@register
class SpaceToDepth(Kernel):
    """TFLM SPACE_TO_DEPTH for float32 and int8 4-D tensors."""

    op = "SPACE_TO_DEPTH"
    dtypes = frozenset(DTYPES)

    def prepare(self, node: Node) -> None:
        inp, out = one_in_one_out(node, 1)
        if len(inp.shape) != 4:
            raise node.fail(f"input must be 4-D (NHWC), got shape {inp.shape}")
        check_same_type(node, inp, out, DTYPES)
        bs = node.options.block_size
        if bs < 1:
            raise node.fail(f"block_size must be positive, got {bs}")
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
