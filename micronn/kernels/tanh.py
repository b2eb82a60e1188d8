"""TANH, like TFLM's reference kernel: float32, int8 and int16.

* float32: C's ``tanhf``, bit for bit.
* int8: TFLM ignores the output quantization (the result is in 1/128 steps around 0). Inputs beyond
  the radius saturate; the rest are scaled into Q4.27 and go through gemmlowp's fixed-point tanh
  (``micronn.fixedpoint.tanh``).
* int16: TFLM's sigmoid table, ``tanh(x) = 2 sigmoid(2x) - 1`` (``micronn.fixedpoint.tanh_int16``);
  zero points of 0 and an output scale of 2**-15 are required.
"""

from __future__ import annotations

import numpy as np

from micronn import fixedpoint as fp
from micronn.kernels import _unary as un
from micronn.kernels.base import Kernel, Node, register
from micronn.kernels.logistic import (
    INPUT_INTEGER_BITS,
    int8_activation_input,
    int8_activation_params,
    prepare_int16_activation,
)
from micronn.quant import rounding_divide_by_pot


@register
class Tanh(Kernel):
    op = "TANH"
    dtypes = frozenset({"float32", "int8", "int16"})
    reads_input_first = True

    def prepare(self, node: Node) -> None:
        inp, out = un.unary_operands(node)
        self.dtype = inp.dtype.name
        if self.dtype == "int8":
            self.zero_point = inp.zero_point
            self.params = int8_activation_params(node, inp.scale)
        elif self.dtype == "int16":
            self.multiplier, self.left_shift = prepare_int16_activation(node, inp, out)

    def invoke(self, node: Node) -> None:
        x, out = node.input(0), node.output(0)
        if self.dtype == "float32":
            result = un.tanhf(x)
        elif self.dtype == "int16":
            result = fp.tanh_int16(x, self.multiplier, self.left_shift)
        else:
            low, high, q4 = int8_activation_input(x, self.zero_point, self.params)
            q0 = fp.tanh(q4, INPUT_INTEGER_BITS)
            result = np.clip(rounding_divide_by_pot(q0, 31 - 7), -128, 127)
            result = np.where(low, -128, np.where(high, 127, result))
        out[...] = result.reshape(out.shape)
