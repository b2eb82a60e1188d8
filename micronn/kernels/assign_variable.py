"""ASSIGN_VARIABLE: copy the value input's bytes into a resource variable.

TFLM (kernels/assign_variable.cc) wants 2 inputs and no output. In prepare, when the id is already known
(it comes from a VAR_HANDLE prepared before, or is an int32 constant) the first assignment sizes the variable:
a persistent buffer of the value's bytes, filled with the value's int8 zero point when it is quantized (else
0), which is also what a reset puts back. An id only known at invoke (a subgraph input) allocates nothing;
assigning a variable that nothing allocated fails the invoke, in TFLM and in micronn. TFLM does not check
that later values have the variable's size; micronn refuses a mismatch instead of overrunning.
"""

from __future__ import annotations

import numpy as np

from micronn.errors import InvokeError, PrepareError
from micronn.kernels._control_flow import check_id_tensor, raw, resource_id
from micronn.kernels.base import Kernel, Node, register


@register
class AssignVariable(Kernel):
    """TFLM ASSIGN_VARIABLE, for every type."""

    op = "ASSIGN_VARIABLE"
    dtypes: frozenset[str] = frozenset()  # the id is checked in prepare; the value is copied as bytes

    def dtype_key(self, node: Node) -> str:
        return "resource"

    def prepare(self, node: Node) -> None:
        if len(node.inputs) != 2 or node.outputs:
            raise node.fail(f"expects 2 inputs (id, value) and no output, got {len(node.inputs)} and "
                            f"{len(node.outputs)}")
        check_id_tensor(node, node.inputs[0], "the resource id input")
        value = node.inputs[1]
        if value is None:
            raise node.fail("the value input is omitted")
        if node.inputs[0].is_variable:  # TFLM gives variable tensors memory only after prepare
            return
        try:
            rid = resource_id(node.input(0))
        except PrepareError:  # known only at invoke (a subgraph input): TFLM allocates nothing here either
            return
        resources = node.interp.resources
        if not 0 <= rid < len(resources.variables):
            raise node.fail(f"resource variable {rid} does not exist ({len(resources.variables)} created)")
        var = resources.variables[rid]
        if var.buffer is None:
            # TFLM: memset with the zero point cast to int8, for a quantized value of any type
            var.default = int(value.zero_point) & 0xFF if value.quant is not None else 0
            var.buffer = node.persistent(np.full(value.nbytes, var.default, np.uint8))

    def invoke(self, node: Node) -> None:
        what = f"operator {node.index} (ASSIGN_VARIABLE)"
        var = node.interp.resources.get(resource_id(node.input(0)), what)
        value = node.input(1)
        if var.buffer is None:
            raise InvokeError(f"{what}: resource variable {var.shared_name!r} was never allocated (TFLM allocates "
                              "it in the prepare of an ASSIGN_VARIABLE whose id is known then)")
        if var.buffer.nbytes != value.nbytes:
            raise InvokeError(f"{what}: value {value.dtype.name}{list(value.shape)} has {value.nbytes} bytes but "
                              f"resource variable {var.shared_name!r} holds {var.buffer.nbytes}")
        var.buffer[...] = raw(value)
