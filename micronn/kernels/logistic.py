"""LOGISTIC (sigmoid), like TFLM's reference kernel: float32, int8 and int16.

* float32: ``1 / (1 + expf(-x))`` in float32, with TFLM's cut-offs: 1 above 16.619047, ``expf(x)``
  below -9.
* int8: TFLM ignores the output scale (the result is in 1/256 steps from -128, and the output zero
  point must be -128). Inputs beyond the radius saturate; the rest are scaled into Q4.27 and go
  through gemmlowp's fixed-point logistic (``micronn.fixedpoint.logistic``).
* int16: TFLM's 256-entry sigmoid table with linear interpolation (``micronn.fixedpoint.logistic_int16``);
  zero points of 0 and an output scale of 2**-15 are required.
"""

from __future__ import annotations

import math

import numpy as np

from micronn import fixedpoint as fp
from micronn.kernels import _unary as un
from micronn.kernels.base import Kernel, Node, register
from micronn.quant import multiply_by_quantized_multiplier, rounding_divide_by_pot

INPUT_INTEGER_BITS = 4  # int8 inputs are scaled into Q4.27


def prepare_int16_activation(node: Node, inp, out) -> tuple[int, int]:
    """The int16 LOGISTIC / TANH prepare: zero points of 0, output scale 2**-15, input multiplier."""
    for t, name in ((inp, "input"), (out, "output")):
        if t.zero_point != 0:
            raise node.fail(f"int16 {node.op.op} needs a {name} zero point of 0, got {t.zero_point}")
    if not np.float32(inp.scale) > 0 or not np.isfinite(np.float32(inp.scale)):
        raise node.fail(f"int16 {node.op.op} needs a positive input scale, got {inp.scale:g} (TFLM's would overflow)")
    out_scale = np.float32(out.scale)
    pot, log2 = fp.checked_log2(out_scale) if np.isfinite(out_scale) and out_scale > 0 else (False, 0)
    if not pot or log2 != -15:
        raise node.fail(f"int16 {node.op.op} needs an output scale of 2**-15 (a power of two within 0.1% in log2), "
                        f"got {out.scale:g}")
    return fp.int16_activation_params(np.float32(inp.scale))


def int8_activation_params(node: Node, input_scale: float) -> tuple[int, int, int]:
    """(multiplier, left shift, radius) of the int8 LOGISTIC / TANH prepare (``fp.int8_activation_params``).

    Input scales below 2**-28 give a negative left shift, where TFLM's ``CalculateInputRadius`` divides
    by ``1LL << left_shift``: x86 shifts by ``left_shift & 63`` (a negative int64 for -1), which this
    reproduces. Below 2**-59 the Q4.27 rescale itself would shift right by more than 31 bits, which
    C leaves undefined: refused.
    """
    _, left_shift = math.frexp(float(np.float32(input_scale)) * float(1 << (31 - INPUT_INTEGER_BITS)))
    if left_shift >= 0:
        return fp.int8_activation_params(np.float32(input_scale), INPUT_INTEGER_BITS)
    if left_shift < -31:
        raise node.fail(f"input scale {input_scale:g} is too small: TFLM's int8 {node.op.op} would shift by more "
                        "than 31 bits (undefined in C)")
    multiplier, _, _ = fp.int8_activation_params(np.float32(input_scale) * np.float32(2.0**-left_shift))
    divisor = float(((1 << (left_shift & 63)) + 2**63) % 2**64 - 2**63)  # int64 1 << (shift & 63)
    radius = math.floor(((1 << INPUT_INTEGER_BITS) - 1) * float(1 << (31 - INPUT_INTEGER_BITS)) / divisor)
    return multiplier, left_shift, radius


def int8_activation_input(x: np.ndarray, zero_point: int, params: tuple[int, int, int]) -> tuple[np.ndarray, ...]:
    """(saturated low, saturated high, Q4.27 value) of the int8 LOGISTIC / TANH inputs."""
    multiplier, left_shift, radius = params
    v = x.astype(np.int64) - zero_point
    low, high = v <= -radius, v >= radius
    inside = np.where(low | high, 0, v)
    return low, high, multiply_by_quantized_multiplier(inside, multiplier, left_shift)


@register
class Logistic(Kernel):
    op = "LOGISTIC"
    dtypes = frozenset({"float32", "int8", "int16"})
    reads_input_first = True

    def prepare(self, node: Node) -> None:
        inp, out = un.unary_operands(node)
        self.dtype = inp.dtype.name
        if self.dtype == "int8":
            if out.zero_point != -128:
                raise node.fail(f"int8 LOGISTIC needs an output zero point of -128, got {out.zero_point}")
            self.zero_point = inp.zero_point
            self.params = int8_activation_params(node, inp.scale)
        elif self.dtype == "int16":
            self.multiplier, self.left_shift = prepare_int16_activation(node, inp, out)

    def invoke(self, node: Node) -> None:
        x, out = node.input(0), node.output(0)
        if self.dtype == "float32":
            result = self._float(x)
        elif self.dtype == "int16":
            result = fp.logistic_int16(x, self.multiplier, self.left_shift)
        else:
            low, high, q4 = int8_activation_input(x, self.zero_point, self.params)
            q0 = fp.logistic(q4, INPUT_INTEGER_BITS)
            result = np.clip(rounding_divide_by_pot(q0, 31 - 8) - 128, -128, 127)
            result = np.where(low, -128, np.where(high, 127, result))
        out[...] = result.reshape(out.shape)

    @staticmethod
    def _float(x: np.ndarray) -> np.ndarray:
        return fp.logistic_float(x)
