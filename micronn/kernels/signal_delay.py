"""SignalDelay (TFLM signal library): delay a stream of int16 samples by ``delay_length``, across invokes.

Input ``(..., N)`` int16, output of the same shape. Option (FlexBuffer map): ``delay_length`` (int, >= 0).

Every row of the leading dimensions is its own stream, which TFLM starts with ``delay_length`` zeros: each
invoke appends the row's N new samples and outputs the N oldest ones it has not output yet. So the output is
the input shifted later by ``delay_length`` samples along the last axis, continuing from one invoke to the
next; a delay of 0 copies the input. The last ``delay_length`` samples of every row are the state kept in
persistent memory between invokes; reset makes them zeros again. Prepare refuses a negative delay (TFLM would
write a wrapped-around count of zeros), an empty last dimension (it divides by it) and an output of another
shape than the input.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels._signal import INT32_MAX, check_state_bytes, leading, signal_options
from micronn.kernels.base import Kernel, Node, register


@register
class SignalDelay(Kernel):
    op = "SignalDelay"
    dtypes = frozenset({"int16"})
    reads_input_first = True  # the new samples are copied out before any output is written

    def prepare(self, node: Node) -> None:
        if len(node.inputs) != 1 or node.inputs[0] is None or len(node.outputs) != 1:
            raise node.fail("takes one input and gives one output")
        delay = signal_options(node, {"delay_length": int})["delay_length"]
        inp, out = node.inputs[0], node.outputs[0]
        if inp.dtype != np.int16 or out.dtype != np.int16:
            raise node.fail(f"needs an int16 input and output, got {inp.dtype} and {out.dtype}")
        if not 0 <= delay <= INT32_MAX:
            raise node.fail(f"delay_length {delay} must not be negative")
        if len(inp.shape) < 1 or int(inp.shape[-1]) < 1:
            raise node.fail(f"the input {tuple(inp.shape)} needs a last dimension of at least one sample")
        if tuple(out.shape) != tuple(inp.shape):
            raise node.fail(f"output shape {tuple(out.shape)}, expected the input's {tuple(inp.shape)}")
        self.rows, self.n, self.delay = leading(inp.shape, 1), int(inp.shape[-1]), delay
        capacity = self.n + delay  # TFLM's circular buffer per row, which holds every sample twice
        check_state_bytes(node, self.rows * capacity * 4, f"delay_length {delay} over {self.rows} rows")
        # as many persistent bytes as TFLM takes (footprint estimates rely on it); the kept samples use a part
        self.kept = node.persistent(np.zeros((self.rows, 2 * capacity), np.int16))[:, :delay]

    def reset(self, node: Node) -> None:
        self.kept[...] = 0

    def invoke(self, node: Node) -> None:
        stream = np.concatenate([self.kept, node.input(0).reshape(self.rows, self.n)], axis=1)
        node.output(0)[...] = stream[:, :self.n].reshape(node.output(0).shape)
        self.kept[...] = stream[:, self.n:]
