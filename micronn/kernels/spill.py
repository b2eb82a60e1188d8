"""Spill (TinySeg custom op): copy a tensor that will idle for a long time out of the arena into storage.

Inputs: ``victim``, the tensor to spill. Outputs: none. Custom options (a FlexBuffer map, TFLite's convention
for custom ops):

- ``id`` (int >= 0): the storage key the bytes go under; the Fetch/FetchConv2D that brings them back names it.

Spill has no output, as in the paper: a zero-size marker output would cost the persistent tail one more tensor
(TFLM keeps an eval tensor per tensor), and the model stays valid without it: ``Model.validate`` only checks that
tensors are written before they are read, the writer and reader round-trip an empty output list, and the planner
plans nothing for it. Operators run in file order, so the Spill always runs before the Fetch that follows it; only
a pass that reorders operators (``micronn reorder``) would have to keep Spill before Fetch.

After the Spill, the victim's last reader in the arena is the Spill itself, so the planner reuses its bytes for
everything that runs until the Fetch. Storage is ``node.storage`` (the interpreter's ``storage=``).
"""

from __future__ import annotations

import numpy as np

from micronn.kernels._custom_options import read_options
from micronn.kernels.base import Kernel, Node, register


@register
class Spill(Kernel):
    op = "Spill"
    in_tflm = False

    def prepare(self, node: Node) -> None:
        if len(node.inputs) != 1 or node.inputs[0] is None or node.outputs:
            raise node.fail("takes exactly one input (the victim) and has no outputs")
        self.id = read_options(node, {"id": int})["id"]
        if self.id < 0:
            raise node.fail(f"id must be >= 0, got {self.id}")

    def invoke(self, node: Node) -> None:
        node.storage.put(self.id, np.ascontiguousarray(node.input(0)).reshape(-1).view(np.uint8))
