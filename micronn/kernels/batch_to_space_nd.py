"""BATCH_TO_SPACE_ND: TFLM's reference kernel, for float32 and int8 3-D/4-D tensors.

TFLM walks the input: input batch ``b`` goes to output batch ``b % N_out`` at offset
``(k // block_w, k % block_w)`` of every block (``k = b // N_out``), shifted up/left by the crops; what
lands outside the output is dropped. TFLM takes the output shape from the model and never checks it
against the block and crops, so output elements no input lands on would keep stale arena bytes: micronn
refuses such operators. A later input landing on the same element wins, as in TFLM's loop.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels._spatial import BlockKernel
from micronn.kernels.base import Node, register


def sources(in_shape: tuple[int, ...], out_shape: tuple[int, ...], block_h: int, block_w: int, crop_top: int,
            crop_left: int) -> np.ndarray:
    """For every output pixel (flattened), the flat input pixel TFLM writes there last, or -1 if none."""
    n, h, w, _ = in_shape
    on, oh, ow, _ = out_shape
    b = np.arange(n).reshape(-1, 1, 1)
    k = b // on
    y = np.arange(h).reshape(1, -1, 1) * block_h + k // block_w - crop_top
    x = np.arange(w).reshape(1, 1, -1) * block_w + k % block_w - crop_left
    inside = ((y >= 0) & (y < oh) & (x >= 0) & (x < ow)).reshape(-1)
    target = (((b % on) * oh + y) * ow + x).reshape(-1)
    src = np.full(on * oh * ow, -1, np.int64)
    # input pixels are in TFLM's loop order; assigning in reverse and keeping first hits = last write wins
    order = np.flatnonzero(inside)[::-1]
    targets, first = np.unique(target[order], return_index=True)
    src[targets] = order[first]
    return src


@register
class BatchToSpaceNd(BlockKernel):
    """TFLM BATCH_TO_SPACE_ND; the block shape and crops may change at run time, as in TFLM."""

    op = "BATCH_TO_SPACE_ND"
    pads_name = "crops"

    def build(self, node: Node, key: tuple[int, int, int, int]) -> tuple[np.ndarray, str | None]:
        src = sources(self.in4, self.out4, *key)
        if not (src < 0).any():
            return src, None
        return src, (f"with block {key[0]}x{key[1]} and crops (top {key[2]}, left {key[3]}) the input "
                     f"{node.inputs[0].shape} leaves {int((src < 0).sum())} pixels of the output "
                     f"{node.outputs[0].shape} unwritten (TFLM would leave stale memory there)")

    def invoke(self, node: Node) -> None:
        src = self.mapping(node)
        depth = self.in4[3]
        np.take(node.input(0).reshape(-1, depth), src, axis=0, out=node.output(0).reshape(-1, depth))
