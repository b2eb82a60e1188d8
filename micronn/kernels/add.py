"""ADD with numpy broadcasting and a fused activation, byte-identical to TFLM's reference kernel.

* float32: a float32 sum clamped to the activation range (+-FLT_MAX without one, so inf saturates); of two
  NaNs, the one TFLM's loop order keeps (``nan_from_second``).
* int32: a wrapping int32 sum; TFLM ignores the fused activation here (SUB applies it).
* int8 / int16: TFLM's general rescaling path. Each operand, offset by its zero point and shifted
  left by 20 bits (int8) or 15 (int16), is scaled by ``its scale / (2 * larger input scale)``; the
  sum is scaled by ``2 * larger input scale / (2**left_shift * output scale)`` (all multipliers must be
  below one, computed in double) and offset by the output zero point, then clamped.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels import _elementwise as ew
from micronn.kernels.base import Kernel, Node, register


@register
class Add(Kernel):
    """TFLM ADD for float32, int8, int16 and int32."""

    op = "ADD"
    dtypes = frozenset({"float32", "int8", "int16", "int32"})
    reads_input_first = True  # computes the whole result before writing
    subtract = False
    int_activation = False  # TFLM's int32 ADD ignores the fused activation, its int32 SUB clamps

    def prepare(self, node: Node) -> None:
        a, b, out = ew.binary_operands(node)
        act = ew.activation(node)
        self.params, self.swap = None, False
        if out.dtype in (np.int8, np.int16):
            self.params = ew.AddSubParams(node, a, b, out, act)
        elif out.dtype == np.float32:
            self.lo, self.hi = ew.float_activation_range(act)
            self.swap = not self.subtract and ew.nan_from_second(a, b, out, broadcast_only=True)
        else:
            self.lo, self.hi = ew.int_activation_range(act if self.int_activation else 0, out.dtype)

    def invoke(self, node: Node) -> None:
        x1, x2 = ew.broadcast_inputs(node, 2)
        if self.params is not None:
            result = self.params.compute(x1, x2, self.subtract)
        else:
            with np.errstate(all="ignore"):  # float overflow gives inf (then clamped), int32 wraps like C's
                raw = x1 - x2 if self.subtract else ew.both_nan(x1 + x2, x1, x2, self.swap)
            result = ew.clamp(raw, self.lo, self.hi)
        node.output(0)[...] = result.reshape(node.output(0).shape)
