"""BATCH_TO_SPACE_ND: TFLM's reference kernel, for float32 and int8 3-D/4-D tensors.

TFLM walks the input: input batch ``b`` goes to output batch ``b % N_out`` at offset
``(k // block_w, k % block_w)`` of every block (``k = b // N_out``), shifted up/left by the crops; what
lands outside the output is dropped. TFLM takes the output shape from the model and never checks it
against the block and crops, so output elements no input lands on would keep stale arena bytes: micronn
refuses such operators. A later input landing on the same element wins, as in TFLM's loop.
"""

from __future__ import annotations

import numpy as np

from micronn.errors import InvokeError
from micronn.kernels._spatial import BlockParams, as_4d, check_same_type, one_in_one_out
from micronn.kernels.base import Kernel, Node, register

DTYPES = ("float32", "int8")


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
class BatchToSpaceNd(Kernel):
    """TFLM BATCH_TO_SPACE_ND; the block shape and crops may change at run time, as in TFLM."""

    op = "BATCH_TO_SPACE_ND"
    dtypes = frozenset(DTYPES)

    def prepare(self, node: Node) -> None:
        inp, out = one_in_one_out(node, 3)
        check_same_type(node, inp, out, DTYPES)
        self.params = BlockParams(node, "crops")
        self.in4, self.out4 = as_4d(inp.shape), as_4d(out.shape)
        self.cache: dict[tuple[int, ...], np.ndarray] = {}
        if self.params.constant:
            self._mapping(node, prepare=True)

    def _mapping(self, node: Node, prepare: bool = False) -> np.ndarray:
        key = self.params.values(node)
        if key not in self.cache:
            block_h, block_w = key[:2]
            msg = None
            if block_h < 1 or block_w < 1:
                msg = f"block shape must be positive, got {block_h}x{block_w}"
            else:
                src = sources(self.in4, self.out4, *key)
                if (src < 0).any():
                    msg = (f"with block {block_h}x{block_w} and crops (top {key[2]}, left {key[3]}) the input "
                           f"{node.inputs[0].shape} leaves {int((src < 0).sum())} pixels of the output "
                           f"{node.outputs[0].shape} unwritten (TFLM would leave stale memory there)")
            if msg is not None:
                raise node.fail(msg) if prepare else InvokeError(f"operator {node.index} (BATCH_TO_SPACE_ND): {msg}")
            self.cache[key] = src
        return self.cache[key]

    def invoke(self, node: Node) -> None:
        src = self._mapping(node)
        depth = self.in4[3]
        np.take(node.input(0).reshape(-1, depth), src, axis=0, out=node.output(0).reshape(-1, depth))
