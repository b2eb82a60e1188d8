"""Value tables for look-up-table compression (exact or clustered) and the DECODE rewrite of a compressed graph."""

from __future__ import annotations

import copy

import numpy as np

from micronn.ir import Lut, Model, Operator, Tensor, pack_indices
from micronn.tflite.reader import DECODE_OP

MAX_BITS = 7
HEADER = 16  # DECODE's ancillary header: type, version, 2 reserved, LUT version, axis|bits, stride, 9 reserved
PER_TENSOR_AXIS = 0xF  # the axis field newer TFLM tools write for one table (the wheel's runtime does not read it)


def table_axis(t: Tensor) -> tuple[int | None, bool]:
    """(channel axis or None, usable): TFLM keeps one table per channel of a per-channel quantized tensor, along its
    first axis when the quantized dimension is 0, else its last; other quantized dimensions cannot be compressed."""
    q = t.quant
    if q is None or len(q.scale) <= 1:
        return None, True
    rank = len(t.shape)
    axis = 0 if q.axis == 0 or rank == 1 else rank - 1
    return axis, q.axis == axis and t.shape[axis] == len(q.scale)


def _rows(data: np.ndarray, axis: int | None) -> np.ndarray:
    """The values of each table's channel, one row per channel."""
    return data.reshape(1, -1) if axis is None else np.moveaxis(data, axis, 0).reshape(data.shape[axis], -1)


def _unrows(rows: np.ndarray, shape: tuple[int, ...], axis: int | None) -> np.ndarray:
    if axis is None:
        return rows.reshape(shape)
    moved = (shape[axis],) + shape[:axis] + shape[axis + 1:]
    return np.moveaxis(rows.reshape(moved), 0, axis)


def _distinct(row: np.ndarray) -> np.ndarray:
    """Distinct values by their bytes, so -0.0 and NaN payloads stay apart from what they compare equal to."""
    words = np.dtype(f"u{row.dtype.itemsize}")
    return np.unique(np.ascontiguousarray(row).view(words)).view(row.dtype)


def tables_for(data: np.ndarray, axis: int | None, stride: int | None = None) -> tuple[np.ndarray, int]:
    """(tables, widest table) holding each channel's distinct values, zero-padded to ``stride`` (or the widest)."""
    rows = [_distinct(r) for r in _rows(data, axis)]
    widest = max(len(r) for r in rows)
    tables = np.zeros((len(rows), max(stride or widest, widest)), data.dtype)
    for k, r in enumerate(rows):
        tables[k, :len(r)] = r
    return tables, widest


def kmeans_1d(values: np.ndarray, counts: np.ndarray, k: int, iterations: int = 40) -> np.ndarray:
    """Up to ``k`` sorted centres minimising the squared error of ``values`` weighted by ``counts`` (Lloyd's
    algorithm from weighted quantiles; ``values`` sorted and distinct)."""
    cum = np.cumsum(counts) / counts.sum()
    centres = np.unique(values[np.searchsorted(cum, (np.arange(k) + 0.5) / k).clip(0, len(values) - 1)])
    for _ in range(iterations):
        edges = (centres[1:] + centres[:-1]) / 2
        cluster = np.searchsorted(edges, values)
        weight = np.bincount(cluster, counts, len(centres))
        sums = np.bincount(cluster, counts * values, len(centres))
        keep = weight > 0
        new = sums[keep] / weight[keep]
        if len(new) == len(centres) and np.allclose(new, centres, rtol=0, atol=1e-9):
            break
        centres = new
    return centres


def _cluster(row: np.ndarray, k: int) -> np.ndarray:
    """``row`` with every value replaced by its nearest of at most ``k`` levels (integers stay integers)."""
    values, counts = np.unique(row.astype(np.float64), return_counts=True)
    if len(values) <= k:
        return row.copy()
    centres = kmeans_1d(values, counts.astype(np.float64), k)
    if row.dtype.kind in "iu":
        info = np.iinfo(row.dtype)
        centres = np.unique(np.clip(np.round(centres), info.min, info.max))
    edges = (centres[1:] + centres[:-1]) / 2
    return centres[np.searchsorted(edges, row.astype(np.float64))].astype(row.dtype)


def build_lut(t: Tensor, bits: int | None, tolerance: float) -> tuple[Lut, np.ndarray, float] | None:
    """(table, the values it encodes, largest value change) for constant ``t``, or None when it cannot be done
    within ``bits`` (None: the narrowest lossless width up to 7) and ``tolerance``."""
    axis, usable = table_axis(t)
    data = np.asarray(t.data)
    if not usable or data.dtype != t.dtype:
        return None
    limit = 2 ** (bits or MAX_BITS)
    tables, widest = tables_for(data, axis)
    values, change = data, 0.0
    if widest > limit:
        if bits is None or tolerance <= 0 or not np.all(np.isfinite(data)):
            return None
        rows = np.stack([_cluster(r, limit) for r in _rows(data, axis)])
        values = _unrows(rows, t.shape, axis)
        change = float(np.max(np.abs(values.astype(np.float64) - data.astype(np.float64)), initial=0.0))
        if change > tolerance:
            return None
        tables, widest = tables_for(values, axis)
    width = max(1, (widest - 1).bit_length())
    values = np.ascontiguousarray(values)
    values.flags.writeable = False
    tables.flags.writeable = False
    return Lut(tables, width, axis), values, change


def ancillary(lut: Lut, dtype: np.dtype) -> bytes:
    """DECODE's ancillary data for ``lut``: the LUT header, then the value tables."""
    header = bytearray(HEADER)
    header[1] = 1  # header version
    header[4] = 1  # LUT version
    header[5] = ((PER_TENSOR_AXIS if lut.axis is None else lut.axis) << 4) | lut.bits
    header[6] = lut.values.shape[1]
    return bytes(header) + np.asarray(lut.values, dtype.newbyteorder("<")).tobytes()


def decode_inputs(model: Model) -> None:
    """Rewrite ``model`` in place so DECODE operators decode its LUT-compressed tensors: each compressed constant
    becomes its encoded bytes, and a DECODE placed right before each reader decodes all the compressed tensors that
    reader takes into fresh tensors (their memory is planned like any activation's, alive for that one operator)."""
    for sg in model.subgraphs:
        compressed = {t.index: t for t in sg.tensors if t.lut is not None}
        if not compressed:
            continue
        tensors = list(sg.tensors)
        ancillaries: dict[bytes, int] = {}

        def add(t: Tensor, tensors: list[Tensor] = tensors) -> int:
            t.index = len(tensors)
            tensors.append(t)
            return t.index

        ops: list[Operator] = []
        for op in sg.operators:
            reads = [i for i in dict.fromkeys(op.inputs) if i in compressed]
            if reads:
                ins, outs, renamed = [], [], {}
                for i in reads:
                    t = compressed[i]
                    blob = ancillary(t.lut, t.dtype)
                    if blob not in ancillaries:
                        data = np.frombuffer(blob, np.uint8)
                        ancillaries[blob] = add(Tensor(f"{t.name}_ancillary", (len(blob),), np.dtype(np.uint8),
                                                       data=data))
                    decoded = copy.copy(t)
                    decoded.name, decoded.data, decoded.lut, decoded.buffer = f"{t.name}_decoded", None, None, 0
                    renamed[i] = add(decoded)
                    ins += [i, ancillaries[blob]]
                    outs.append(renamed[i])
                ops.append(Operator(DECODE_OP, ins, outs, custom=True))
            op = copy.copy(op)  # the caller's model keeps its operators
            op.inputs = [renamed.get(i, i) for i in op.inputs] if reads else list(op.inputs)
            ops.append(op)
        for i, t in compressed.items():  # the constant itself now holds the packed indices
            packed = np.frombuffer(pack_indices(t.lut.indices(np.asarray(t.data)), t.lut.bits), np.uint8)
            tensors[i] = Tensor(t.name, (len(packed),), np.dtype(np.uint8), data=packed, buffer=t.buffer, index=i)
        for k, op in enumerate(ops):
            op.index = k
        sg.tensors, sg.operators = tensors, ops
