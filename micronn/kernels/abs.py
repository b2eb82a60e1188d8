"""ABS, like TFLM's reference kernel: float32, int8 and int16 (quantized or plain).

* float32: ``fabsf`` (clears the sign bit, NaNs included).
* int8 and quantized int16: ``|q - input_zero_point|``, rescaled by ``input_scale / output_scale``
  (MultiplyByQuantizedMultiplier, only when the scales differ), plus the output zero point, clamped.
  int16 needs zero points of 0.
* int16 without quantization parameters: the plain integer ``abs`` (wrapping -32768 onto itself).
"""

from __future__ import annotations

import numpy as np

from micronn.kernels import _unary as un
from micronn.kernels.base import Kernel, Node, register
from micronn.quant import dtype_range, multiply_by_quantized_multiplier


@register
class Abs(Kernel):
    op = "ABS"
    dtypes = frozenset({"float32", "int8", "int16"})
    reads_input_first = True

    def prepare(self, node: Node) -> None:
        inp, out = un.unary_operands(node)
        self.quantized = inp.dtype == np.int8 or (inp.dtype == np.int16 and un.has_affine_quantization(inp))
        if not self.quantized:
            return
        in_scale, self.in_zp, out_scale, self.out_zp = un.quantized_params(node, inp, out)
        self.lo, self.hi = dtype_range(out.dtype)
        self.rescale = bool(in_scale != out_scale)
        if self.rescale:
            self.multiplier, self.shift = un.quantize_multiplier_x86(un.ratio(in_scale, out_scale))
            un.check_shift(node, self.shift, "ABS")

    def invoke(self, node: Node) -> None:
        x, out = node.input(0), node.output(0)
        if not self.quantized:
            out[...] = np.abs(x).reshape(out.shape)
            return
        value = np.abs(x.astype(np.int64) - self.in_zp)
        if self.rescale:
            value = multiply_by_quantized_multiplier(value, self.multiplier, self.shift)
        out[...] = np.clip(value + self.out_zp, self.lo, self.hi).reshape(out.shape)
