"""SignalFftAutoScale (TFLM signal library): shift an int16 frame left as far as its largest magnitude allows.

Input: int16, 1-D. Outputs: the shifted frame (int16, 1-D, same size) and the shift used (int32 scalar), which
SignalFilterBankSquareRoot later undoes. Custom options: none are read (any, or none, are accepted).

TFLM keeps a running int16 peak ``m``, from 0: a sample above ``m`` becomes it, else a sample whose negation is
above ``m`` makes ``m`` that negation, cast to int16. So -32768, whose negation 32768 beats every peak, sets ``m`` to
-32768 (the cast wraps): everything before the last -32768 is forgotten, and the samples after it start again from
there (a negative ``m`` is replaced by the next sample or its negation). The shift is ``15 - bit_length(m)`` when
``m > 0`` and 0 otherwise: 1 -> 14, 255 -> 7, 256 -> 6, 16384 and above -> 0; a frame ending in -32768, or all zeros,
gives 0. Every sample is shifted left by it and truncated to int16, so a lone -32768 next to small values wraps
(-32768 << 14 gives 0).

TFLM sizes the loop by the output, reading past the input when the output is longer; micronn requires equal sizes.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels import _signal as sf
from micronn.kernels.base import Kernel, Node, register


def running_peak(x: np.ndarray) -> int:
    """TFLM's running int16 peak of ``x`` (int32 values of int16 samples), without a loop over a frame with no
    -32768: then the peak only ever grows, to the largest magnitude."""
    wraps = np.flatnonzero(x == -32768)
    if not wraps.size:
        return int(np.max(np.abs(x), initial=0))
    rest, peak, k = x[wraps[-1] + 1:], -32768, 0
    while peak < 0 and k < len(rest):  # from the last -32768, until the peak is back at 0 or above
        v = int(rest[k])
        peak, k = (v if v > peak else -v), k + 1
    return max(peak, int(np.max(np.abs(rest[k:]), initial=0))) if peak >= 0 else peak


@register
class SignalFftAutoScale(Kernel):
    op = "SignalFftAutoScale"
    dtypes = frozenset({"int16"})
    reads_input_first = True

    def prepare(self, node: Node) -> None:
        (x,), (out, scale) = sf.operands(node, 1, 2)
        n = sf.expect(node, x, "input", "int16")
        sf.same_size(node, n, output=sf.expect(node, out, "output", "int16"))
        sf.expect(node, scale, "scale_bit output", "int32", rank=0)

    def invoke(self, node: Node) -> None:
        x = node.input(0).astype(np.int32)
        peak = running_peak(x)
        shift = 15 - peak.bit_length() if peak > 0 else 0
        node.output(0)[...] = (x << shift).astype(np.int16)
        node.output(1)[...] = shift
