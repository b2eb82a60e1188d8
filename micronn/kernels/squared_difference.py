"""SQUARED_DIFFERENCE, ``(x1 - x2)**2`` with numpy broadcasting, byte-identical to TFLM's reference kernel.

* float32 / int32: the difference squared in the type itself (int32 wraps like C's).
* int8 / int16: both operands, offset by their zero points and shifted left (7 bits for int8, 0 for
  int16), are scaled by ``their scale / (2 * larger input scale)``; the int32 difference is squared and
  scaled by ``(2 * larger scale)**2 / (2**(2 * left_shift) * output scale)`` (double arithmetic), offset by
  the output zero point and clamped to the type. int16 needs zero points of 0. There is no fused activation.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels import _elementwise as ew
from micronn.kernels.base import Kernel, Node, register
from micronn.quant import quantize_multiplier, wrap_int32

LEFT_SHIFT = {"int8": 7, "int16": 0}


@register
class SquaredDifference(Kernel):
    """TFLM SQUARED_DIFFERENCE for float32, int8, int16 and int32."""

    op = "SQUARED_DIFFERENCE"
    dtypes = frozenset({"float32", "int8", "int16", "int32"})
    reads_input_first = True  # computes the whole result before writing

    def prepare(self, node: Node) -> None:
        a, b, out = ew.binary_operands(node)
        self.quantized = out.dtype in (np.int8, np.int16)
        if not self.quantized:
            return
        ew.require_quantized(node, [a, b, out], ew.BINARY)
        if out.dtype == np.int16 and any(t.zero_point != 0 for t in (a, b, out)):
            raise node.fail("int16 SQUARED_DIFFERENCE needs zero points of 0 (TFLM checks)")
        self.left_shift = LEFT_SHIFT[out.dtype.name]
        s1, s2, so = float(np.float32(a.scale)), float(np.float32(b.scale)), float(np.float32(out.scale))
        twice_max = 2.0 * max(s1, s2)
        self.m1, self.s1 = ew.multiplier_below_one(node, s1 / twice_max, "input 1")
        self.m2, self.s2 = ew.multiplier_below_one(node, s2 / twice_max, "input 2")
        real_out = twice_max * twice_max / (float(1 << (2 * self.left_shift)) * so)
        self.mo, self.so = quantize_multiplier(real_out)
        self.off1, self.off2, self.off_out = -a.zero_point, -b.zero_point, out.zero_point

    def invoke(self, node: Node) -> None:
        x1, x2 = ew.broadcast_inputs(node, 2)
        out = node.output(0)
        if self.quantized:
            d = wrap_int32(ew.rescale_operand(x1, self.off1, self.left_shift, self.m1, self.s1)
                           - ew.rescale_operand(x2, self.off2, self.left_shift, self.m2, self.s2))
            raw = ew.requantize(wrap_int32(d * d), self.mo, self.so) + self.off_out
            lo, hi = np.iinfo(out.dtype).min, np.iinfo(out.dtype).max
            result = ew.saturate(raw, lo, hi, out.dtype)
        else:
            with np.errstate(all="ignore"):
                diff = x1 - x2
                result = diff * diff
        out[...] = result.reshape(out.shape)
