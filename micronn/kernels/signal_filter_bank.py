"""SignalFilterBank (TFLM signal library): triangular mel filters over a uint32 energy spectrum, uint64 sums.

Inputs, all 1-D: ``input`` (uint32 energies), ``weights`` and ``unweights`` (int16), ``channel_frequency_starts``,
``channel_weight_starts`` and ``channel_widths`` (int16, ``num_channels + 1`` entries). Output: uint64,
``num_channels`` entries. Custom option ``num_channels`` (int).

Each of the ``num_channels + 1`` bands ``c`` covers ``channel_widths[c]`` bins (none when the width is <= 0) from
``channel_frequency_starts[c]``, using the weights from ``channel_weight_starts[c]``. The band's rising edge is the sum
of ``weights * input`` over its bins, its falling edge the same sum with ``unweights``; channel ``c`` (0-based) outputs
the rising edge of band ``c + 1`` plus the falling edge of band ``c`` (band 0 only feeds channel 0, and the last band's
falling edge is dropped). All arithmetic is uint64 and wraps: an int16 weight is sign-extended to 64 bits first, so a
negative weight acts as ``2**64 + w``.

TFLM checks only types and ranks. micronn also needs the three channel tables constant (it checks them in prepare, as
TFLM never does), at least ``num_channels + 1`` entries long, every band inside ``input``, ``weights`` and
``unweights``, and an output of exactly ``num_channels`` entries: otherwise TFLM reads past a buffer, writes past the
output or leaves part of it unwritten.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels import _signal as sf
from micronn.kernels.base import Kernel, Node, register

TABLES = ("channel_frequency_starts", "channel_weight_starts", "channel_widths")


@register
class SignalFilterBank(Kernel):
    op = "SignalFilterBank"
    dtypes = frozenset({"uint32"})
    reads_input_first = True

    def prepare(self, node: Node) -> None:
        (x, w, u, *tables), (out,) = sf.operands(node, 6, 1)
        n_in = sf.expect(node, x, "input", "uint32")
        n_w = min(sf.expect(node, w, "weights", "int16"), sf.expect(node, u, "unweights", "int16"))
        for t, what in zip(tables, TABLES, strict=True):
            sf.expect(node, t, what, "int16")
        nch = sf.signal_options(node, {"num_channels": int})["num_channels"]
        sf.in_range(node, "num_channels", nch, 0, (1 << 31) - 2)
        sf.same_size(node, nch, output=sf.expect(node, out, "output", "uint64"))
        freq, start, width = (sf.constant(node, t, what).astype(np.int64) for t, what in zip(tables, TABLES))
        if min(len(freq), len(start), len(width)) < nch + 1:
            raise node.fail(f"the channel tables need num_channels + 1 = {nch + 1} entries, got "
                            f"{len(freq)}, {len(start)} and {len(width)}")
        self.bands: list[tuple[int, int, int, int]] = []  # (band, input start, weight start, width), width > 0
        for c in range(nch + 1):
            f, s, n = int(freq[c]), int(start[c]), int(width[c])
            if n <= 0:
                continue
            if f < 0 or f + n > n_in:
                raise node.fail(f"band {c} reads input bins [{f}, {f + n}) of {n_in}")
            if s < 0 or s + n > n_w:
                raise node.fail(f"band {c} reads weights [{s}, {s + n}) of {n_w}")
            self.bands.append((c, f, s, n))
        self.nch = nch

    def invoke(self, node: Node) -> None:
        x = node.input(0).astype(np.uint64)
        w, u = (node.input(i).astype(np.int64).astype(np.uint64) for i in (1, 2))
        rising = np.zeros(self.nch + 1, np.uint64)
        falling = np.zeros(self.nch + 1, np.uint64)
        for c, f, s, n in self.bands:
            bins = x[f:f + n]
            rising[c] = (w[s:s + n] * bins).sum(dtype=np.uint64)
            falling[c] = (u[s:s + n] * bins).sum(dtype=np.uint64)
        node.output(0)[...] = rising[1:] + falling[:-1]
