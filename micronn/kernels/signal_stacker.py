"""SignalStacker (TFLM signal library): stack consecutive frames of features with context, across invokes.

Input ``(num_channels,)`` int16, one frame per invoke; outputs ``(num_channels * (left + right + 1),)`` int16
and a 0-D bool "output valid". Options (FlexBuffer map): ``num_channels``, ``stacker_left_context``,
``stacker_right_context`` and ``stacker_step`` (ints).

TFLM queues the frames it is given. The very first frame (after prepare or reset) goes in ``left + 1`` times,
so that the first stack has left context made of copies of it. Whenever the queue holds ``left + right + 1``
frames, the invoke outputs them all, oldest first, flattened, sets "output valid", and drops the oldest
``stacker_step`` frames; otherwise the output keeps what it held and "output valid" is false. The queue and
the "first frame seen" flag are the state kept in persistent memory; reset empties the queue and clears the
flag.

Prepare refuses channel counts below 1, negative contexts, steps outside 1..left + right + 1 (TFLM's queue
would lose track of its frames beyond that), and tensors of other shapes than the ones above (TFLM reads and
writes exactly that many values whatever the tensors' sizes).
"""

from __future__ import annotations

import numpy as np

from micronn.kernels._signal import INT32_MAX, check_state_bytes, signal_options
from micronn.kernels.base import Kernel, Node, register

NAMES = ("num_channels", "stacker_left_context", "stacker_right_context", "stacker_step")


@register
class SignalStacker(Kernel):
    op = "SignalStacker"
    dtypes = frozenset({"int16"})

    def prepare(self, node: Node) -> None:
        if len(node.inputs) != 1 or node.inputs[0] is None or len(node.outputs) != 2:
            raise node.fail("takes one input and gives two outputs (stacked frames, output valid)")
        opts = signal_options(node, dict.fromkeys(NAMES, int))
        channels, left, right, step = (opts[n] for n in NAMES)
        if not 1 <= channels <= INT32_MAX:
            raise node.fail(f"num_channels {channels} must be at least 1")
        if not 0 <= left <= INT32_MAX or not 0 <= right <= INT32_MAX:
            raise node.fail(f"the contexts ({left} left, {right} right) must not be negative")
        depth = left + right + 1
        if not 1 <= step <= depth:
            raise node.fail(f"stacker_step {step} must be between 1 and left + right + 1 = {depth}")
        check_state_bytes(node, channels * depth * 4, f"{depth} frames of {channels} channels")
        inp, out, valid = node.inputs[0], node.outputs[0], node.outputs[1]
        if inp.dtype != np.int16 or out.dtype != np.int16 or valid.dtype != np.bool_:
            raise node.fail(f"needs an int16 input and outputs int16 and bool, got {inp.dtype}, {out.dtype} and "
                            f"{valid.dtype}")
        if tuple(inp.shape) != (channels,):
            raise node.fail(f"input shape {tuple(inp.shape)}, expected ({channels},) (num_channels)")
        if tuple(out.shape) != (channels * depth,):
            raise node.fail(f"output shape {tuple(out.shape)}, expected ({channels * depth},)")
        if tuple(valid.shape) != ():
            raise node.fail(f"the output-valid tensor must be 0-D, got shape {tuple(valid.shape)}")
        self.left, self.depth, self.step = left, depth, step
        # TFLM's circular buffer holds every value twice: take as many persistent bytes (footprint estimates rely
        # on micronn's tail being TFLM's); the queue uses the first half
        self.queue = node.persistent(np.zeros((2 * depth, channels), np.int16))[:depth]
        self.state = node.persistent(np.zeros(2, np.int32))  # frames queued, first frame seen

    def reset(self, node: Node) -> None:
        self.queue[...] = 0
        self.state[...] = 0

    def invoke(self, node: Node) -> None:
        x = node.input(0)
        held = int(self.state[0])
        if self.state[1]:
            self.queue[held] = x
            held += 1
        else:
            self.queue[:self.left + 1] = x
            held, self.state[1] = self.left + 1, 1
        ready = held == self.depth
        if ready:
            node.output(0)[...] = self.queue.reshape(-1)
            self.queue[:self.depth - self.step] = self.queue[self.step:].copy()
            held -= self.step
        node.output(1)[...] = ready
        self.state[0] = held
