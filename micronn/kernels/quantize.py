"""QUANTIZE: float32 -> int8/int16 affine quantization and integer requantization, as TFLM does it.

float32 input: ``int32(roundf(x / scale)) + zero_point`` in float32 arithmetic, clamped to the
output type. The float -> int32 conversion follows x86's rule (TFLM's host build): out of range
or NaN becomes INT32_MIN, and the zero point addition wraps.

Integer input: ``MultiplyByQuantizedMultiplier(x - in_zp, QuantizeMultiplier(in_scale / out_scale))
+ out_zp`` with int32 wrap-around, clamped to the output type.

TFLM supports per-tensor output quantization only, and these (input, output) pairs:
float32 -> int8/int16; int32 -> int8/int16; int16 -> int8/int16/int32;
int8 -> int8/uint8/int16/int32; uint8 -> int8.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels.base import Kernel, Node, register
from micronn.quant import multiply_by_quantized_multiplier, quantize_multiplier, tflite_round, wrap_int32

SUPPORTED: dict[str, frozenset[str]] = {
    "float32": frozenset({"int8", "int16"}),
    "int32": frozenset({"int8", "int16"}),
    "int16": frozenset({"int8", "int16", "int32"}),
    "int8": frozenset({"int8", "uint8", "int16", "int32"}),
    "uint8": frozenset({"int8"}),
}


def float_to_int32_x86(v: np.ndarray) -> np.ndarray:
    """C's float -> int32 cast as x86 performs it: out-of-range and NaN give INT32_MIN (as int64)."""
    v = np.asarray(v, dtype=np.float64)
    ok = np.isfinite(v) & (v >= -(2.0**31)) & (v < 2.0**31)
    return np.where(ok, np.trunc(np.where(ok, v, 0.0)), -(2.0**31)).astype(np.int64)


@register
class Quantize(Kernel):
    op = "QUANTIZE"
    dtypes = frozenset(SUPPORTED)

    def prepare(self, node: Node) -> None:
        if len(node.inputs) != 1 or len(node.outputs) != 1 or node.inputs[0] is None:
            raise node.fail("QUANTIZE takes exactly one input and one output")
        inp, out = node.inputs[0], node.outputs[0]
        if out.quant is None or len(out.quant.scale) == 0:
            raise node.fail("QUANTIZE output needs affine quantization parameters")
        if len(out.quant.scale) != 1:
            raise node.fail("QUANTIZE supports per-tensor output quantization only (TFLM has no per-channel QUANTIZE)")
        if tuple(inp.shape) != tuple(out.shape):
            raise node.fail(f"QUANTIZE output shape {out.shape} differs from input shape {inp.shape}")
        self.in_dtype, self.out_dtype = inp.dtype.name, out.dtype.name
        if self.out_dtype not in SUPPORTED.get(self.in_dtype, ()):
            raise node.fail(f"QUANTIZE from {self.in_dtype} to {self.out_dtype} is not supported")
        self.out_zero_point = out.zero_point
        self.out_min, self.out_max = int(np.iinfo(out.dtype).min), int(np.iinfo(out.dtype).max)
        if self.in_dtype == "float32":
            self.scale = np.float32(out.scale)
            return
        self.in_zero_point = inp.zero_point
        effective = float(np.float32(inp.scale)) / float(np.float32(out.scale))
        self.multiplier, self.shift = quantize_multiplier(effective)

    def invoke(self, node: Node) -> None:
        x = node.input(0)
        if self.in_dtype == "float32":
            with np.errstate(over="ignore", invalid="ignore"):
                q = float_to_int32_x86(tflite_round(x.astype(np.float32) / self.scale))
        else:
            centred = wrap_int32(x.astype(np.int64) - self.in_zero_point)
            q = multiply_by_quantized_multiplier(centred, self.multiplier, self.shift)
        q = wrap_int32(q + self.out_zero_point)
        node.output(0)[...] = np.clip(q, self.out_min, self.out_max)
