"""FULLY_CONNECTED: TFLM's reference kernel (float32, int8 per-tensor or per-channel weights, int16x8).

The input is read as (batches, accum_depth) rows, batches taken from the output shape, as TFLM does.
Quantized products are one exact BLAS matrix product (see ``_conv_util.exact_float_dtype``); float32 adds
the products one depth step at a time so each float32 rounding happens in TFLM's order.
"""

from __future__ import annotations

import numpy as np

from micronn.ir import Tensor
from micronn.kernels._conv_util import (
    CONV_TYPES,
    ConvLike,
    FloatSum,
    Requant,
    clamp_float,
    conv_multipliers,
    exact_float_dtype,
    exact_matmul,
    float_activation_range,
    float_kernel,
    quantized_activation_range,
)
from micronn.kernels.base import Node, register


def _check_bias_scale(node: Node, inp: Tensor, flt: Tensor, bias: Tensor | None, out: Tensor) -> None:
    """TFLM GetQuantizedConvolutionMultipler's sanity check: the bias scale must be within 2% (of the output
    scale) of input_scale * filter_scale, all in double (scales straddling the bound, where a float32 product
    would pass, are refused by the wheel)."""
    product = float(np.float32(inp.scale)) * float(np.float32(flt.scale))
    if bias is not None:
        bias_scale = float(np.float32(bias.scale))
        if not abs(product - bias_scale) / float(np.float32(out.scale)) <= 0.02:
            raise node.fail(f"bias scale {bias_scale} is not input scale * filter scale ({product})")
    if product < 0:
        raise node.fail("negative input * filter scale")


@register
class FullyConnected(ConvLike):
    op = "FULLY_CONNECTED"

    def prepare(self, node: Node) -> None:
        inp, flt, bias, out = self.operands(node, CONV_TYPES, "weights", "fully connected needs {} weights")
        kind = inp.dtype.name
        o = node.options
        if o.weights_format != 0:
            raise node.fail("only the default weights format is supported")
        if len(flt.shape) != 2 or len(out.shape) < 1:
            # TFLM reads weights of another rank past their end (results that differ run to run): refuse them
            raise node.fail(f"weights {list(flt.shape)} must be 2-D (units, depth)")
        depth = flt.shape[-1]
        units = out.shape[-1]
        batches = int(np.prod(out.shape[:-1], dtype=np.int64))
        n_in = int(np.prod(inp.shape, dtype=np.int64))
        if units > int(np.prod(flt.shape[:-1], dtype=np.int64)) or depth < 1 or n_in != batches * depth:
            raise node.fail(f"input {inp.shape}, weights {flt.shape} and output {out.shape} do not fit")
        if bias is not None and int(np.prod(bias.shape)) < units:
            raise node.fail(f"bias has {int(np.prod(bias.shape))} values for {units} units")
        self.kind, self.batches, self.depth, self.units = kind, batches, depth, units
        self.has_bias = bias is not None

        if kind == "float32":
            self.fact_min, self.fact_max = float_activation_range(o.fused_activation_function)
        else:
            for t, what in ((inp, "input"), (flt, "weights"), (out, "output")):
                if t.quant is None or len(t.quant.scale) == 0:
                    raise node.fail(f"{what} tensor is not quantized")
            _check_bias_scale(node, inp, flt, bias, out)
            if flt.zero_point != 0:
                raise node.fail("weights must be symmetrically quantized (zero point 0)")
            # The wheel's multipliers are conv's: input_scale * filter_scale / output_scale all in double
            # (verified against it with accumulators crafted to tell a float32 product apart).
            n_scales = len(flt.quant.scale)
            mults, shifts = conv_multipliers(inp, flt, out, n_scales)
            if n_scales > 1:  # per-channel weights: TFLM keeps multiplier and shift arrays, one per unit
                if self.int4:
                    raise node.fail("int4 weights must be quantized per tensor (TFLM's per-channel path refuses them)")
                axis = flt.quant.axis
                if not 0 <= axis < len(flt.shape) or flt.shape[axis] != n_scales:
                    raise node.fail(f"weights have {n_scales} scales along axis {axis} of {flt.shape}")
                self.mults = node.persistent(mults, constant=True)
                self.shifts = node.persistent(shifts, constant=True)
                mults, shifts = mults[:units], shifts[:units]
            self.mult64, self.shift64 = mults.astype(np.int64), shifts.astype(np.int64)
            self.requant = Requant(mults, shifts)
            self.act_min, self.act_max = quantized_activation_range(node, o.fused_activation_function, out)
            self.in_zp, self.out_zp = inp.zero_point, out.zero_point

        self.constant = flt.is_constant and (bias is None or bias.is_constant)
        if self.constant:
            self._pack(node)

    def _pack(self, node: Node) -> None:
        w = self.weights(node).reshape(-1, self.depth)[:self.units]
        bias = np.asarray(node.input(2)).reshape(-1)[:self.units] if self.has_bias else None
        if self.kind == "float32":
            self.w, self.bias = w, bias
            return
        max_in = 255 if self.kind == "int8" else 65535  # |x - zero_point|
        self.ftype = exact_float_dtype(max_in, w, axis=1) or np.dtype(np.int64)
        self.wt = w.T.astype(self.ftype)
        self.bias = None if bias is None else bias.astype(np.int64)
        bound = max_in * int(np.abs(w.astype(np.int64)).sum(axis=1).max(initial=0))
        self.need_wrap = bound + (0 if self.bias is None else int(np.abs(self.bias).max(initial=0))) >= 2**31

    def invoke(self, node: Node) -> None:
        if not self.constant:
            self._pack(node)
        x = node.input(0).reshape(self.batches, self.depth)
        out = node.output(0)
        if self.kind == "float32":
            total = float_kernel(lambda exact: self._float_total(x, exact))
            out[...] = clamp_float(total, self.fact_min, self.fact_max).reshape(out.shape)
            return
        acc = exact_matmul(np.subtract(x, self.in_zp, dtype=self.ftype), self.wt)
        out[...] = self.output_stage(acc, self.bias, self.kind == "int8", True).reshape(out.shape)

    def _float_total(self, x: np.ndarray, exact: bool) -> np.ndarray:
        """TFLM's float32 sum over the depth in order, then the bias."""
        acc = FloatSum((self.batches, self.units), exact)
        for d in range(self.depth):
            acc.add_product(x[:, d:d + 1], self.w[:, d])
        if self.bias is not None:
            acc.add_bias(self.bias, bias_nan_wins=True)
        return acc.total
