"""DEQUANTIZE: int8/uint8/int16 -> float32 as TFLM computes it.

TFLM multiplies in double, ``float(double(scale) * (x - zero_point))``, with the tensor's first
(per-tensor) scale and zero point even when the tensor carries per-channel parameters.
(For these input types the double product is exact, so it equals a float32 product.)
"""

from __future__ import annotations

import numpy as np

from micronn.kernels.base import Kernel, Node, register


@register
class Dequantize(Kernel):
    op = "DEQUANTIZE"
    dtypes = frozenset({"int8", "uint8", "int16"})

    def prepare(self, node: Node) -> None:
        if len(node.inputs) != 1 or len(node.outputs) != 1 or node.inputs[0] is None:
            raise node.fail("DEQUANTIZE takes exactly one input and one output")
        inp, out = node.inputs[0], node.outputs[0]
        if inp.dtype.name not in self.dtypes:
            raise node.fail(f"DEQUANTIZE input must be int8, uint8 or int16, not {inp.dtype.name}")
        if out.dtype != np.float32:
            raise node.fail(f"DEQUANTIZE output must be float32, not {out.dtype.name}")
        if tuple(inp.shape) != tuple(out.shape):
            raise node.fail(f"DEQUANTIZE output shape {out.shape} differs from input shape {inp.shape}")
        self.scale = float(np.float32(inp.scale))  # 0 when the tensor has no quantization, like TFLM
        self.zero_point = inp.zero_point

    def invoke(self, node: Node) -> None:
        x = node.input(0).astype(np.int64) - self.zero_point
        with np.errstate(over="ignore"):  # huge scales overflow to inf, as the C cast does
            node.output(0)[...] = (self.scale * x.astype(np.float64)).astype(np.float32)
