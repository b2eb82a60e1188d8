"""ADD_N: the elementwise sum of two or more tensors of one shape, like TFLM's reference kernel.

float32 adds in input order in float32 from a +0.0 start (so all -0.0 inputs give +0.0). int8 requires
every input to share one scale and zero point; each value minus the zero point is shifted left by 20 bits
and halved with QuantizeMultiplierSmallerThanOneExp(0.5), the int32 total (which, like TFLM's, starts
from the scaled -zero point, as if an extra quantized 0 came first, and wraps on overflow) is rescaled by
2 * input scale / (2**20 * output scale), offset by the output zero point and clamped.

TFLM requests one scratch buffer holding a pointer per input: ``sizeof(void*) * inputs`` bytes, 8 per input
on the 64-bit host the reference wheel runs on.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels import _elementwise as ew
from micronn.kernels._extra import element_count, refuse_zero_size
from micronn.kernels.base import Kernel, Node, register
from micronn.quant import multiply_by_quantized_multiplier, wrap_int32

LEFT_SHIFT = 20
POINTER_BYTES = 8  # sizeof(T*) on the host TFLM build


@register
class AddN(Kernel):
    """TFLM ADD_N for float32 and int8 (the wheel refuses other types at prepare)."""

    op = "ADD_N"
    dtypes = frozenset({"float32", "int8"})
    reads_input_first = True  # the whole sum is computed before the output is written

    def prepare(self, node: Node) -> None:
        if len(node.inputs) < 2 or len(node.outputs) != 1:
            raise node.fail(f"expects at least 2 inputs and 1 output, got {len(node.inputs)} and "
                            f"{len(node.outputs)}")
        if any(t is None for t in node.inputs):
            raise node.fail("an input is omitted")
        first, out = node.inputs[0], node.outputs[0]
        refuse_zero_size(node, [*node.inputs, out])
        if out.dtype != first.dtype:
            raise node.fail(f"the output is {out.dtype.name} but the inputs are {first.dtype.name}")
        for i, t in enumerate(node.inputs[1:], start=1):
            if tuple(t.shape) != tuple(first.shape):
                raise node.fail(f"input {i} has shape {tuple(t.shape)}, input 0 {tuple(first.shape)}: TFLM needs one "
                                "shape")
            if t.dtype != first.dtype:
                raise node.fail(f"input {i} is {t.dtype.name}, input 0 {first.dtype.name}")
            if first.dtype == np.int8 and (np.float32(t.scale) != np.float32(first.scale)
                                           or t.zero_point != first.zero_point):
                raise node.fail(f"int8 input {i} is quantized ({t.scale}, {t.zero_point}), input 0 "
                                f"({first.scale}, {first.zero_point}): TFLM needs one scale and zero point")
        if element_count(out) != element_count(first):
            raise node.fail(f"the output {tuple(out.shape)} has {element_count(out)} elements but the inputs "
                            f"{tuple(first.shape)} have {element_count(first)} (TFLM walks the output's count)")
        if first.dtype == np.int8:
            ew.require_quantized(node, [first, out], ["the inputs", "the output"])
            in_scale, out_scale = float(np.float32(first.scale)), float(np.float32(out.scale))
            twice = 2 * in_scale
            self.in_mult, self.in_shift = ew.multiplier_below_one(node, in_scale / twice, "input")
            self.out_mult, self.out_shift = ew.multiplier_below_one(
                node, twice / (float(1 << LEFT_SHIFT) * out_scale), "output")
            self.in_offset, self.out_zp = -first.zero_point, out.zero_point
        node.request_scratch(POINTER_BYTES * len(node.inputs))

    def invoke(self, node: Node) -> None:
        xs = [node.input(i) for i in range(len(node.inputs))]
        out = node.output(0)
        if out.dtype == np.float32:
            total = np.zeros(xs[0].shape, np.float32)  # TFLM's +0.0 start
            with np.errstate(all="ignore"):
                for x in xs:
                    total = total + x
        else:
            def scaled(q) -> np.ndarray:
                shifted = (np.asarray(q, np.int64) + self.in_offset) << LEFT_SHIFT
                return multiply_by_quantized_multiplier(shifted, self.in_mult, self.in_shift)

            acc = np.broadcast_to(scaled(0), xs[0].shape).astype(np.int64)  # TFLM's start: a quantized 0
            for x in xs:
                acc = wrap_int32(acc + scaled(x))
            result = multiply_by_quantized_multiplier(acc, self.out_mult, self.out_shift) + self.out_zp
            total = np.clip(result, -128, 127).astype(np.int8)
        out[...] = total.reshape(out.shape)
