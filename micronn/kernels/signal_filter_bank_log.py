"""SignalFilterBankLog (TFLM signal library): scaled natural log of uint32 filter-bank channels, as int16.

Input: uint32, 1-D. Output: int16, 1-D, same size. Custom options ``input_correction_bits`` and ``output_scale``.

Per channel TFLM shifts the input left by ``input_correction_bits`` (truncated to uint32); values 0 and 1 give 0.
Otherwise it forms log2 in 16.16 fixed point: the integer part is the position ``p`` of the leading one; the 16-bit
fraction ``t`` is the bits below it (shifted up, or down with truncation, to 16 bits) corrected by a 129-entry
table of ``log2(1 + i/128) - i/128`` in units of 2**-16 (rounded to nearest; micronn computes it, and matches the wheel
on every segment): with ``j = t >> 9``, ``t + c[j] + (((c[j+1] - c[j]) * (t - 512 j)) >> 16)`` (floor shift). Then

* ``ln = (45426 * log2 + 2**15) >> 16`` (45426 is ln 2 in 0.16 fixed point; computed in 64 bits),
* ``out = ((ln * output_scale + 2**15) mod 2**32) >> 16``: the product and the rounding term wrap in uint32, which the
  wheel shows once ``ln * output_scale`` passes 2**32 (an ``output_scale`` of 32768 already does);
* saturated to 32767.

``output_scale`` is uint32 in TFLM (the low 32 bits of any int are used, -1 is 2**32 - 1); ``input_correction_bits``
must be in [0, 31] (wider shifts are undefined in C). Sizes must match (TFLM loops over the output).
"""

from __future__ import annotations

import numpy as np

from micronn.kernels import _signal as sf
from micronn.kernels.base import Kernel, Node, register

# log2(1 + i/128) - i/128 at the 129 segment ends, in units of 2**-16
CORRECTION = np.round((np.log2(1 + np.arange(129) / 128) - np.arange(129) / 128) * 65536).astype(np.int64)
LN2_Q16 = 45426


def log_q16(v: np.ndarray) -> np.ndarray:
    """log2 of integers >= 2 (int64) in 16.16 fixed point, as TFLM approximates it."""
    p = np.frexp(v.astype(np.float64))[1].astype(np.int64) - 1  # exact: v < 2**32
    t = v - (np.int64(1) << p)
    t = np.where(p < 16, t << np.maximum(16 - p, 0), t >> np.maximum(p - 16, 0))
    j = t >> 9
    c0, c1 = CORRECTION[j], CORRECTION[j + 1]
    return (p << 16) + t + c0 + (((c1 - c0) * (t - (j << 9))) >> 16)


@register
class SignalFilterBankLog(Kernel):
    op = "SignalFilterBankLog"
    dtypes = frozenset({"uint32"})
    reads_input_first = True

    def prepare(self, node: Node) -> None:
        (x,), (out,) = sf.operands(node, 1, 1)
        n = sf.expect(node, x, "input", "uint32")
        sf.same_size(node, n, output=sf.expect(node, out, "output", "int16"))
        o = sf.signal_options(node, {"input_correction_bits": int, "output_scale": int})
        self.bits = sf.in_range(node, "input_correction_bits", o["input_correction_bits"], 0, 31)
        self.scale = o["output_scale"] & sf.MASK32

    def invoke(self, node: Node) -> None:
        v = ((node.input(0).astype(np.uint64) << np.uint64(self.bits)) & np.uint64(sf.MASK32)).astype(np.int64)
        live = v > 1
        ln = (LN2_Q16 * log_q16(np.where(live, v, 2)) + (1 << 15)) >> 16
        scaled = (((ln * self.scale) & sf.MASK32) + (1 << 15)) & sf.MASK32  # below 2**53: exact in int64
        node.output(0)[...] = np.where(live, np.minimum(scaled >> 16, 32767), 0)
