"""SignalRfft (TFLM's signal library): the real FFT of every frame of the last axis, byte for byte as TFLM.

Options (a FlexBuffer map): ``T``, the TFLite type code (int16 = 7, int32 = 2, float32 = 0), and ``fft_length``.
Each frame of ``input_length <= fft_length`` samples is zero padded to ``fft_length`` and transformed; the output
frame holds the ``fft_length / 2 + 1`` bins ``0 .. fft_length / 2`` as interleaved (real, imaginary) pairs, so its
last dimension is ``fft_length + 2``. Leading dimensions are frames.

int16 works in Q15 and int32 in Q31 fixed point: every radix stage and the final real split divide by their
radix (and by 2) with rounding, so the result is the DFT divided by ``fft_length``, rounded stage by stage.
float32 is unscaled. The exact arithmetic (radix order, twiddle rounding, wrapping, operation order) is described
in :mod:`micronn.kernels._signal_fft`.

Lengths: TFLM's FFT handles only even ``fft_length >= 4`` whose half factors into 2, 3 and 5; it crashes on
others, which micronn refuses. micronn also refuses what TFLM would read or write out of bounds (frames longer
than ``fft_length``, an output frame other than ``fft_length + 2``) and option maps it would misread.

Memory: TFLM takes a scratch buffer of ``fft_length`` samples (requested here too, so the planned head matches)
and keeps its FFT state in the persistent tail: ``288 + S * (n + 3 * n // 2)`` bytes for ``n = fft_length / 2``
(``S`` = 4 for int16, 8 for int32 and float32: twiddles, a work buffer and the split's twiddles), plus 64 bytes
of the kernel's own (the wheel measures 2,912 persistent bytes for int16 and fft_length 512). micronn keeps its
tables outside the arena.

float32: results are bit-identical for finite values; where a NaN comes out (NaN or infinite inputs, overflow),
TFLM's NaN sign and payload depend on the operand order its compiler chose and may differ from micronn's.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels._signal_fft import RealFft, fft_operands, fft_options
from micronn.kernels.base import Kernel, Node, register


@register
class SignalRfft(Kernel):
    op = "SignalRfft"
    dtypes = frozenset({"int16", "int32", "float32"})
    reads_input_first = True

    def prepare(self, node: Node) -> None:
        kind, self.fft_length = fft_options(node)
        inp, out, self.frames = fft_operands(node, kind)
        self.input_length = int(inp.shape[-1])
        if not 1 <= self.input_length <= self.fft_length:
            raise node.fail(f"frames of {self.input_length} samples do not fit fft_length {self.fft_length} "
                            "(TFLM needs 1 .. fft_length and zero pads the rest)")
        if int(out.shape[-1]) != self.fft_length + 2:
            raise node.fail(f"output frames must hold {self.fft_length + 2} values ({self.fft_length // 2 + 1} "
                            f"complex bins), not {out.shape[-1]}")
        if not node.compact_scratch:
            node.request_scratch(self.fft_length * inp.dtype.itemsize)  # TFLM's zero-padded copy of a frame
        self.fft = RealFft(self.fft_length, False, kind)

    def invoke(self, node: Node) -> None:
        if self.frames == 0:
            return
        x = node.input(0).reshape(self.frames, self.input_length)
        if self.input_length < self.fft_length:
            x = np.concatenate([x, np.zeros((self.frames, self.fft_length - self.input_length), x.dtype)], axis=1)
        with np.errstate(all="ignore"):
            y = self.fft.forward(x)
        out = node.output(0)
        out[...] = y.reshape(out.shape)
