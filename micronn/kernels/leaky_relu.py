"""LEAKY_RELU, like TFLM's reference kernel: float32, int8 and int16.

* float32: ``x > 0 ? x : x * alpha`` in float32.
* int8 / int16: ``q - input_zero_point`` is requantized by ``input_scale / output_scale`` when it is
  not negative and by ``input_scale * alpha / output_scale`` (in double) when it
  is, then offset by the output zero point and clamped.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels import _unary as un
from micronn.kernels.base import Kernel, Node, register
from micronn.quant import dtype_range, multiply_by_quantized_multiplier, wrap_int32


@register
class LeakyRelu(Kernel):
    op = "LEAKY_RELU"
    dtypes = frozenset({"float32", "int8", "int16"})
    reads_input_first = True

    def prepare(self, node: Node) -> None:
        inp, out = un.unary_operands(node)
        self.alpha = np.float32(node.options.alpha if node.options is not None else 0.0)
        self.quantized = inp.dtype != np.float32
        if not self.quantized:
            return
        in_scale, self.in_zp = un.per_tensor_params(inp)
        out_scale, self.out_zp = un.per_tensor_params(out)
        alpha_real = un.ratio(np.float64(in_scale) * np.float64(self.alpha), out_scale)  # in double, like TFLM
        identity_real = un.ratio(in_scale, out_scale)
        self.alpha_multiplier, self.alpha_shift = un.quantize_multiplier_x86(alpha_real)
        self.identity_multiplier, self.identity_shift = un.quantize_multiplier_x86(identity_real)
        un.check_shift(node, max(self.alpha_shift, self.identity_shift), "LEAKY_RELU")
        self.lo, self.hi = dtype_range(out.dtype)

    def invoke(self, node: Node) -> None:
        x, out = node.input(0), node.output(0)
        if not self.quantized:
            with np.errstate(all="ignore"):
                out[...] = np.where(x > 0, x, x * self.alpha).reshape(out.shape)
            return
        value = x.astype(np.int64) - self.in_zp
        positive = value >= 0
        multiplier = np.where(positive, self.identity_multiplier, self.alpha_multiplier)
        shift = np.where(positive, self.identity_shift, self.alpha_shift)
        result = wrap_int32(multiply_by_quantized_multiplier(value, multiplier, shift) + self.out_zp)
        out[...] = np.clip(result, self.lo, self.hi).reshape(out.shape)
