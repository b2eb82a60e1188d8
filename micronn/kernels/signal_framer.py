"""SignalFramer (TFLM signal library): cut a stream of int16 samples into overlapping frames, across invokes.

Input ``(..., N)`` int16; outputs ``(..., N / frame_step, frame_size)`` int16 and a 0-D bool "output valid".
Options (FlexBuffer map): ``frame_size`` (int), ``frame_step`` (int) and ``prefill`` (bool).

Every row of the leading dimensions is its own stream. Each invoke appends the row's N new samples to it in
``N / frame_step`` pieces of ``frame_step``; after each piece, once the stream holds a whole frame, TFLM emits
its oldest ``frame_size`` samples as the next frame and drops the oldest ``frame_step``. So frame k is the
stream's samples ``[k * frame_step, k * frame_step + frame_size)`` (``frame_size < frame_step`` just keeps the
start of every step). With ``prefill`` the stream starts with ``frame_size - frame_step`` zeros, so every piece
completes a frame; without it the first ``ceil(frame_size / frame_step) - 1`` pieces complete none. A piece
that completes no frame leaves its slot of the output as it was and makes "output valid" false for the invoke.

State between invokes, in persistent memory: the stream's samples that later frames still need, and how many
pieces came so far (up to the number that complete no frame). Reset empties the stream (refilling the zeros
with ``prefill``). Prepare refuses what TFLM would divide by zero on or run past its buffers with: a step
below 1 or not dividing N, a frame size below 1, ``prefill`` with ``frame_size < frame_step``, and an output
of another shape.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from micronn.kernels._signal import INT32_MAX, check_state_bytes, leading, signal_options
from micronn.kernels.base import Kernel, Node, register


@register
class SignalFramer(Kernel):
    op = "SignalFramer"
    dtypes = frozenset({"int16"})

    def prepare(self, node: Node) -> None:
        if len(node.inputs) != 1 or node.inputs[0] is None or len(node.outputs) != 2:
            raise node.fail("takes one input and gives two outputs (frames, output valid)")
        opts = signal_options(node, {"frame_size": int, "frame_step": int, "prefill": bool})
        size, step, prefill = opts["frame_size"], opts["frame_step"], bool(opts["prefill"])
        inp, out, valid = node.inputs[0], node.outputs[0], node.outputs[1]
        if inp.dtype != np.int16 or out.dtype != np.int16 or valid.dtype != np.bool_:
            raise node.fail(f"needs an int16 input and outputs int16 and bool, got {inp.dtype}, {out.dtype} and "
                            f"{valid.dtype}")
        if not 1 <= size <= INT32_MAX or not 1 <= step <= INT32_MAX:
            raise node.fail(f"frame_size {size} and frame_step {step} must be at least 1")
        if prefill and size < step:
            raise node.fail(f"prefill needs frame_size >= frame_step (TFLM would prefill {size - step} zeros)")
        if len(inp.shape) < 1:
            raise node.fail("the input needs at least one dimension")
        n = int(inp.shape[-1])
        if n < step or n % step:
            raise node.fail(f"the input's last dimension {n} must be a positive multiple of frame_step {step}")
        self.rows, self.n, self.size, self.step, self.frames = leading(inp.shape, 1), n, size, step, n // step
        pieces = -(-size // step)  # TFLM's buffer holds frame_size rounded up to whole steps
        self.keep = (pieces - 1) * step  # samples kept between invokes: all but the newest piece's
        self.silent = 0 if prefill else pieces - 1  # pieces that complete no frame
        self.offset = self.keep - size + step if prefill else 0  # where the first frame starts in kept + new
        check_state_bytes(node, self.rows * pieces * step * 4, f"frame_size {size} over {self.rows} rows")
        expected = (*inp.shape[:-1], n // step, size)
        if tuple(out.shape) != expected:
            raise node.fail(f"output shape {tuple(out.shape)}, expected {expected}")
        if tuple(valid.shape) != ():
            raise node.fail(f"the output-valid tensor must be 0-D, got shape {tuple(valid.shape)}")
        # TFLM's circular buffers hold every sample twice (2 * pieces * step per row): take as many bytes, so
        # micronn's persistent tail (and the footprint estimated from it) stays TFLM's; the kept samples use a part
        self.kept = node.persistent(np.zeros((self.rows, 2 * pieces * step), np.int16))[:, :self.keep]
        self.count = node.persistent(np.zeros(1, np.int32))

    def reset(self, node: Node) -> None:
        self.kept[...] = 0
        self.count[...] = 0

    def invoke(self, node: Node) -> None:
        x = node.input(0).reshape(self.rows, self.n)
        frames = node.output(0).reshape(self.rows, self.frames, self.size)
        stream = np.concatenate([self.kept, x], axis=1)
        first = max(int(self.silent - self.count[0]), 0)  # the first piece of this invoke that completes a frame
        if first < self.frames:
            windows = sliding_window_view(stream, self.size, axis=1)[:, self.offset::self.step]
            frames[:, first:] = windows[:, first:self.frames]
        node.output(1)[...] = first == 0 or self.rows == 0  # TFLM clears the flag only inside its row loop
        if self.keep:
            self.kept[...] = stream[:, stream.shape[1] - self.keep:]
        self.count[0] = min(int(self.count[0]) + self.frames, self.silent)
