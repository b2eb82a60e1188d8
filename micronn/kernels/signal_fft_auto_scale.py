"""SignalFftAutoScale (TFLM signal library): shift an int16 frame left as far as its largest magnitude allows.

Input: int16, 1-D. Outputs: the shifted frame (int16, 1-D, same size) and the shift used (int32 scalar), which
SignalFilterBankSquareRoot later undoes. Custom options: none are read (any, or none, are accepted).

TFLM takes the largest magnitude ``m`` of the frame, with each magnitude computed in int16 so that -32768 wraps onto
itself and counts as negative (it never raises the maximum). The shift is ``15 - bit_length(m)`` when ``m > 0`` and 0
otherwise (all zeros, or only -32768s): 1 -> 14, 255 -> 7, 256 -> 6, 16384 and above -> 0. Every sample is shifted
left by it and truncated to int16, so a lone -32768 next to small values wraps (-32768 << 14 gives 0).

TFLM sizes the loop by the output, reading past the input when the output is longer; micronn requires equal sizes.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels import _signal as sf
from micronn.kernels.base import Kernel, Node, register


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
        magnitude = np.abs(x)
        peak = int(np.max(magnitude[magnitude <= 32767], initial=0))  # |-32768| wraps negative in int16
        shift = 15 - peak.bit_length() if peak else 0
        node.output(0)[...] = (x << shift).astype(np.int16)
        node.output(1)[...] = shift
