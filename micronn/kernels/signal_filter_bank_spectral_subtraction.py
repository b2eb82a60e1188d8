"""SignalFilterBankSpectralSubtraction (TFLM signal library): noise reduction with a running noise estimate per channel.

Input: uint32, 1-D. Outputs: the cleaned signal and the noise estimate (uint32, 1-D). All three have
``num_channels`` elements. Custom options (ints unless said): ``num_channels``, ``smoothing``,
``one_minus_smoothing``, ``alternate_smoothing``, ``alternate_one_minus_smoothing``, ``smoothing_bits``,
``spectral_subtraction_bits``, ``min_signal_remaining`` and ``clamping`` (bool).

State: one uint32 noise estimate per channel, kept between invokes (persistent memory) and zeroed by reset, as TFLM
does. Per channel ``i``, each invoke (the coefficient pair is the alternate one on odd channels):

* ``signal = input << smoothing_bits``, truncated to uint32;
* ``estimate = (signal * smoothing + estimate * one_minus_smoothing) >> spectral_subtraction_bits``, products and sum
  in uint64 (the sum wraps), the result truncated to uint32;
* the estimate used below is ``min(estimate, signal)``; with ``clamping`` the stored estimate is clamped too;
* ``floor = (input * min_signal_remaining) >> spectral_subtraction_bits`` (uint64, truncated to uint32);
* output ``max((signal - used estimate) >> smoothing_bits, floor)``; the noise output is the stored estimate.

The four coefficients and ``min_signal_remaining`` are uint32 in TFLM: the wheel keeps the low 32 bits of any int
(-1 acts as 2**32 - 1), and so does micronn. ``smoothing_bits`` must be in [0, 31] and ``spectral_subtraction_bits``
in [0, 63] (wider shifts are undefined in C). Sizes must equal ``num_channels`` (TFLM reads or writes past the
tensors, or leaves elements unwritten, otherwise).
"""

from __future__ import annotations

import numpy as np

from micronn.kernels import _signal as sf
from micronn.kernels.base import Kernel, Node, register

U64 = np.uint64
OPTIONS = {
    "alternate_one_minus_smoothing": int, "alternate_smoothing": int, "clamping": bool, "min_signal_remaining": int,
    "num_channels": int, "one_minus_smoothing": int, "smoothing": int, "smoothing_bits": int,
    "spectral_subtraction_bits": int,
}


@register
class SignalFilterBankSpectralSubtraction(Kernel):
    op = "SignalFilterBankSpectralSubtraction"
    dtypes = frozenset({"uint32"})
    reads_input_first = True

    def prepare(self, node: Node) -> None:
        (x,), (out, noise) = sf.operands(node, 1, 2)
        o = sf.signal_options(node, OPTIONS)
        n = sf.in_range(node, "num_channels", o["num_channels"], 0, (1 << 31) - 1)
        sf.same_size(node, n, input=sf.expect(node, x, "input", "uint32"),
                     output=sf.expect(node, out, "output", "uint32"),
                     noise_estimate=sf.expect(node, noise, "noise_estimate", "uint32"))
        self.bits = U64(sf.in_range(node, "smoothing_bits", o["smoothing_bits"], 0, 31))
        self.sub_bits = U64(sf.in_range(node, "spectral_subtraction_bits", o["spectral_subtraction_bits"], 0, 63))
        odd = np.arange(n) % 2 == 1
        self.smoothing = np.where(odd, o["alternate_smoothing"] & sf.MASK32, o["smoothing"] & sf.MASK32).astype(U64)
        self.keep = np.where(odd, o["alternate_one_minus_smoothing"] & sf.MASK32,
                             o["one_minus_smoothing"] & sf.MASK32).astype(U64)
        self.min_remaining = U64(o["min_signal_remaining"] & sf.MASK32)
        self.clamping = bool(o["clamping"])
        self.estimate = node.persistent(np.zeros(n, np.uint32))

    def reset(self, node: Node) -> None:
        self.estimate[...] = 0

    def invoke(self, node: Node) -> None:
        x = node.input(0).astype(U64)
        mask = U64(sf.MASK32)
        signal = (x << self.bits) & mask
        estimate = ((signal * self.smoothing + self.estimate * self.keep) >> self.sub_bits) & mask
        used = np.minimum(estimate, signal)
        floor = ((x * self.min_remaining) >> self.sub_bits) & mask
        self.estimate[...] = used if self.clamping else estimate
        node.output(0)[...] = np.maximum((signal - used) >> self.bits, floor)
        node.output(1)[...] = self.estimate
