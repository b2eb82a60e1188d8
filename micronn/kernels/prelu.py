"""PRELU: ``x if x >= 0 else alpha * x`` with alpha broadcast against x, like TFLM's reference kernel.

* float32: ``x`` or the float32 product ``x * alpha``.
* int8 (alpha int8 too): with ``x`` offset by its zero point, non-negative values are scaled by
  ``s_x / s_out`` and negative ones multiplied by ``alpha - zp_alpha`` and scaled by
  ``s_x * s_alpha / s_out`` (quantized multipliers computed in double), then offset by the output zero
  point and clamped to int8.

TFLM always takes a 4-D broadcasting path, so it refuses (or, for float32, crashes on) more than four
dimensions; micronn refuses them.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels import _elementwise as ew
from micronn.kernels.base import Kernel, Node, register
from micronn.quant import quantize_multiplier

MAX_DIMS = 4


@register
class Prelu(Kernel):
    """TFLM PRELU for float32 and int8."""

    op = "PRELU"
    dtypes = frozenset({"float32", "int8"})

    def prepare(self, node: Node) -> None:
        (x, alpha), out = ew.operands(node, 2)
        ew.same_types(node, [x, alpha, out], ["the input", "alpha", "the output"])
        ew.check_broadcast(node, [x, alpha], out, max_dims=MAX_DIMS)
        self.quantized = out.dtype == np.int8
        if self.quantized:
            ew.require_quantized(node, [x, alpha, out], ["the input", "alpha", "the output"])
            sx, sa, so = (float(np.float32(t.scale)) for t in (x, alpha, out))
            self.m1, self.s1 = quantize_multiplier(sx / so)
            self.m2, self.s2 = quantize_multiplier(sx * sa / so)
            self.zx, self.za, self.zo = x.zero_point, alpha.zero_point, out.zero_point

    def invoke(self, node: Node) -> None:
        x, alpha = ew.broadcast_inputs(node, 2)
        out = node.output(0)
        if self.quantized:
            v = x.astype(np.int64) - self.zx
            positive = ew.requantize(v, self.m1, self.s1)
            negative = ew.requantize(v * (alpha.astype(np.int64) - self.za), self.m2, self.s2)
            result = ew.saturate(np.where(v >= 0, positive, negative) + self.zo, -128, 127, np.dtype(np.int8))
        else:
            with np.errstate(all="ignore"):
                result = np.where(x >= np.float32(0), x, x * alpha)
        out[...] = result.reshape(out.shape)
