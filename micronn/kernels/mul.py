"""MUL with numpy broadcasting and a fused activation, byte-identical to TFLM's reference kernel.

* float32: a float32 product clamped to the activation range (+-FLT_MAX without one); of two NaNs, the one
  TFLM's loop order keeps (``nan_from_second``).
* int32: a wrapping int32 product clamped to the integer activation range.
* int8 / int16: ``(x1 - zp1) * (x2 - zp2)`` in int32, scaled by ``s1 * s2 / s_out`` (a quantized
  multiplier computed in double, which may exceed one), offset by the output zero point and clamped.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels import _elementwise as ew
from micronn.kernels.base import Kernel, Node, register
from micronn.quant import quantize_multiplier, wrap_int32


@register
class Mul(Kernel):
    """TFLM MUL for float32, int8, int16 and int32."""

    op = "MUL"
    dtypes = frozenset({"float32", "int8", "int16", "int32"})
    reads_input_first = True  # computes the whole result before writing

    def prepare(self, node: Node) -> None:
        a, b, out = ew.binary_operands(node)
        self.quantized = out.dtype in (np.int8, np.int16)
        if self.quantized:
            ew.require_quantized(node, [a, b, out], ew.BINARY)
            if out.dtype == np.int16 and any(t.zero_point != 0 for t in (a, b, out)):
                raise node.fail("int16 MUL needs zero points of 0 on both inputs and the output (TFLM checks)")
            real = float(np.float32(a.scale)) * float(np.float32(b.scale)) / float(np.float32(out.scale))
            self.multiplier, self.shift = quantize_multiplier(real)
            self.zp1, self.zp2, self.zp_out = a.zero_point, b.zero_point, out.zero_point
        self.lo, self.hi = ew.activation_range(node, out)
        self.swap = out.dtype == np.float32 and ew.nan_from_second(a, b, out, broadcast_only=False)

    def invoke(self, node: Node) -> None:
        x1, x2 = ew.broadcast_inputs(node, 2)
        out = node.output(0)
        if self.quantized:
            prod = wrap_int32((x1.astype(np.int64) - self.zp1) * (x2.astype(np.int64) - self.zp2))
            scaled = ew.requantize(prod, self.multiplier, self.shift) + self.zp_out
            result = ew.saturate(scaled, self.lo, self.hi, out.dtype)
        else:
            with np.errstate(all="ignore"):  # float overflow gives inf (then clamped), int32 wraps like C's
                result = ew.clamp(ew.both_nan(x1 * x2, x1, x2, self.swap), self.lo, self.hi)
        out[...] = result.reshape(out.shape)
