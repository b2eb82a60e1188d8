"""CALL_ONCE: run the init subgraph at the first invoke only (typically to initialize resource variables).

TFLM (kernels/call_once.cc) takes no inputs or outputs, checks the subgraph index in prepare, and remembers
in its operator state that the subgraph ran. Resetting the interpreter does not clear that memory: after a
reset the resource variables hold their defaults and the init subgraph does not run again.
"""

from __future__ import annotations

from micronn.kernels._control_flow import subgraph_index
from micronn.kernels.base import Kernel, Node, register


@register
class CallOnce(Kernel):
    """TFLM CALL_ONCE."""

    op = "CALL_ONCE"
    dtypes: frozenset[str] = frozenset()  # no tensors

    def dtype_key(self, node: Node) -> str:
        return "none"

    def prepare(self, node: Node) -> None:
        if node.inputs or node.outputs:
            raise node.fail(f"takes no inputs or outputs, got {len(node.inputs)} and {len(node.outputs)}")
        self.init = subgraph_index(node, node.options.init_subgraph_index, "init_subgraph_index")
        self.has_run = False

    def invoke(self, node: Node) -> None:
        if not self.has_run:
            node.interp.invoke_subgraph(self.init.index)
            self.has_run = True
