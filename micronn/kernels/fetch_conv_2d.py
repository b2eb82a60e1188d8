"""FetchConv2D (TinySeg custom op): a CONV_2D whose input is a channel concatenation of arena tensors and spilled
tensors, computed without ever holding the concatenation (TinySeg's fused fetching).

Inputs: the arena parts of the concatenation (any number), then the filter and the bias (-1 when omitted), as
for CONV_2D. Output: the convolution. Custom options (a FlexBuffer map):

- ``victims``, ``positions``, ``sizes``, ``drop``: the spilled parts, as for Fetch (``axis`` must be the channel
  axis, 3 or -1, the only concatenation a convolution can read part by part);
- ``padding`` (0 SAME, 1 VALID), ``stride_h``, ``stride_w``, ``dilation_h_factor``, ``dilation_w_factor``,
  ``fused_activation_function``: CONV_2D's options (``Conv2DOptions``);
- ``scale``, ``zero_point``: the quantization of the concatenated input (absent for float32), which no tensor
  carries when every part is spilled.

The output is computed one output row at a time. The spilled channels of the input rows that row reads are kept in
a ring of ``(filter_h - 1) * dilation_h + 1`` rows in an arena scratch buffer: each input row is read from
storage once, when the window first reaches it. The arithmetic is the CONV_2D kernel's own (same prepared
multipliers, packed weights and output stage) applied to a band of rows, so the bytes equal CONCATENATION +
CONV_2D, which equal TFLM's.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from micronn.ir import Quantization, Tensor
from micronn.kernels._conv_util import PaddedInput, Window
from micronn.kernels._custom_options import read_options
from micronn.kernels.base import Node, register
from micronn.kernels.conv_2d import Conv2D
from micronn.kernels.fetch import Parts
from micronn.tflite import schema

CONV_OPTIONS = ("padding", "stride_h", "stride_w", "dilation_h_factor", "dilation_w_factor",
                "fused_activation_function")


class _AsConv(Node):
    """The FetchConv2D node seen as the CONV_2D it replaces: input 0 is the concatenation (or, in invoke, one band
    of it), inputs 1 and 2 the filter and bias."""

    def __init__(self, node: Node, concat: Tensor, options: Any):
        self.node, self.index = node, node.index
        self.op = replace(node.op, op="CONV_2D", options=options, custom=False)
        filt, bias = node.inputs[-2], node.inputs[-1]
        self.inputs, self.outputs = [concat, filt, bias], node.outputs
        self.band: np.ndarray | None = None
        self.out: np.ndarray | None = None

    def input(self, i: int) -> np.ndarray:
        return self.band if i == 0 else self.node.input(len(self.node.inputs) - 3 + i)

    def output(self, i: int) -> np.ndarray:
        return self.out

    def persistent(self, array: np.ndarray, constant: bool = False) -> np.ndarray:
        return self.node.persistent(array, constant)

    def fail(self, msg: str) -> Any:
        return self.node.fail(msg)


@register
class FetchConv2D(Conv2D):
    op = "FetchConv2D"
    in_tflm = False
    reads_input_first = False  # it streams: the output may not be placed over its arena inputs unplanned

    def dtype_key(self, node: Node) -> str:
        return node.outputs[0].dtype.name if node.outputs else "-"

    def prepare(self, node: Node) -> None:
        if len(node.inputs) < 2 or len(node.outputs) != 1 or node.inputs[-2] is None:
            raise node.fail("needs the arena parts, a filter, a bias (or -1) and one output")
        ram, out, filt = node.inputs[:-2], node.outputs[0], node.inputs[-2]
        if any(t is None for t in ram):
            raise node.fail("arena parts cannot be omitted")
        opts = read_options(node, {"victims": list, "positions": list, "sizes": list, "axis": int, "drop": int,
                                   "scale": float, "zero_point": int, "height": int, "width": int,
                                   **dict.fromkeys(CONV_OPTIONS, int)},
                            {"axis": -1, "drop": 1, "scale": 0.0, "zero_point": 0, "height": 0, "width": 0,
                             "dilation_h_factor": 1,
                             "dilation_w_factor": 1, "fused_activation_function": 0})
        if len(out.shape) != 4 or len(filt.shape) != 4:
            raise node.fail("output and filter must be 4-D")
        dtype = ram[0].dtype if ram else out.dtype
        height, width = (ram[0].shape[1], ram[0].shape[2]) if ram else (opts["height"], opts["width"])
        if min(height, width) < 1:
            raise node.fail("with every part spilled, the options must give the input's height and width")
        if opts["axis"] not in (3, -1):
            raise node.fail(f"concatenates along axis {opts['axis']}; only the channel axis (3) can be fused")
        channels = sum(t.shape[3] for t in ram) + sum(opts["sizes"])
        shape = (out.shape[0], height, width, channels)
        self.parts = Parts(node, list(ram), shape, opts)
        self.drop = bool(opts["drop"])
        quant = None
        if opts["scale"]:
            quant = Quantization(np.array([opts["scale"]], np.float32), np.array([opts["zero_point"]], np.int64))
        for i, t in enumerate(ram):
            if t.dtype != dtype or (t.quant is not None and quant is not None and t.quant.scale.size == 1
                                    and (np.float32(t.scale), t.zero_point) != (quant.scale[0], opts["zero_point"])):
                raise node.fail(f"arena part {i} ({t.dtype.name}, scale {t.scale}, zero point {t.zero_point}) does "
                                "not match the concatenated input")
        self.concat = Tensor("fetched concatenation", shape, dtype, quant)
        conv_opts = schema.options("CONV_2D", **{k: opts[k] for k in CONV_OPTIONS})
        self.view = _AsConv(node, self.concat, conv_opts)
        super().prepare(self.view)
        self.full_win, self.full_pad = self.win, self.pad
        w = self.full_win
        self.span = (w.filter_h - 1) * w.dilation_h + 1  # input rows one output row reads
        self.ring = min(self.span, w.in_h)
        self.scratch = node.request_scratch(self.ring * w.in_w * sum(opts["sizes"]) * dtype.itemsize)
        self.bands: dict[tuple[int, int, int], tuple[Window, PaddedInput | None]] = {}

    def _band(self, o0: int, o1: int) -> tuple[Window, PaddedInput | None, int, int]:
        """Window and padded buffer for output rows [o0, o1), and the input rows [lo, hi) they read."""
        win, lo, hi = self.full_win.band(o0, o1)
        key = (hi - lo, win.pad_top, win.pad_bottom)
        if key not in self.bands:
            pad = None
            if win.padded and self.full_pad is not None:
                pad = PaddedInput(win, 1, self.concat.shape[3], self.full_pad.buf.dtype, 0)
            self.bands[key] = (win, pad)
        return (*self.bands[key], lo, hi)

    def invoke(self, node: Node) -> None:
        p, w, dtype = self.parts, self.full_win, self.concat.dtype
        out, width = node.output(0), w.in_w
        scratch, rings, at = node.scratch(self.scratch, dtype), {}, 0
        for kind, key, extent in p.order:  # one ring of input rows per spilled part, back to back in the scratch
            if kind == "victim":
                rings[key] = scratch[at:at + self.ring * width * extent].reshape(self.ring, width, extent)
                at += self.ring * width * extent
        for b in range(self.concat.shape[0]):
            loaded: dict[int, int] = {}  # input row -> ring slot
            for o in range(w.out_h):
                win, pad, lo, hi = self._band(o, o + 1)
                for r in range(lo, hi):  # read the rows this output row is the first to reach
                    if r not in loaded:
                        loaded = {k: v for k, v in loaded.items() if v != r % self.ring}
                        loaded[r] = r % self.ring
                        for key, ring in rings.items():
                            row = ring[r % self.ring]
                            node.storage.get(key, (b * w.in_h + r) * row.nbytes, row.reshape(-1).view(np.uint8))
                band = np.empty((1, hi - lo, width, self.concat.shape[3]), dtype)
                col = 0
                for kind, key, extent in p.order:
                    src = node.input(key)[b, lo:hi] if kind == "ram" else rings[key][[loaded[r] for r in range(lo, hi)]]
                    band[0, :, :, col:col + extent] = src
                    col += extent
                self.win, self.pad = win, pad
                self.view.band, self.view.out = band, out[b:b + 1, o:o + 1]
                super().invoke(self.view)
        self.win, self.pad = self.full_win, self.full_pad
        if self.drop:
            for key in rings:
                node.storage.drop(key)
