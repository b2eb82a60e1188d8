"""RESHAPE: copy the input's bytes into the output, whose static shape TFLM takes as the new shape.

TFLM ignores the optional shape input and the ``new_shape`` option at run time: the output tensor's
shape in the model is the shape (so a shape computed at run time changes nothing). It only checks
that the element counts agree and the types match, then copies.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels.base import Kernel, Node, register


@register
class Reshape(Kernel):
    """TFLM RESHAPE: a byte copy for every type TFLM sizes."""

    op = "RESHAPE"
    reads_input_first = True
    dtypes = frozenset({"float32", "float16", "float64", "int8", "int16", "int32", "int64", "uint8", "uint32",
                        "uint64", "bool"})

    def prepare(self, node: Node) -> None:
        if len(node.inputs) not in (1, 2) or node.inputs[0] is None or len(node.outputs) != 1:
            raise node.fail("expects 1 or 2 inputs (input, optional shape) and 1 output")
        inp, out = node.inputs[0], node.outputs[0]
        if any(d < 0 for d in out.shape):
            raise node.fail(f"the output's static shape {out.shape} has an unknown (-1) dimension "
                            "(TFLM crashes on it); convert the model with a static shape")
        if len(node.inputs) == 1 and tuple(out.shape) == (0,):
            raise node.fail("a legacy [0]-shaped output (meaning a scalar) is not supported")
        if inp.dtype != out.dtype:
            raise node.fail(f"input is {inp.dtype.name} but output is {out.dtype.name}")
        n_in, n_out = int(np.prod(inp.shape)), int(np.prod(out.shape))
        if n_in != n_out:
            raise node.fail(f"input {inp.shape} has {n_in} elements, output {out.shape} has {n_out}")

    def invoke(self, node: Node) -> None:
        dst = node.output(0)
        dst[...] = node.input(0).reshape(dst.shape)  # also right (a no-op) if a planner shares the buffer
