"""SignalPCAN (TFLM signal library): per-channel automatic gain control (PCAN) driven by the noise estimate.

Inputs: ``input`` and ``noise_estimate`` (uint32, 1-D, same size) and ``gain_lut`` (int16, 1-D, at least 125 entries:
three per possible bit length of a uint32, offset by six). Output: uint32, 1-D, same size. Custom option ``snr_shift``.

Per channel TFLM computes a gain from the noise estimate ``e`` with a piecewise quadratic table:

* ``e <= 2``: ``gain_lut[e]``;
* otherwise, with ``b = bit_length(e)`` and ``k = 4 * b - 6``, ``f`` the 10 bits of ``e`` below its leading one (moved
  to bits 0..9), the int32 evaluation ``((((lut[k+2] * f) >> 5) + lut[k+1] * 32) * f + 2**14) >> 15`` plus
  ``lut[k]``, truncated to int16 (arithmetic shifts, so floors; no int32 overflow is possible).

The int16 gain is sign-extended to uint32, multiplied by the input in uint64, shifted right by ``snr_shift`` and
truncated to uint32: that is the SNR ``s``. The output is ``(s * s) >> 20`` when ``s < 8192`` and ``(s >> 6) - 64``
otherwise. PCAN keeps no state. ``snr_shift`` must be in [0, 63] (a wider uint64 shift is undefined in C).
"""

from __future__ import annotations

import numpy as np

from micronn.kernels import _signal as sf
from micronn.kernels.base import Kernel, Node, register

U64 = np.uint64
LUT_SIZE = 4 * 32 - 6 + 3  # entries read for the largest uint32 (bit length 32)


def gain(noise: np.ndarray, lut: np.ndarray) -> np.ndarray:
    """TFLM's int16 gain for every noise estimate, as int64."""
    e = noise.astype(np.int64)
    b = np.frexp(e.astype(np.float64))[1].astype(np.int64)  # bit length (exact: e < 2**32)
    k = np.maximum(4 * b - 6, 0)
    f = np.where(b < 11, e << np.maximum(11 - b, 0), e >> np.maximum(b - 11, 0)) & 0x3FF
    lut = lut.astype(np.int64)
    r = ((((lut[k + 2] * f) >> 5) + lut[k + 1] * 32) * f + (1 << 14)) >> 15
    wide = ((r + lut[k] + 32768) & 0xFFFF) - 32768
    return np.where(e <= 2, lut[np.minimum(e, 2)], wide)


@register
class SignalPCAN(Kernel):
    op = "SignalPCAN"
    dtypes = frozenset({"uint32"})
    reads_input_first = True

    def prepare(self, node: Node) -> None:
        (x, noise, lut), (out,) = sf.operands(node, 3, 1)
        n = sf.expect(node, x, "input", "uint32")
        sf.same_size(node, n, noise_estimate=sf.expect(node, noise, "noise_estimate", "uint32"),
                     output=sf.expect(node, out, "output", "uint32"))
        size = sf.expect(node, lut, "gain_lut", "int16")
        if size < LUT_SIZE:
            raise node.fail(f"gain_lut has {size} entries, needs at least {LUT_SIZE}")
        self.shift = U64(sf.in_range(node, "snr_shift", sf.signal_options(node, {"snr_shift": int})["snr_shift"],
                                     0, 63))

    def invoke(self, node: Node) -> None:
        g = gain(node.input(1), node.input(2)).astype(np.uint64)  # sign-extends: int16 -> uint32 -> uint64
        snr = ((node.input(0).astype(U64) * (g & U64(sf.MASK32))) >> self.shift) & U64(sf.MASK32)
        node.output(0)[...] = np.where(snr < 8192, (snr * snr) >> U64(20), (snr >> U64(6)) - U64(64))
