"""WHILE: run the body subgraph while the cond subgraph's first output is true, threading state through.

TFLM (kernels/while.cc) checks in prepare that the operator, the cond subgraph and the body subgraph all take
the same number of tensors and that the body gives back as many. At invoke it copies the operator's inputs
into the cond's inputs and into its own outputs, then runs cond; while cond's first output (its first byte)
is true it copies its outputs into the body's inputs, runs the body, copies the body's outputs into its
outputs and those into the cond's inputs, and runs cond again. Copies need equal byte counts (shapes and
types may differ), checked when they happen. micronn follows the same steps in the same order.
"""

from __future__ import annotations

from micronn.errors import InvokeError
from micronn.kernels._control_flow import check_io, copy_tensors, raw, subgraph_index
from micronn.kernels.base import Kernel, Node, register


@register
class While(Kernel):
    """TFLM WHILE: byte copies around invokes of the cond and body subgraphs, for every type."""

    op = "WHILE"
    dtypes: frozenset[str] = frozenset()  # tensors are only copied: any type
    # TFLM loops forever on a condition that never turns false; micronn stops with an InvokeError instead.
    max_iterations = 1_000_000

    def dtype_key(self, node: Node) -> str:
        return "any"

    def prepare(self, node: Node) -> None:
        if any(t is None for t in node.inputs):
            raise node.fail("an omitted optional input cannot be passed to the loop")
        o = node.options
        n = len(node.inputs)
        if len(node.outputs) != n:
            raise node.fail(f"has {n} inputs but {len(node.outputs)} outputs; the loop state needs as many of each")
        self.cond = subgraph_index(node, o.cond_subgraph_index, "cond_subgraph_index")
        self.body = subgraph_index(node, o.body_subgraph_index, "body_subgraph_index")
        check_io(node, self.cond, "cond", n, None)
        check_io(node, self.body, "body", n, n)
        if not self.cond.outputs:  # TFLM reads output 0 regardless and crashes
            raise node.fail(f"cond subgraph {self.cond.index} has no output to read the condition from")

    def invoke(self, node: Node) -> None:
        interp = node.interp
        what = f"operator {node.index} (WHILE)"
        ins = [node.input(i) for i in range(len(node.inputs))]
        outs = [node.output(i) for i in range(len(node.outputs))]
        cond_ins, cond_out = interp.subgraph_inputs(self.cond.index), interp.subgraph_outputs(self.cond.index)[0]
        body_ins, body_outs = interp.subgraph_inputs(self.body.index), interp.subgraph_outputs(self.body.index)
        copy_tensors(cond_ins, ins, f"{what}, inputs to cond")
        copy_tensors(outs, ins, f"{what}, inputs to outputs")
        interp.invoke_subgraph(self.cond.index)
        iterations = 0
        while raw(cond_out)[0]:
            iterations += 1
            if iterations > self.max_iterations:
                raise InvokeError(f"{what}: the loop ran {self.max_iterations} iterations without its condition "
                                  "turning false (raise While.max_iterations if that is intended)")
            copy_tensors(body_ins, outs, f"{what}, outputs to body")
            interp.invoke_subgraph(self.body.index)
            copy_tensors(outs, body_outs, f"{what}, body to outputs")
            copy_tensors(cond_ins, outs, f"{what}, outputs to cond")
            interp.invoke_subgraph(self.cond.index)
