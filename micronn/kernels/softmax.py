"""SOFTMAX over the last axis, byte-identical to TFLM's reference kernel.

* float32: ``exp((x - max) * beta)`` in float32 with C's ``expf``, a sequential float32 sum,
  then a float32 division.
* int8 -> int8 / int16: gemmlowp fixed point. Input differences from the row maximum are
  scaled into Q5.26 (``PreprocessSoftmaxScaling`` with 5 integer bits), exponentiated with
  ``exp_on_negative_values``, summed in Q12.19 and divided through gemmlowp's 1/(1+x).
  Differences below ``diff_min`` contribute nothing and output the minimum.
* int16 -> int16: two 513-entry int16 lookup tables (exp on [-10, 0] and 1/(1+x) on [0, 1])
  stored in the persistent arena, like TFLM.

TFLM pins the output quantization: int8 output needs scale 1/256 and zero point -128, int16
output of int8 input needs scale ~1/65536 and zero point -32768, int16 softmax needs zero
points 0 and an output scale ~1/32768. uint8 is not supported by TFLM.
"""

from __future__ import annotations

import numpy as np

from micronn import fixedpoint as fp
from micronn.errors import InvokeError
from micronn.kernels.base import Kernel, Node, register
from micronn.quant import (
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    rounding_divide_by_pot,
    saturating_rounding_doubling_high_mul,
    wrap_int32,
)

SCALED_DIFF_INTEGER_BITS = 5  # input differences in Q5.26
ACCUMULATION_INTEGER_BITS = 12  # sum of exps in Q12.19


def _near(value: float, target: float) -> bool:
    """TF_LITE_ENSURE_NEAR with a tolerance of 0.1% of the target, in float like TFLM."""
    return abs(np.float32(value) - np.float32(target)) <= np.float32(0.001) * np.float32(target)


@register
class Softmax(Kernel):
    op = "SOFTMAX"
    dtypes = frozenset({"float32", "int8", "int16"})

    def prepare(self, node: Node) -> None:
        if len(node.inputs) != 1 or len(node.outputs) != 1 or node.inputs[0] is None:
            raise node.fail("SOFTMAX takes exactly one input and one output")
        inp, out = node.inputs[0], node.outputs[0]
        if len(inp.shape) < 1:
            raise node.fail("SOFTMAX input needs at least one dimension")
        if tuple(inp.shape) != tuple(out.shape):
            raise node.fail(f"SOFTMAX output shape {out.shape} differs from input shape {inp.shape}")
        self.in_dtype, self.out_dtype = inp.dtype.name, out.dtype.name

        if self.in_dtype == "int16":  # TFLM allocates both tables before validating anything else
            self.exp_lut = node.persistent(fp.exp_lut_int16())
            self.reciprocal_lut = node.persistent(fp.one_over_one_plus_x_lut_int16())
        if self.out_dtype == "int16":
            if self.in_dtype not in ("int8", "int16"):
                raise node.fail(f"SOFTMAX int16 output needs int8 or int16 input, not {self.in_dtype}")
        elif self.in_dtype != self.out_dtype:
            raise node.fail(f"SOFTMAX output type {self.out_dtype} must match input type {self.in_dtype}")
        if self.in_dtype == "int16" and out.zero_point != 0:
            raise node.fail("int16 SOFTMAX needs output zero point 0")

        beta = float(getattr(node.options, "beta", 0.0))  # no options table: TFLM reads beta 0
        if self.in_dtype == "float32":
            self.beta = np.float32(beta)
            return
        if self.in_dtype == "int16":
            if inp.zero_point != 0 or out.zero_point != 0:
                raise node.fail("int16 SOFTMAX needs input and output zero points 0")
            if not _near(out.scale, 1.0 / 32768):
                raise node.fail(f"int16 SOFTMAX needs output scale 1/32768, got {out.scale}")
            # Scale input differences so that [-65535, 0] covers [-10, 0], the exp table's domain.
            real = float(np.float32(inp.scale)) * beta / (10.0 / 65535.0)
            self.multiplier, self.shift = quantize_multiplier(real)
            return
        if self.out_dtype == "int16":
            if out.zero_point != -32768 or not _near(out.scale, 1.0 / 65536):
                raise node.fail(
                    f"int8 -> int16 SOFTMAX needs output scale 1/65536 and zero point -32768, "
                    f"got {out.scale} and {out.zero_point}"
                )
        elif out.zero_point != -128 or np.float32(out.scale) != np.float32(1.0 / 256):
            raise node.fail(
                f"int8 SOFTMAX needs output scale 1/256 and zero point -128, got {out.scale} and {out.zero_point}"
            )
        try:
            self.multiplier, self.left_shift = fp.preprocess_softmax_scaling(
                beta, float(np.float32(inp.scale)), SCALED_DIFF_INTEGER_BITS
            )
        except ValueError as e:
            raise node.fail(str(e)) from None
        self.diff_min = -fp.calculate_input_radius(SCALED_DIFF_INTEGER_BITS, self.left_shift)

    def invoke(self, node: Node) -> None:
        x = node.input(0)
        if x.size == 0:
            return
        depth = x.shape[-1]
        rows = x.reshape(-1, depth)
        if self.in_dtype == "float32":
            result = self._float(rows)
        elif self.in_dtype == "int16":
            result = self._int16(rows)
        else:
            result = self._int8(rows)
        node.output(0)[...] = result.reshape(node.output(0).shape)

    def _float(self, rows: np.ndarray) -> np.ndarray:
        rows = rows.astype(np.float32, copy=False)
        lowest = np.finfo(np.float32).min
        # std::max(max, x) starting from lowest: NaNs never become the maximum (fmax skips them).
        row_max = np.fmax.reduce(rows, axis=1, keepdims=True, initial=lowest)
        with np.errstate(invalid="ignore", over="ignore"):
            e = fp.expf((rows - row_max) * self.beta)
            total = np.cumsum(e, axis=1, dtype=np.float32)[:, -1:]  # sequential float32 sum, like the C loop
            return e / total

    def _int8(self, rows: np.ndarray) -> np.ndarray:
        diff = rows.astype(np.int64) - rows.max(axis=1, keepdims=True).astype(np.int64)
        used = diff >= self.diff_min
        scaled = fp.multiply_by_quantized_multiplier_greater_than_one(
            np.where(used, diff, 0), self.multiplier, self.left_shift
        )
        exp_q0 = fp.exp_on_negative_values(scaled, SCALED_DIFF_INTEGER_BITS)
        terms = np.where(used, fp.rescale(exp_q0, 0, ACCUMULATION_INTEGER_BITS), 0)
        sum_of_exps = wrap_int32(terms.sum(axis=1, keepdims=True))
        scale, bits_over_unit = fp.get_reciprocal(sum_of_exps, ACCUMULATION_INTEGER_BITS)
        out_bits = 16 if self.out_dtype == "int16" else 8
        lo, hi = (-32768, 32767) if out_bits == 16 else (-128, 127)
        exponent = bits_over_unit + 31 - out_bits
        if np.any(exponent > 31):
            # gemmlowp asserts exponent <= 31 in RoundingDivideByPOT: the TFLM reference aborts the process.
            raise InvokeError(
                "int8 SOFTMAX: a row's sum of exponentials reaches 512 (too many values near the row maximum); "
                "TFLM's reference kernel aborts on this input"
            )
        unsat = rounding_divide_by_pot(saturating_rounding_doubling_high_mul(scale, exp_q0), exponent)
        return np.where(used, np.clip(unsat + lo, lo, hi), lo)

    def _int16(self, rows: np.ndarray) -> np.ndarray:
        diff = rows.astype(np.int64) - rows.max(axis=1, keepdims=True).astype(np.int64)
        scaled = multiply_by_quantized_multiplier(diff, self.multiplier, self.shift)
        symmetric = np.clip(scaled + 32767, -32768, 32767)  # recentre [-65535, 0] onto the table's domain
        exp_q15 = fp.int16_table_lookup(symmetric, self.exp_lut)
        sum_of_exps = wrap_int32(exp_q15.sum(axis=1, keepdims=True))
        headroom_plus_one = fp.count_leading_zeros(sum_of_exps)
        # Normalize the sum into [1, 2) as Q1.16, then recentre x = sum - 1 onto [-32768, 32767].
        shifted_sum = ((sum_of_exps << (headroom_plus_one - 1)) + (1 << 13)) >> 14
        symmetric_sum = np.clip(shifted_sum - ((1 << 15) + (1 << 16)), -32768, 32767)
        reciprocal_q15 = fp.int16_table_lookup(symmetric_sum, self.reciprocal_lut)
        right_shift = 31 - headroom_plus_one
        result = (exp_q15 * reciprocal_q15 + (np.int64(1) << (right_shift - 1))) >> right_shift
        return np.clip(result, 0, 32767)
