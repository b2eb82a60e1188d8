"""IF: run the then or the else subgraph, chosen by a one-element bool condition.

TFLM (kernels/if.cc, as in the wheel) checks in prepare that the condition is one bool and that the *then*
subgraph takes the operator's other inputs and gives its outputs. At invoke it copies those inputs into the
chosen branch's inputs, invokes the branch, and copies the branch's outputs into its own outputs. The copies
need equal tensor counts and byte counts (types and shapes may differ) and fail the invoke otherwise, only
when that branch runs; a branch without outputs copies nothing back. micronn does the same.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels._control_flow import check_io, copy_tensors, raw, subgraph_index
from micronn.kernels.base import Kernel, Node, register


@register
class If(Kernel):
    """TFLM IF: byte copies around an invoke of the chosen branch, for every type."""

    op = "IF"
    dtypes: frozenset[str] = frozenset()  # tensors are only copied: any type

    def prepare(self, node: Node) -> None:
        if not node.inputs or node.inputs[0] is None:
            raise node.fail("expects the condition as its first input")
        cond = node.inputs[0]
        if cond.dtype != np.bool_ or int(np.prod(cond.shape, dtype=np.int64)) != 1:
            raise node.fail(f"the condition must be one bool, got {cond.dtype.name}{list(cond.shape)}")
        if any(t is None for t in node.inputs):
            raise node.fail("an omitted optional input cannot be passed to a branch")
        o = node.options
        self.branches = (subgraph_index(node, o.then_subgraph_index, "then_subgraph_index"),
                         subgraph_index(node, o.else_subgraph_index, "else_subgraph_index"))
        check_io(node, self.branches[0], "then", len(node.inputs) - 1, len(node.outputs))

    def invoke(self, node: Node) -> None:
        interp = node.interp
        branch = self.branches[0 if raw(node.input(0))[0] else 1].index
        what = f"operator {node.index} (IF), subgraph {branch}"
        copy_tensors(interp.subgraph_inputs(branch), [node.input(i) for i in range(1, len(node.inputs))],
                     f"{what} inputs")
        interp.invoke_subgraph(branch)
        results = interp.subgraph_outputs(branch)
        if results:  # TFLM copies nothing back from a branch without outputs (the IF's outputs keep their bytes)
            copy_tensors([node.output(i) for i in range(len(node.outputs))], results, f"{what} outputs")
