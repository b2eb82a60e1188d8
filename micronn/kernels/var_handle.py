"""VAR_HANDLE: the id of the resource variable named by (container, shared_name), made on first sight.

TFLM (kernels/var_handle.cc) finds or creates the id in prepare and points its output tensor at the id
kept in the operator's persistent data, so the output is never planned in the arena head. A missing
container matches a variable of any container. micronn binds the output to a persistent int32 the same way.
"""

from __future__ import annotations

import numpy as np

from micronn.ir import RESOURCE
from micronn.kernels._control_flow import raw
from micronn.kernels.base import Kernel, Node, register


@register
class VarHandle(Kernel):
    """TFLM VAR_HANDLE."""

    op = "VAR_HANDLE"
    dtypes: frozenset[str] = frozenset()  # checked in prepare: RESOURCE or int32

    def dtype_key(self, node: Node) -> str:
        return "resource"

    def prepare(self, node: Node) -> None:
        if len(node.outputs) != 1:
            raise node.fail(f"expects 1 output, got {len(node.outputs)}")
        out = node.outputs[0]
        if out.dtype not in (RESOURCE, np.dtype(np.int32)) or int(np.prod(out.shape, dtype=np.int64)) != 1:
            raise node.fail(f"the output must be one RESOURCE or int32 element, got {out.dtype.name}{list(out.shape)}")
        o = node.options
        if o.shared_name is None:  # TFLM compares the missing name with strcmp and crashes
            raise node.fail("has no shared_name to name its variable")
        try:
            rid = node.interp.resources.create_id(o.container, o.shared_name)
        except ValueError as e:
            raise node.fail(str(e)) from None
        handle = np.zeros(out.shape, out.dtype)
        raw(handle)[...] = np.array([rid], "<i4").view(np.uint8)
        node.bind_output(0, node.persistent(handle))

    def invoke(self, node: Node) -> None:
        pass  # the output already holds the id
