"""HARD_SWISH (``x * relu6(x + 3) / 6``), like TFLM's reference kernel: float32 and int8.

* float32: ``x * min(6, max(0, x + 3)) / 6`` in float32, left to right.
* int8: int16 fixed point. The centred input is shifted left by 7 ("hires" scale); it is multiplied
  by the int16 output multiplier (``input_scale / 128 / output_scale``) to get the value on the
  pre-shift output scale, and separately rescaled (int16 multiplier and a shift that saturates
  carefully) so that 3.0 maps to 32768 and turned into a "reluish" factor in [0, 1]. Their product
  (a doubling high multiply *without* rounding) is shifted right, offset and clamped. TFLM requires
  the output multiplier to be below one.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels import _unary as un
from micronn.kernels.base import Kernel, Node, register
from micronn.quant import dtype_range, rounding_divide_by_pot

INT16_MIN, INT16_MAX = -32768, 32767


def _to_int16_multiplier(multiplier: int) -> int:
    """TFLM DownScaleInt32ToInt16Multiplier: round a Q31 multiplier to Q15, saturating."""
    if multiplier >= 2**31 - 1 - (1 << 15):
        return INT16_MAX
    return (multiplier + (1 << 15)) >> 16


def _srdhm16(a: np.ndarray, b) -> np.ndarray:
    """gemmlowp SaturatingRoundingDoublingHighMul on int16 values (held in int64)."""
    ab = a * np.int64(b)
    nudge = np.where(ab >= 0, 1 << 14, 1 - (1 << 14))
    v = ab + nudge
    high = np.where(v >= 0, v >> 15, -((-v) >> 15))  # C division truncates toward zero
    return np.where((a == INT16_MIN) & (np.int64(b) == INT16_MIN), INT16_MAX, high)


def _saturating_doubling_high_mul16(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """TFLM SaturatingDoublingHighMul on int16: ``a * b / 2**15`` truncated toward zero, saturating."""
    ab = a * b
    high = np.where(ab >= 0, ab >> 15, -((-ab) >> 15))
    return np.where((a == INT16_MIN) & (b == INT16_MIN), INT16_MAX, high)


def _saturating_left_shift16(a: np.ndarray, shift: int) -> np.ndarray:
    return np.clip(a << shift, INT16_MIN, INT16_MAX)


def _rounding_divide_by_pot16(x: np.ndarray, exponent: int) -> np.ndarray:
    """gemmlowp RoundingDivideByPOT on int16. From 16 bits on, its mask ``(1 << exponent) - 1`` truncated
    to int16 is -1, so every non-negative value gives 1 and every negative one -1 (what TFLM computes)."""
    if exponent < 16:
        return rounding_divide_by_pot(x, exponent)
    return np.where(x >= 0, 1, -1)


def _int16(a: np.ndarray) -> np.ndarray:
    """C's conversion of an int value into int16 (wraps)."""
    return ((a + 32768) & 0xFFFF) - 32768


@register
class HardSwish(Kernel):
    op = "HARD_SWISH"
    dtypes = frozenset({"float32", "int8"})
    reads_input_first = True

    def prepare(self, node: Node) -> None:
        inp, out = un.unary_operands(node)
        self.quantized = inp.dtype == np.int8
        if not self.quantized:
            return
        in_scale, self.in_zp = un.per_tensor_params(inp)
        out_scale, self.out_zp = un.per_tensor_params(out)
        hires_scale = np.float32(1.0 / 128.0) * in_scale
        output_real = un.ratio(hires_scale, out_scale)  # in double, like TFLM
        reluish_real = un.ratio(hires_scale, np.float32(3.0 / 32768.0))
        multiplier, self.output_exponent = un.quantize_multiplier_x86(output_real)
        self.output_multiplier = _to_int16_multiplier(multiplier)
        if self.output_exponent > 0:
            raise node.fail(f"the output multiplier input_scale / 128 / output_scale = {output_real:g} must be "
                            "below one (TFLM requires a non-positive exponent)")
        multiplier, self.reluish_exponent = un.quantize_multiplier_x86(reluish_real)
        self.reluish_multiplier = _to_int16_multiplier(multiplier)
        self.lo, self.hi = dtype_range(out.dtype)

    def invoke(self, node: Node) -> None:
        x, out = node.input(0), node.output(0)
        if not self.quantized:
            f32 = np.float32
            with np.errstate(all="ignore"):
                plus3 = x + f32(3)
                relu = np.where(f32(0) < plus3, plus3, f32(0))  # std::max(0, x + 3)
                relu6 = np.where(relu < f32(6), relu, f32(6))  # std::min(6, ...)
                out[...] = (x * relu6 / f32(6)).reshape(out.shape)
            return
        value = _int16(x.astype(np.int64) - self.in_zp)
        hires = _int16(value * 128)
        preshift_output = _srdhm16(hires, self.output_multiplier)
        reluish = hires
        if self.reluish_exponent > 0:
            reluish = _saturating_left_shift16(reluish, self.reluish_exponent - 1)
        reluish = _srdhm16(reluish, self.reluish_multiplier)
        if self.reluish_exponent > 0:
            reluish = _saturating_left_shift16(reluish, 1)
        if self.reluish_exponent < 0:
            reluish = _rounding_divide_by_pot16(reluish, -self.reluish_exponent)
        reluish = (reluish + (1 << 15)) >> 1
        preshift = _saturating_doubling_high_mul16(reluish, preshift_output)
        result = _int16(_rounding_divide_by_pot16(preshift, -self.output_exponent) + self.out_zp)
        out[...] = np.clip(result, self.lo, self.hi).reshape(out.shape)
