"""TFLM_DECODE: TFLM's DECODE custom operator, which decodes compressed constants into ordinary tensors.

Inputs come in pairs, (encoded bytes, ancillary data), one pair per output. The ancillary data opens with a
16-byte header: byte 0 the decode type, byte 1 the header version (1); for the look-up-table type (0) byte 4 is
the LUT version (1), the low 3 bits of byte 5 the index width and byte 6 the number of values per value table,
and the tables follow the header. As in TFLM (checked against the wheel), the output tensor decides the tables:
one per channel when it is quantized per channel (along its first axis when the quantized dimension is 0, else
its last), one otherwise; the axis bits of byte 5 are not read. The decoded values are the same at every invoke,
so they are computed once in prepare and copied into the output (which the arena plans like any tensor).
"""

from __future__ import annotations

import numpy as np

from micronn.ir import LUT_DTYPES, channel_of, unpack_indices
from micronn.kernels.base import Kernel, Node, register

HEADER_BYTES = 16
LUT, HUFFMAN, PRUNING = 0, 1, 2


def lut_axis(shape: tuple[int, ...], quant: object) -> tuple[int | None, int]:
    """(channel axis or None, number of tables) TFLM uses for a tensor of ``shape`` quantized as ``quant``."""
    scales = len(getattr(quant, "scale", ())) if quant is not None else 0
    if scales <= 1:
        return None, 1
    return (0 if quant.axis == 0 or len(shape) == 1 else len(shape) - 1), scales


@register
class Decode(Kernel):
    """TFLM_DECODE with look-up-table decoding (TFLM's Huffman and pruning types are not implemented)."""

    op = "TFLM_DECODE"
    dtypes = frozenset(d.name for d in LUT_DTYPES)  # the decoded types: the output's type names the variant

    def dtype_key(self, node: Node) -> str:
        return node.outputs[0].dtype.name if node.outputs else "none"

    def prepare(self, node: Node) -> None:
        if not node.outputs or len(node.inputs) != 2 * len(node.outputs):
            raise node.fail(f"needs an (encoded, ancillary) input pair per output, got {len(node.inputs)} inputs "
                            f"for {len(node.outputs)} outputs")
        self.values = [self._decode(node, k) for k in range(len(node.outputs))]

    def _decode(self, node: Node, k: int) -> np.ndarray:
        enc, anc, out = node.inputs[2 * k], node.inputs[2 * k + 1], node.outputs[k]
        what = f"output {k} ({out.name!r})"
        if enc is None or anc is None or not enc.is_constant or not anc.is_constant:
            raise node.fail(f"{what}: encoded and ancillary inputs must be constants")
        if enc.dtype != np.uint8 or anc.dtype != np.uint8:
            raise node.fail(f"{what}: encoded and ancillary inputs must be uint8, got {enc.dtype.name} and "
                            f"{anc.dtype.name}")
        header = np.asarray(node.input(2 * k + 1)).reshape(-1)
        if header.size < HEADER_BYTES:
            raise node.fail(f"{what}: ancillary data of {header.size} bytes lacks the {HEADER_BYTES}-byte header")
        kind, version = int(header[0]), int(header[1])
        if version != 1:
            raise node.fail(f"{what}: decode header version {version}, TFLM reads version 1")
        if kind in (HUFFMAN, PRUNING):
            raise node.fail(f"{what}: decode type {kind} ({'Huffman' if kind == HUFFMAN else 'pruning'}) is not "
                            "implemented in micronn")
        if kind != LUT:
            raise node.fail(f"{what}: unsupported decode type {kind}")
        if int(header[4]) != 1:
            raise node.fail(f"{what}: LUT version {int(header[4])}, TFLM reads version 1")
        bits, stride = int(header[5]) & 7, int(header[6])
        if out.dtype not in LUT_DTYPES:
            raise node.fail(f"{what}: cannot decode into {out.dtype.name}")
        if not bits or not stride:
            raise node.fail(f"{what}: index width {bits} and table stride {stride} must both be positive")
        axis, channels = lut_axis(out.shape, out.quant)
        if axis is not None and out.shape[axis] != channels:
            raise node.fail(f"{what}: {channels} per-channel scales do not match axis {axis} of {list(out.shape)}")
        size = out.dtype.itemsize
        need = HEADER_BYTES + channels * stride * size
        if header.size < need:
            raise node.fail(f"{what}: {channels} value table(s) of {stride} {out.dtype.name} need {need} bytes of "
                            f"ancillary data, it holds {header.size}")
        tables = header[HEADER_BYTES:need].view(out.dtype.newbyteorder("<")).astype(out.dtype).reshape(channels,
                                                                                                         stride)
        count = int(np.prod(out.shape, dtype=np.int64))
        raw = np.asarray(node.input(2 * k)).reshape(-1)
        if raw.size * 8 < count * bits:
            raise node.fail(f"{what}: {count} indices of {bits} bits need {(count * bits + 7) // 8} encoded bytes, "
                            f"got {raw.size}")
        idx = unpack_indices(raw, bits, count)
        bad = np.flatnonzero(idx >= stride)
        if bad.size:
            raise node.fail(f"{what}: element {int(bad[0])} has index {int(idx[bad[0]])} past its table of "
                            f"{stride} values")
        return tables[channel_of(out.shape, axis), idx].reshape(out.shape)

    def invoke(self, node: Node) -> None:
        for k, values in enumerate(self.values):
            node.output(k)[...] = values
