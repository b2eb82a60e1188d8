"""SignalIrfft (TFLM's signal library): the inverse real FFT of every frame of the last axis, byte for byte.

Options (a FlexBuffer map): ``T``, the TFLite type code (int16 = 7, int32 = 2, float32 = 0), and ``fft_length``.
An input frame holds the ``fft_length / 2 + 1`` bins ``0 .. fft_length / 2`` as interleaved (real, imaginary)
pairs (``fft_length + 2`` values); the output frame is ``fft_length`` real samples. Leading dimensions are frames.
The imaginary parts of bins 0 and ``fft_length / 2`` are not used.

int16 (Q15) and int32 (Q31) divide by 2 at the split and by each radix in the complex stages, with rounding:
the inverse DFT is returned as is (its 1/``fft_length`` normalisation comes from those divisions). float32
computes the unscaled inverse and TFLM then divides every sample by ``fft_length`` in float32. The exact
arithmetic is described in :mod:`micronn.kernels._signal_fft`.

TFLM handles only even ``fft_length >= 4`` whose half factors into 2, 3 and 5 (it crashes on others); it reads
and writes whole frames whatever the tensors' last dimensions say, so micronn requires them to be exactly
``fft_length + 2`` and ``fft_length``. Its FFT state lives in the persistent tail (the same size as SignalRfft's,
plus 16 bytes for float32); it takes no scratch.

float32: results are bit-identical for finite values; where a NaN comes out (NaN or infinite inputs, overflow),
TFLM's NaN sign and payload depend on the operand order its compiler chose and may differ from micronn's.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels._signal_fft import RealFft, fft_operands, fft_options
from micronn.kernels.base import Kernel, Node, register


@register
class SignalIrfft(Kernel):
    op = "SignalIrfft"
    dtypes = frozenset({"int16", "int32", "float32"})
    reads_input_first = True

    def prepare(self, node: Node) -> None:
        kind, self.fft_length = fft_options(node)
        inp, out, self.frames = fft_operands(node, kind)
        if int(inp.shape[-1]) != self.fft_length + 2:
            raise node.fail(f"input frames must hold {self.fft_length + 2} values ({self.fft_length // 2 + 1} "
                            f"complex bins), not {inp.shape[-1]}")
        if int(out.shape[-1]) != self.fft_length:
            raise node.fail(f"output frames must hold fft_length = {self.fft_length} samples, not {out.shape[-1]}")
        self.fft = RealFft(self.fft_length, True, kind)

    def invoke(self, node: Node) -> None:
        if self.frames == 0:
            return
        x = node.input(0).reshape(self.frames, self.fft_length + 2)
        with np.errstate(all="ignore"):
            y = self.fft.inverse(x)
        out = node.output(0)
        out[...] = y.reshape(out.shape)
