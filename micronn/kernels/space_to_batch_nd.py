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

from micronn.errors import InvokeError
from micronn.kernels._spatial import BlockParams, as_4d, check_same_type, one_in_one_out
from micronn.kernels.base import Kernel, Node, register

DTYPES = ("float32", "int8")


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
class SpaceToBatchNd(Kernel):
    """TFLM SPACE_TO_BATCH_ND; the block shape and paddings may change at run time, as in TFLM."""

    op = "SPACE_TO_BATCH_ND"
    dtypes = frozenset(DTYPES)

    def prepare(self, node: Node) -> None:
        inp, out = one_in_one_out(node, 3)
        check_same_type(node, inp, out, DTYPES)
        self.params = BlockParams(node, "paddings")
        self.in4, self.out4 = as_4d(inp.shape), as_4d(out.shape)
        self.cache: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray]] = {}
        if self.params.constant:
            self._mapping(node, prepare=True)

    def _mapping(self, node: Node, prepare: bool = False) -> tuple[np.ndarray, np.ndarray]:
        key = self.params.values(node)
        if key not in self.cache:
            block_h, block_w = key[:2]
            if block_h < 1 or block_w < 1:
                msg = f"block shape must be positive, got {block_h}x{block_w}"
                raise node.fail(msg) if prepare else InvokeError(f"operator {node.index} (SPACE_TO_BATCH_ND): {msg}")
            src = sources(self.in4, self.out4, *key)
            self.cache[key] = (np.maximum(src, 0), src < 0)
        return self.cache[key]

    def invoke(self, node: Node) -> None:
        src, pad = self._mapping(node)
        depth = self.in4[3]
        out = node.output(0).reshape(-1, depth)
        np.take(node.input(0).reshape(-1, depth), src, axis=0, out=out)
        out[pad] = 0
