"""RSQRT (1 / sqrt(x)), like TFLM's reference kernel: float32, int8 and int16.

* float32: ``1.f / sqrtf(x)`` (negative inputs give NaN, zero gives inf).
* int8 / int16 (zero points of 0 for int16): ``v = q - input_zero_point`` must not be negative (TFLM
  fails the invoke otherwise; so does micronn). ``v == 0`` gives the type's maximum; otherwise
  1/sqrt(v) comes from ``GetInvSqrtQuantizedMultiplierExp`` as a multiplier applied to 1 with 20
  extra bits, then rescaled by ``1 / (sqrt(input_scale) * output_scale)``, offset and clamped.
"""

from __future__ import annotations

import numpy as np

from micronn.errors import InvokeError
from micronn.kernels import _unary as un
from micronn.kernels.base import Kernel, Node, register
from micronn.quant import dtype_range, multiply_by_quantized_multiplier

EXTRA_BITS = 20  # TFLM's kShift: 1/sqrt(v) is first computed as an integer scaled by 2**20


@register
class Rsqrt(Kernel):
    op = "RSQRT"
    dtypes = frozenset({"float32", "int8", "int16"})
    reads_input_first = True

    def prepare(self, node: Node) -> None:
        inp, out = un.unary_operands(node)
        self.quantized = inp.dtype != np.float32
        if not self.quantized:
            return
        in_scale, self.in_zp, out_scale, self.out_zp = un.quantized_params(node, inp, out)
        self.lo, self.hi = dtype_range(out.dtype)
        real = un.ratio(1.0, np.sqrt(np.float64(in_scale)) * np.float64(out_scale))  # in double, like TFLM
        self.multiplier, self.shift = un.quantize_multiplier_x86(real)
        un.check_shift(node, self.shift - EXTRA_BITS, "RSQRT")
        if self.multiplier != 0 and self.shift - EXTRA_BITS < -31:
            raise node.fail(f"the output scale is too large for the input scale: TFLM would shift right by "
                            f"{EXTRA_BITS - self.shift} bits (beyond 31, undefined in C)")

    def invoke(self, node: Node) -> None:
        x, out = node.input(0), node.output(0)
        if not self.quantized:
            with np.errstate(all="ignore"):
                out[...] = (np.float32(1) / np.sqrt(x)).reshape(out.shape)
            return
        value = x.astype(np.int64).reshape(-1) - self.in_zp
        if np.any(value < 0):
            i = int(np.argmax(value < 0))
            raise InvokeError(f"RSQRT is only defined for non-negative values: element {i} is {int(x.flat[i])}, "
                              f"below the input zero point {self.in_zp}")
        inv_multiplier, inv_shift = un.inv_sqrt_quantized_multiplier_exp(value)
        scaled = multiply_by_quantized_multiplier(1, inv_multiplier, inv_shift + EXTRA_BITS)
        result = multiply_by_quantized_multiplier(scaled, self.multiplier, self.shift - EXTRA_BITS) + self.out_zp
        result = np.where(value == 0, self.hi, np.clip(result, self.lo, self.hi))
        out[...] = result.reshape(out.shape)
