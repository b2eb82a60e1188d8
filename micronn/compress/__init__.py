"""Shrink a model's flash with TFLM's look-up-table weight compression.

Each eligible constant is rewritten as ``bits``-wide indices into a small table of values: its own distinct values
when they fit (lossless), else ``2**bits`` levels found by 1-D k-means (lossy). TFLM decides the table layout from
the quantization, so per-channel quantized tensors get one table per channel and the others one table::

    data, report = micronn.compress.compress("model.tflite", bits=4)
    print(report)          # per tensor: bytes before/after, lossless or not; lossy ones: the output change

``format="metadata"`` keeps the graph and describes the tables in ``COMPRESSION_METADATA`` (the kernels that
decompress allocate scratch for it); ``format="decode"`` inserts TFLM's DECODE operator before each reader instead.
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field

import numpy as np

from micronn import progress
from micronn.compress.lut import build_lut, decode_inputs
from micronn.errors import MicronnError, ModelError
from micronn.interpreter import DECOMPRESSED_INPUTS, Interpreter
from micronn.ir import LUT_DTYPES, Model, Subgraph, Tensor, random_inputs
from micronn.planners.base import OFFLINE_KEY
from micronn.tflite.reader import COMPRESSION_KEY, DECODE_OP, read
from micronn.tflite.writer import write

__all__ = ["CompressionReport", "TensorReport", "compress"]

FORMATS = ("metadata", "decode")
LOSSY_DTYPES = frozenset(np.dtype(d) for d in (np.float32, np.int8, np.int16))  # never cluster biases


@dataclass
class TensorReport:
    """What compression did to one tensor. ``bytes_after`` counts the packed indices plus the value tables."""

    subgraph: int
    tensor: int
    name: str
    bits: int
    tables: int
    bytes_before: int
    bytes_after: int
    lossless: bool
    max_change: float  # largest change of a value (stored units); 0.0 when lossless

    @property
    def saved(self) -> int:
        return self.bytes_before - self.bytes_after


@dataclass
class CompressionReport:
    """Per tensor and total savings, and for lossy tables how much the outputs moved on random inputs."""

    format: str
    tensors: list[TensorReport] = field(default_factory=list)
    file_before: int = 0
    file_after: int = 0
    head_before: int = 0  # TFLM's planned arena head, before and after (decompression scratch or DECODE outputs)
    head_after: int = 0
    output_change: list[dict[str, float]] = field(default_factory=list)  # per output: max_abs, mean_abs, changed
    notes: list[str] = field(default_factory=list)

    @property
    def lossless(self) -> bool:
        return all(t.lossless for t in self.tensors)

    @property
    def flash_saved(self) -> int:
        return self.file_before - self.file_after

    @property
    def ratio(self) -> float:
        return self.file_after / self.file_before if self.file_before else 1.0

    def __str__(self) -> str:
        lines = [f"{'tensor':<40} {'bits':>4} {'tables':>6} {'before':>9} {'after':>9}  kind"]
        for t in self.tensors:
            kind = "lossless" if t.lossless else f"lossy (max change {t.max_change:g})"
            lines.append(f"{t.name[:40]:<40} {t.bits:>4} {t.tables:>6} {t.bytes_before:>9,} {t.bytes_after:>9,}  "
                         + kind)
        lines.append(f"file {self.file_before:,} -> {self.file_after:,} bytes ({100 * self.ratio:.1f}%, "
                     f"{self.flash_saved:,} saved); arena head {self.head_before:,} -> {self.head_after:,} bytes "
                     f"[{self.format}]")
        for i, c in enumerate(self.output_change):
            lines.append(f"output {i}: max |change| {c['max_abs']:g}, mean {c['mean_abs']:g}, "
                         f"{100 * c['changed']:.1f}% of elements changed")
        lines.extend(self.notes)
        return "\n".join(lines)


def _eligible(sg: Subgraph, t: Tensor, fmt: str) -> bool:
    """A constant TFLM can decompress, read only where the chosen format decompresses it."""
    if not t.is_constant or t.lut is not None or t.dtype not in LUT_DTYPES or t.index in sg.outputs or not t.nbytes:
        return False
    readers = [(op, k) for op in sg.operators for k, i in enumerate(op.inputs) if i == t.index]
    if not readers:
        return False
    if fmt == "decode":
        return all(not (op.custom and op.op == DECODE_OP) for op, _ in readers)
    for op, k in readers:
        slots = DECOMPRESSED_INPUTS.get(op.op, ()) if not op.custom else ()
        if slots is not None and k not in slots:
            return False
    return True


def compress(model: Model | str | os.PathLike | bytes | bytearray | memoryview, bits: int | None = None,
             tolerance: float = float("inf"), format: str = "metadata", *, min_bytes: int = 64,
             seed: int = 0, force: bool = False) -> tuple[bytes, CompressionReport]:
    """Compress every eligible constant with look-up tables; returns the new ``.tflite`` bytes and a report.

    ``bits`` (1-7) is the index width: tensors whose values (per table) fit in ``2**bits`` keep them exactly, the
    others are clustered to ``2**bits`` levels when no value moves by more than ``tolerance`` (stored units:
    integer steps for quantized tensors; 0 means lossless only); biases (int32, int64) are never clustered.
    Without ``bits`` each tensor gets the narrowest width that keeps it lossless (at most 7). Tensors under
    ``min_bytes`` or that would not shrink are left alone. ``format`` is ``"metadata"`` or ``"decode"``. When the
    tables and metadata would make the file larger than it was, the model is returned unchanged unless ``force``.
    """
    if format not in FORMATS:
        raise MicronnError(f"format must be one of {', '.join(FORMATS)}, got {format!r}")
    if bits is not None and (isinstance(bits, bool) or not isinstance(bits, int) or not 1 <= bits <= 7):
        raise MicronnError(f"bits must be an integer from 1 to 7 (TFLM's index widths), got {bits!r}")
    raw = model if isinstance(model, bytes | bytearray | memoryview) or isinstance(model, Model) else None
    if isinstance(model, str | os.PathLike):
        try:
            with open(model, "rb") as f:
                raw = f.read()
        except OSError as e:
            raise ModelError(f"cannot read model file {os.fspath(model)!r}: {e.strerror}") from e
    source = model if isinstance(model, Model) else read(raw)
    original = write(source)
    out = copy.copy(source)
    out.subgraphs = [copy.copy(sg) for sg in source.subgraphs]
    # the size of the file given (a Model has none: its written size)
    report = CompressionReport(format, file_before=len(original) if isinstance(model, Model) else len(raw))
    todo = []
    for sg in out.subgraphs:
        sg.tensors = list(sg.tensors)
        todo += [(sg, i, t) for i, t in enumerate(sg.tensors) if t.nbytes >= min_bytes and _eligible(sg, t, format)]
    with progress.bar("compress: tensors", len(todo)) as shown:
        for sg, i, t in todo:
            shown.update()
            found = build_lut(t, bits, tolerance if t.dtype in LOSSY_DTYPES else 0.0)
            if found is None:
                continue
            lut, data, change = found
            packed = (t.nbytes // t.dtype.itemsize * lut.bits + 7) // 8
            after = packed + lut.values.nbytes
            if after >= t.nbytes:
                continue
            new = copy.copy(t)
            new.data, new.lut = data, lut
            sg.tensors[i] = new
            report.tensors.append(TensorReport(sg.index, i, t.name, lut.bits, lut.values.shape[0], t.nbytes, after,
                                               change == 0, change))
    if format == "metadata":  # TFLM's metadata lists subgraphs by position, each with a compressed tensor
        done = {t.subgraph for t in report.tensors}
        first_gap = next((s for s in range(len(out.subgraphs)) if s not in done), len(out.subgraphs))
        for t in [t for t in report.tensors if t.subgraph > first_gap]:
            sg = out.subgraphs[t.subgraph]
            sg.tensors[t.tensor] = source.subgraphs[t.subgraph].tensors[t.tensor]
            report.tensors.remove(t)
            report.notes.append(f"left subgraph {t.subgraph} tensor {t.tensor} uncompressed: subgraph {first_gap} "
                                f"has nothing to compress, and {COMPRESSION_KEY} cannot skip it")
    if format == "decode":
        decode_inputs(out)
        if OFFLINE_KEY in out.metadata:  # its offsets name tensors by index, and DECODE adds tensors
            out.metadata = {k: v for k, v in out.metadata.items() if k != OFFLINE_KEY}
            report.notes.append(f"dropped {OFFLINE_KEY}: DECODE operators add tensors its plan does not know")
    data = write(out)
    given = bytes(raw) if raw is not None else bytes(original)
    if len(data) >= len(given) and not force:  # the file as given, not a larger rewrite
        report.notes.append("no tensor would shrink: the model is unchanged" if not report.tensors else
                            f"the tables and metadata would grow the file ({len(data):,} >= {len(given):,} bytes): "
                            "the model is unchanged")
        data, report.tensors = given, []
    elif not report.tensors:
        report.notes.append("no tensor would shrink, but the rewrite stores equal vectors (zero points, scales, "
                            "shapes) once: the same model in fewer bytes")
    report.file_after = len(data)
    report.head_before = Interpreter(original, planner="tflm").arena_report()["head_bytes"]
    report.head_after = Interpreter(data, planner="tflm").arena_report()["head_bytes"]
    if not report.lossless:
        report.output_change = _output_change(original, data, seed)
    return data, report


def _output_change(before: bytes, after: bytes, seed: int, runs: int = 4) -> list[dict[str, float]]:
    """How far the compressed model's outputs move from the original's, over ``runs`` random inputs."""
    a, b = Interpreter(before), Interpreter(after)
    model = a.model
    stats: list[list[np.ndarray]] = [[] for _ in model.main.outputs]
    for r in range(runs):
        for k, x in enumerate(random_inputs(model, seed + r)):
            a.set_input(x, k)
            b.set_input(x, k)
        a.invoke()
        b.invoke()
        for k in range(len(stats)):
            stats[k].append(np.abs(a.get_output(k).astype(np.float64) - b.get_output(k).astype(np.float64)))
    out = []
    for diffs in stats:
        d = np.concatenate([x.reshape(-1) for x in diffs])
        out.append({"max_abs": float(d.max(initial=0.0)), "mean_abs": float(d.mean()) if d.size else 0.0,
                    "changed": float((d > 0).mean()) if d.size else 0.0})
    return out

