"""CUMSUM: running sums along one axis (optionally exclusive and/or reversed), like TFLM's reference kernel.

float32 adds in order in float32 from a zero start. int8 follows TFLM's quantized path: each input minus
its zero point is shifted left by 20 bits and halved with QuantizeMultiplier(0.5) (the scale of the
running sum is twice the input scale), the int32 running total is rescaled by 2 * input scale /
(2**20 * output scale), plus the output zero point, clamped. TFLM's running total does not start at 0 but
at the scaled input offset (-zero point), as if an extra 0 came first; int32 overflow wraps. TFLM needs
the axis as a one-element int32 tensor and checks it at invoke.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels._reduce import invoke_error
from micronn.kernels.base import Kernel, Node, register
from micronn.quant import multiply_by_quantized_multiplier, quantize_multiplier, wrap_int32

LEFT_SHIFT = 20


@register
class Cumsum(Kernel):
    """TFLM CUMSUM for float32 and int8."""

    op = "CUMSUM"
    dtypes = frozenset({"float32", "int8"})

    def prepare(self, node: Node) -> None:
        if len(node.inputs) != 2 or any(t is None for t in node.inputs) or len(node.outputs) != 1:
            raise node.fail("expects 2 inputs (input, axis) and 1 output")
        inp, axis, out = node.inputs[0], node.inputs[1], node.outputs[0]
        if axis.dtype != np.int32:
            raise node.fail(f"the axis must be int32 (TFLM rejects {axis.dtype.name})")
        if int(np.prod(axis.shape, dtype=np.int64)) != 1:
            raise node.fail(f"the axis must hold one value, got shape {axis.shape}")
        if len(inp.shape) < 1:
            raise node.fail("the input must have at least one dimension")
        if inp.dtype != out.dtype:
            raise node.fail(f"input is {inp.dtype.name} but output is {out.dtype.name}")
        if tuple(inp.shape) != tuple(out.shape):
            raise node.fail(f"input {inp.shape} and output {out.shape} differ in shape")
        opts = node.options
        self.exclusive = bool(opts.exclusive) if opts is not None else False
        self.reverse = bool(opts.reverse) if opts is not None else False
        if inp.dtype == np.int8:
            in_scale, out_scale = float(np.float32(inp.scale)), float(np.float32(out.scale))
            twice = 2 * in_scale
            real_in = in_scale / twice
            real_out = twice / ((1 << LEFT_SHIFT) * out_scale) if out_scale else float("inf")
            if not 0 < real_out < 1:
                raise node.fail(f"the output rescale 2 * {in_scale} / (2**20 * {out_scale}) must lie in (0, 1) "
                                "(TFLM asserts it)")
            self.in_mult, self.in_shift = quantize_multiplier(real_in)
            self.out_mult, self.out_shift = quantize_multiplier(real_out)
            self.in_zp, self.out_zp = inp.zero_point, out.zero_point
        self.axis: int | None = None
        if axis.is_constant:
            self.axis = self.resolve(node, node.fail)

    def resolve(self, node: Node, error) -> int:
        rank = len(node.inputs[0].shape)
        value = int(node.input(1).reshape(-1)[0])
        a = value + rank if value < 0 else value
        if not 0 <= a < rank:
            raise error(f"axis {value} is out of range for a {rank}-D input (TFLM fails at invoke)")
        return a

    def invoke(self, node: Node) -> None:
        axis = self.axis if self.axis is not None else self.resolve(node, lambda msg: invoke_error(node, msg))
        x = np.moveaxis(node.input(0), axis, -1)
        if self.reverse:
            x = x[..., ::-1]
        shape = x.shape
        x2 = x.reshape(-1, shape[-1])
        if x2.dtype == np.float32:
            y = self._float(x2)
        else:
            y = self._int8(x2)
        y = y.reshape(shape)
        if self.reverse:
            y = y[..., ::-1]
        node.output(0)[...] = np.moveaxis(y, -1, axis)

    def _float(self, x2: np.ndarray) -> np.ndarray:
        """Every prefix sum, each rounded like TFLM's ``acc += x`` from ``acc = 0``."""
        with np.errstate(over="ignore", invalid="ignore"):
            run = np.add.accumulate(x2, axis=1, dtype=np.float32) + np.float32(0.0)
        if np.isnan(run).any():  # once NaN the C total keeps its first NaN
            for r in np.unique(np.nonzero(np.isnan(run))[0]):
                first = int(np.argmax(np.isnan(run[r])))
                run[r, first:] = run[r, first]
        if self.exclusive:
            run = np.concatenate([np.zeros((len(run), 1), np.float32), run[:, :-1]], axis=1)
        return run

    def _int8(self, x2: np.ndarray) -> np.ndarray:
        scaled = multiply_by_quantized_multiplier(
            wrap_int32((x2.astype(np.int64) - self.in_zp) << LEFT_SHIFT), self.in_mult, self.in_shift)
        # TFLM starts the running total at the scaled input offset (-zero point), as if a 0 came first
        start = int(multiply_by_quantized_multiplier(-self.in_zp << LEFT_SHIFT, self.in_mult, self.in_shift))
        run = wrap_int32(start + np.cumsum(scaled, axis=1))
        if self.exclusive:
            run = np.concatenate([np.full((len(run), 1), start, np.int64), run[:, :-1]], axis=1)
        y = multiply_by_quantized_multiplier(run, self.out_mult, self.out_shift) + self.out_zp
        return np.clip(y, -128, 127)
