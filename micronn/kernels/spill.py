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

from typing import Any

import numpy as np
from flatbuffers import flexbuffers

from micronn.kernels.base import Kernel, Node, register


def custom_options(**options: Any) -> bytes:
    """Encode TinySeg custom-op options as a FlexBuffer map."""
    return bytes(flexbuffers.Dumps(options))


def _fits(value: Any, kind: type) -> bool:
    if kind is list:  # lists are lists of ints
        return isinstance(value, list) and all(_fits(v, int) for v in value)
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, kind) and not isinstance(value, bool)


def read_options(node: Node, kinds: dict[str, type], defaults: dict[str, Any] | None = None) -> dict[str, Any]:
    """Decode ``node``'s FlexBuffer custom options: every name in ``kinds`` must be there with that type
    (``list``: a list of ints) unless ``defaults`` gives it a value; unknown names are ignored."""
    raw = node.op.custom_options
    try:
        opts = flexbuffers.Loads(bytes(raw)) if raw else None
    except Exception as e:  # a corrupt FlexBuffer fails in many ways inside the decoder
        raise node.fail(f"custom options are not a valid FlexBuffer: {type(e).__name__}: {e}") from e
    if not isinstance(opts, dict):
        raise node.fail("custom options must be a FlexBuffer map")
    out = dict(defaults or {})
    for name, kind in kinds.items():
        if name not in opts and name not in out:
            raise node.fail(f"custom option {name!r} is missing")
        if name in opts and not _fits(opts[name], kind):
            what = "a list of ints" if kind is list else kind.__name__
            raise node.fail(f"custom option {name!r} = {opts[name]!r} is not {what}")
        out[name] = opts.get(name, out.get(name))
    return out


@register
class Spill(Kernel):
    op = "Spill"

    def prepare(self, node: Node) -> None:
        if len(node.inputs) != 1 or node.inputs[0] is None or node.outputs:
            raise node.fail("takes exactly one input (the victim) and has no outputs")
        self.id = read_options(node, {"id": int})["id"]
        if self.id < 0:
            raise node.fail(f"id must be >= 0, got {self.id}")

    def invoke(self, node: Node) -> None:
        node.storage.put(self.id, np.ascontiguousarray(node.input(0)).reshape(-1).view(np.uint8))
