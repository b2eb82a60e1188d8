"""SignalWindow (TFLM signal library): multiply frames of int16 samples by an int16 window, scale down by a shift.

Inputs: ``input`` (int16, any rank >= 1) and ``weights`` (int16, 1-D, the window). Output: int16, same rank and
number of elements as the input. Custom option ``shift`` (int).

TFLM walks the flattened input in consecutive frames of ``len(weights)`` samples, each multiplied element-wise by the
window. Each product is formed in int32 (exact: int16 * int16 always fits), shifted right arithmetically by
``shift`` (floor, no rounding: -3 >> 1 is -2) and saturated to int16 (32767 * 32767 at shift 0 gives 32767).

Established with the wheel, and refused here because TFLM's result is undefined or reads out of bounds:

* ``shift`` outside [0, 31] (the wheel's x86 build shifts by ``shift % 32``, a C undefined behaviour);
* an input whose size is not a multiple of the window's (the last frame runs past both buffers), and an empty window
  over a non-empty input (TFLM loops forever);
* an output with another rank (TFLM refuses too) or another number of elements (TFLM leaves the extra unwritten).
"""

from __future__ import annotations

import numpy as np

from micronn.kernels import _signal as sf
from micronn.kernels.base import Kernel, Node, register


@register
class SignalWindow(Kernel):
    op = "SignalWindow"
    dtypes = frozenset({"int16"})
    reads_input_first = True

    def prepare(self, node: Node) -> None:
        (x, w), (out,) = sf.operands(node, 2, 1)
        n = sf.expect(node, x, "input", "int16", rank=None)
        if not x.shape:
            raise node.fail("input must have at least one dimension")
        self.frame = sf.expect(node, w, "weights", "int16")
        sf.expect(node, out, "output", "int16", rank=len(x.shape))
        sf.same_size(node, n, output=int(np.prod(out.shape, dtype=np.int64)))
        if n and (self.frame == 0 or n % self.frame):
            raise node.fail(f"input of {n} elements is not a whole number of windows of {self.frame}")
        self.shift = sf.in_range(node, "shift", sf.signal_options(node, {"shift": int})["shift"], 0, 31)

    def invoke(self, node: Node) -> None:
        x, out = node.input(0), node.output(0)
        if out.size == 0:
            return
        frames = x.reshape(-1, self.frame).astype(np.int32) * node.input(1).astype(np.int32)
        out[...] = np.clip(frames >> self.shift, -32768, 32767).reshape(out.shape)
