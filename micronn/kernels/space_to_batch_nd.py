"""SPACE_TO_BATCH_ND: TFLM's reference kernel, for float32 and int8 3-D/4-D tensors.

TFLM walks the output tensor: output batch ``b`` holds input batch ``b % N`` sampled at offset
``(k // block_w, k % block_w)`` of every block, with ``k = b // N``; positions that fall in the padding are
filled with zero bytes, for int8 too. (TFLM memsets the padding with its op data's ``output_offset``, which no
TFLM code ever sets: the value is whatever the persistent arena held, zero in a fresh arena, so int8 padding
is 0 rather than the output's zero point. micronn pads with zeros, as TFLM does in a fresh arena.) The mapping
depends only on the shapes and the block/padding values, so micronn computes it once per distinct value
(at prepare when they are constant) and each invoke is one gather.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels._spatial import BlockKernel
from micronn.kernels.base import Node, register


def sources(in_shape: tuple[int, ...], out_shape: tuple[int, ...], block_h: int, block_w: int, pad_top: int,
            pad_left: int) -> np.ndarray:
    """For every output pixel (flattened), the flat input pixel it copies, or -1 for padding."""
    n, h, w, _ = in_shape
    on, oh, ow, _ = out_shape
    b = np.arange(on).reshape(-1, 1, 1)
    k = b // n
    y = np.arange(oh).reshape(1, -1, 1) * block_h + k // block_w - pad_top
    x = np.arange(ow).reshape(1, 1, -1) * block_w + k % block_w - pad_left
    inside = (y >= 0) & (y < h) & (x >= 0) & (x < w)
    return np.where(inside, ((b % n) * h + y) * w + x, -1).reshape(-1)


@register
class SpaceToBatchNd(BlockKernel):
    """TFLM SPACE_TO_BATCH_ND; the block shape and paddings may change at run time, as in TFLM."""

    op = "SPACE_TO_BATCH_ND"
    pads_name = "paddings"

    def build(self, node: Node, key: tuple[int, int, int, int]) -> tuple[tuple[np.ndarray, np.ndarray], None]:
        src = sources(self.in4, self.out4, *key)
        return (np.maximum(src, 0), src < 0), None

    def invoke(self, node: Node) -> None:
        src, pad = self.mapping(node)
        depth = self.in4[3]
        out = node.output(0).reshape(-1, depth)
        np.take(node.input(0).reshape(-1, depth), src, axis=0, out=out)
        out[pad] = 0
