"""SignalOverlapAdd (TFLM signal library): rebuild a stream from overlapping frames, across invokes.

Input ``(..., n_frames, frame_size)``; output ``(..., n_frames * frame_step)``, both int16 or both float32.
Options (FlexBuffer map): ``T``, the tensor type as a TFLite TensorType number (0 float32, 7 int16: TFLM picks
its kernel from it and then checks the tensors), and ``frame_step`` (int, 1 to ``frame_size``).

Every row of the leading dimensions keeps an accumulator of ``frame_size`` values, zero at first. For each
frame in order, TFLM adds the frame into the accumulator element by element (int16: the exact sum clamped to
int16 at every add; float32: one float add, accumulator first), emits the accumulator's first ``frame_step``
values as the next piece of the output, and shifts the accumulator left by ``frame_step``, filling its end
with zeros. The accumulators are the state kept in persistent memory between invokes; reset zeroes them.
Prepare refuses steps outside 1..frame_size (TFLM would move a negative number of bytes), empty frames (it
divides by their size) and an output of another shape.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels._signal import check_state_bytes, leading, signal_options
from micronn.kernels.base import Kernel, Node, register

TENSOR_TYPES = {0: np.dtype(np.float32), 7: np.dtype(np.int16)}  # TFLite's TensorType numbers TFLM accepts in T


@register
class SignalOverlapAdd(Kernel):
    op = "SignalOverlapAdd"
    dtypes = frozenset({"int16", "float32"})

    def prepare(self, node: Node) -> None:
        if len(node.inputs) != 1 or node.inputs[0] is None or len(node.outputs) != 1:
            raise node.fail("takes one input and gives one output")
        opts = signal_options(node, {"T": int, "frame_step": int})
        kind, step = opts["T"], opts["frame_step"]
        if kind not in TENSOR_TYPES:
            raise node.fail(f"T = {kind} is neither float32 (0) nor int16 (7), the types TFLM's kernel takes")
        inp, out = node.inputs[0], node.outputs[0]
        dtype = TENSOR_TYPES[kind]
        if inp.dtype != dtype or out.dtype != dtype:
            raise node.fail(f"T says {dtype}, but the input is {inp.dtype} and the output {out.dtype}")
        if len(inp.shape) < 2:
            raise node.fail(f"the input must be (..., n_frames, frame_size), got shape {tuple(inp.shape)}")
        n_frames, size = int(inp.shape[-2]), int(inp.shape[-1])
        if n_frames < 1 or size < 1:
            raise node.fail(f"the input {tuple(inp.shape)} must hold at least one frame of at least one sample")
        if not 1 <= step <= size:
            raise node.fail(f"frame_step {step} must be between 1 and the frame size {size}")
        expected = (*inp.shape[:-2], n_frames * step)
        if tuple(out.shape) != expected:
            raise node.fail(f"output shape {tuple(out.shape)}, expected {expected}")
        self.rows, self.n_frames, self.size, self.step = leading(inp.shape, 2), n_frames, size, step
        self.saturate = dtype == np.int16
        check_state_bytes(node, self.rows * size * dtype.itemsize, f"{self.rows} rows of frame size {size}")
        self.acc = node.persistent(np.zeros((self.rows, size), dtype))

    def reset(self, node: Node) -> None:
        self.acc[...] = 0

    def invoke(self, node: Node) -> None:
        frames = node.input(0).reshape(self.rows, self.n_frames, self.size)
        out = node.output(0).reshape(self.rows, self.n_frames, self.step)
        acc, step = self.acc, self.step
        for f in range(self.n_frames):
            if self.saturate:
                acc[...] = np.clip(acc.astype(np.int32) + frames[:, f], -32768, 32767)
            else:
                with np.errstate(all="ignore"):  # inf - inf and overflow give what the C add gives
                    acc += frames[:, f]
            out[:, f] = acc[:, :step]
            acc[:, :self.size - step] = acc[:, step:].copy()
            acc[:, self.size - step:] = 0
