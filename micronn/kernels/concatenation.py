"""CONCATENATION: join tensors along one axis, a plain copy like TFLM's reference kernel.

TFLM never requantizes here: it refuses int8 inputs whose scale or zero point differ from the
output's, and int16 tensors with a non-zero zero point, then copies the raw values. It also refuses
fused activations, more than 10 inputs and more than 6 dimensions.
"""

from __future__ import annotations

import numpy as np

from micronn.ir import Activation, Tensor
from micronn.kernels.base import Kernel, Node, register

MAX_INPUTS = 10
MAX_DIMS = 6


def _qparams(t: Tensor) -> tuple[np.float32, int]:
    """(scale, zero point) as TFLM's per-tensor params see them: 0 for an unquantized tensor."""
    return np.float32(t.scale), t.zero_point


@register
class Concatenation(Kernel):
    """TFLM CONCATENATION for float32, int8, int16, int32, int64 and bool."""

    op = "CONCATENATION"
    dtypes = frozenset({"float32", "int8", "int16", "int32", "int64", "bool"})

    def prepare(self, node: Node) -> None:
        inputs, out = node.inputs, node.outputs[0]
        if not inputs or any(t is None for t in inputs) or len(node.outputs) != 1:
            raise node.fail("expects at least one input and exactly one output")
        if len(inputs) > MAX_INPUTS:
            raise node.fail(f"TFLM concatenates at most {MAX_INPUTS} inputs, got {len(inputs)}")
        opts = node.options
        act = opts.fused_activation_function if opts is not None else Activation.NONE
        if act != Activation.NONE:
            raise node.fail(f"TFLM's CONCATENATION supports no fused activation (got {Activation(act).name})")
        for i, t in enumerate(inputs):
            if t.dtype != out.dtype:
                raise node.fail(f"input {i} is {t.dtype.name} but the output is {out.dtype.name}")
            if len(t.shape) > MAX_DIMS:
                raise node.fail(f"input {i} has {len(t.shape)} dimensions; TFLM supports at most {MAX_DIMS}")
        rank = len(out.shape)
        axis = opts.axis if opts is not None else 0
        self.axis = axis + rank if axis < 0 else axis
        if not 0 <= self.axis < rank:
            raise node.fail(f"axis {axis} is out of range for a {rank}-D output")
        for i, t in enumerate(inputs):
            off_axis = [(d, o) for k, (d, o) in enumerate(zip(t.shape, out.shape)) if k != self.axis]
            if len(t.shape) != rank or any(d != o for d, o in off_axis):
                raise node.fail(f"input {i} shape {t.shape} does not fit output {out.shape} along axis {self.axis}")
        if sum(t.shape[self.axis] for t in inputs) != out.shape[self.axis]:
            raise node.fail(f"inputs add up to {sum(t.shape[self.axis] for t in inputs)} along axis {self.axis}, "
                            f"the output has {out.shape[self.axis]}")
        if out.dtype == np.int8:
            for i, t in enumerate(inputs):
                if _qparams(t) != _qparams(out):
                    raise node.fail(f"int8 input {i} has scale/zero point {_qparams(t)}, the output "
                                    f"{_qparams(out)}; TFLM does not requantize and requires them equal")
        elif out.dtype == np.int16:
            if any(t.zero_point != 0 for t in [*inputs, out]):
                raise node.fail("int16 CONCATENATION needs zero points of 0 (TFLM requires symmetric int16)")
        # TFLM keeps every input's scale and zero point in the persistent tail, whatever the type.
        node.persistent(np.array([_qparams(t)[0] for t in inputs], np.float32))
        node.persistent(np.array([_qparams(t)[1] for t in inputs], np.int32))

    def invoke(self, node: Node) -> None:
        np.concatenate([node.input(i) for i in range(len(node.inputs))], axis=self.axis, out=node.output(0))
