"""RELU6, like TFLM's reference kernel: float32, int8 and int16.

* float32: ``x > 6 ? 6 : x < 0 ? 0 : x`` (NaN passes through).
* int8 / int16: a clamp in the *input's* quantization, between its zero point and the quantized 6
  (``round(6 / input_scale) + zero_point`` clamped to the type); the output's quantization is not used,
  like TFLM.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels import _unary as un
from micronn.kernels.base import Kernel, Node, register
from micronn.kernels.quantize import float_to_int32_x86
from micronn.quant import dtype_range, tflite_round


@register
class Relu6(Kernel):
    op = "RELU6"
    dtypes = frozenset({"float32", "int8", "int16"})
    reads_input_first = True

    def prepare(self, node: Node) -> None:
        inp, _ = un.unary_operands(node)
        if inp.dtype == np.float32:
            self.lower, self.upper = np.float32(0), np.float32(6)
            return
        scale, zp = un.per_tensor_params(inp)
        qmin, qmax = dtype_range(inp.dtype)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            six = float_to_int32_x86(tflite_round(np.float32(6.0) / scale).astype(np.float32) + np.float32(zp))
        self.upper = inp.dtype.type(np.clip(six, qmin, qmax))
        self.lower = np.array(zp, dtype=np.int64).astype(inp.dtype)  # stored into the type: wraps like C

    def invoke(self, node: Node) -> None:
        x, out = node.input(0), node.output(0)
        y = np.where(x > self.upper, self.upper, np.where(x < self.lower, self.lower, x))
        out[...] = y.astype(out.dtype, copy=False).reshape(out.shape)
