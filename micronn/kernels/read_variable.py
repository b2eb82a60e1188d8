"""READ_VARIABLE: copy a resource variable's bytes into the output.

TFLM (kernels/read_variable.cc) reads the id from its input at invoke and copies the variable's bytes
(sized by the ASSIGN_VARIABLE that allocated it) into the output. It does not check that sizes agree or that
the variable was ever allocated (it then copies nothing); micronn refuses both at invoke instead of leaving
the output unwritten or overrunning it.
"""

from __future__ import annotations

from micronn.errors import InvokeError
from micronn.kernels._control_flow import check_id_tensor, raw, resource_id
from micronn.kernels.base import Kernel, Node, register


@register
class ReadVariable(Kernel):
    """TFLM READ_VARIABLE, for every type."""

    op = "READ_VARIABLE"
    dtypes: frozenset[str] = frozenset()  # the id is checked in prepare; the value is copied as bytes

    def dtype_key(self, node: Node) -> str:
        return "resource"

    def prepare(self, node: Node) -> None:
        if len(node.inputs) != 1 or len(node.outputs) != 1:
            raise node.fail(f"expects 1 input and 1 output, got {len(node.inputs)} and {len(node.outputs)}")
        check_id_tensor(node, node.inputs[0], "the resource id input")

    def invoke(self, node: Node) -> None:
        what = f"operator {node.index} (READ_VARIABLE)"
        var = node.interp.resources.get(resource_id(node.input(0)), what)
        out = node.output(0)
        if var.buffer is None:
            raise InvokeError(f"{what}: resource variable {var.shared_name!r} is read before any ASSIGN_VARIABLE "
                              "gave it a size")
        if var.buffer.nbytes != out.nbytes:
            raise InvokeError(f"{what}: resource variable {var.shared_name!r} holds {var.buffer.nbytes} bytes but "
                              f"the output {out.dtype.name}{list(out.shape)} needs {out.nbytes}")
        raw(out)[...] = var.buffer
