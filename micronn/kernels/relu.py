"""RELU, like TFLM's reference kernel: float32, int8 and int16.

* float32: ``x < 0 ? 0 : x`` (NaN and -0.0 pass through).
* int8 / int16: requantize ``q - input_zero_point`` by ``input_scale / output_scale`` onto the output
  zero point, clamped below at the quantized 0 (``roundf(0 / output_scale) + zero_point``) and to the
  type. int16 needs zero points of 0.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels import _unary as un
from micronn.kernels.base import Kernel, Node, register
from micronn.kernels.quantize import float_to_int32_x86
from micronn.quant import dtype_range, multiply_by_quantized_multiplier, tflite_round, wrap_int32


@register
class Relu(Kernel):
    op = "RELU"
    dtypes = frozenset({"float32", "int8", "int16"})
    reads_input_first = True

    def prepare(self, node: Node) -> None:
        inp, out = un.unary_operands(node)
        self.quantized = inp.dtype != np.float32
        if not self.quantized:
            return
        in_scale, self.in_zp, out_scale, self.out_zp = un.quantized_params(node, inp, out, affine=False)
        with np.errstate(divide="ignore", invalid="ignore"):
            self.multiplier, self.shift = un.quantize_multiplier_x86(un.ratio(in_scale, out_scale))
            zero = float_to_int32_x86(tflite_round(np.float32(0.0) / out_scale).astype(np.float32))
        un.check_shift(node, self.shift, "RELU")
        lo, self.hi = dtype_range(out.dtype)
        self.lo = max(lo, int(wrap_int32(self.out_zp + zero)))

    def invoke(self, node: Node) -> None:
        x, out = node.input(0), node.output(0)
        if not self.quantized:
            out[...] = np.where(x < 0, np.float32(0), x).reshape(out.shape)
            return
        value = multiply_by_quantized_multiplier(x.astype(np.int64) - self.in_zp, self.multiplier, self.shift)
        out[...] = np.clip(wrap_int32(value + self.out_zp), self.lo, self.hi).reshape(out.shape)
