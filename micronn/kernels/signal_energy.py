"""SignalEnergy (TFLM signal library): the energy of a range of bins of an int16 complex spectrum.

Input: int16, 1-D, interleaved (real, imaginary) pairs as SignalRfft writes them. Output: uint32, 1-D. Custom options
``start_index`` and ``end_index`` (ints): the bins ``[start_index, end_index)`` to compute.

For each bin ``i`` in the range TFLM writes ``real**2 + imag**2``, squares formed in int32 and summed as uint32 (exact:
the largest, two -32768s, is 2**31). It writes nothing else: the other output elements keep whatever the arena held
(micro_speech's front end slices them away). micronn writes zeros there, so that its output is always defined; it
equals the wheel's wherever the wheel's arena held zeros. An empty range (``start_index >= end_index``) writes nothing
at all in TFLM, zeros in micronn.

Refused because TFLM would read or write out of bounds: a non-empty range with ``start_index < 0``, ``end_index``
past the output, or ``2 * end_index`` past the input.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels import _signal as sf
from micronn.kernels.base import Kernel, Node, register

INT32 = (-(1 << 31), (1 << 31) - 1)


@register
class SignalEnergy(Kernel):
    op = "SignalEnergy"
    dtypes = frozenset({"int16"})
    reads_input_first = True

    def prepare(self, node: Node) -> None:
        (x,), (out,) = sf.operands(node, 1, 1)
        n_in = sf.expect(node, x, "input", "int16")
        n_out = sf.expect(node, out, "output", "uint32")
        opts = sf.signal_options(node, {"end_index": int, "start_index": int})
        self.start = sf.in_range(node, "start_index", opts["start_index"], *INT32)
        self.end = sf.in_range(node, "end_index", opts["end_index"], *INT32)
        if self.start < self.end:
            sf.in_range(node, "start_index", self.start, 0, n_out)
            sf.in_range(node, "end_index", self.end, 0, min(n_out, n_in // 2))

    def invoke(self, node: Node) -> None:
        out = node.output(0)
        if self.start >= self.end:
            out[...] = 0
            return
        pairs = node.input(0)[2 * self.start:2 * self.end].reshape(-1, 2).astype(np.int64)
        energy = (pairs * pairs).sum(axis=1).astype(np.uint32)
        out[...] = 0
        out[self.start:self.end] = energy
