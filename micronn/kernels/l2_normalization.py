"""L2_NORMALIZATION over the last axis, like TFLM's reference kernel: float32 and int8.

* float32, per row: ``x / max(sqrtf(sum(x * x)), 1e-6)`` in float32, the sum accumulated in order.
* int8: the squared norm of ``q - zero_point`` is summed in int32 and inverted by
  ``GetInvSqrtQuantizedMultiplierExp``; each element is multiplied by it with 7 more bits of left
  shift. The output quantization is ignored (the result is in 1/128 steps around 0), like TFLM.

TFLM supports at most 4 dimensions and no fused activation.
"""

from __future__ import annotations

import numpy as np

from micronn.ir import Activation
from micronn.kernels import _unary as un
from micronn.kernels.base import Kernel, Node, register
from micronn.quant import multiply_by_quantized_multiplier, wrap_int32

EPSILON = np.float32(1e-6)
OUTPUT_SHIFT = 7  # int8 outputs are in Q0.7


@register
class L2Normalization(Kernel):
    op = "L2_NORMALIZATION"
    dtypes = frozenset({"float32", "int8"})
    reads_input_first = True

    def prepare(self, node: Node) -> None:
        inp, _ = un.unary_operands(node, same_shape=True)
        if not 1 <= len(inp.shape) <= 4:
            raise node.fail(f"TFLM's L2_NORMALIZATION takes 1 to 4 dimensions, got {len(inp.shape)}")
        activation = node.options.fused_activation_function if node.options is not None else Activation.NONE
        if activation != Activation.NONE:
            raise node.fail(f"TFLM's L2_NORMALIZATION supports no fused activation, got {Activation(activation).name}")
        self.zero_point = inp.zero_point if inp.dtype == np.int8 else 0

    def invoke(self, node: Node) -> None:
        x, out = node.input(0), node.output(0)
        rows = x.reshape(-1, x.shape[-1])
        if rows.dtype == np.float32:
            with np.errstate(all="ignore"):
                squares = np.cumsum(rows * rows, axis=1, dtype=np.float32)[:, -1:]  # in order, like the C loop
                norm = np.sqrt(squares)
                norm = np.where(norm < EPSILON, EPSILON, norm)  # std::max(norm, epsilon): NaN stays
                result = rows / norm
        else:
            centred = rows.astype(np.int64) - self.zero_point
            squares = wrap_int32((centred * centred).sum(axis=1, keepdims=True))
            multiplier, shift = un.inv_sqrt_quantized_multiplier_exp(squares)
            result = np.clip(multiply_by_quantized_multiplier(centred, multiplier, shift + OUTPUT_SHIFT), -128, 127)
        out[...] = result.reshape(out.shape)
