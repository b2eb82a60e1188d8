"""Read a .tflite flatbuffer into micronn's IR, in place and defensively.

Weights are numpy views over the caller's bytes (nothing is copied). Every length and index
is checked before use, so a truncated or hostile file raises ``ModelError`` naming the bad
tensor, operator or buffer instead of leaking IndexError/struct.error, hanging on an absurd
vector length or allocating gigabytes.
"""

from __future__ import annotations

import importlib
import os
import struct
from typing import Any

import numpy as np

from micronn.errors import MicronnError, ModelError
from micronn.ir import (
    DTYPES,
    INT4,
    LUT_DTYPES,
    Lut,
    Model,
    Operator,
    Quantization,
    SignatureDef,
    Subgraph,
    Tensor,
    channel_of,
    unpack_indices,
    unpack_int4,
)
from micronn.tflite import schema

_Model = importlib.import_module("tflite.Model").Model
_TYPE_NAMES = {v: k for k, v in vars(importlib.import_module("tflite.TensorType").TensorType).items()
               if not k.startswith("_")}

COMPRESSION_KEY = "COMPRESSION_METADATA"  # TFLM's look-up-table compression (micronn.ir.Lut)
COMPRESSION_SCHEMA_VERSION = 1  # the newest TFLM understands; it ignores the metadata of newer ones
MAX_LUT_BITS = 7  # TFLM refuses wider indices
DECODE_OP = "TFLM_DECODE"  # TFLM's DECODE custom operator: its even inputs hold encoded (not typed) data
MAX_TENSOR_BYTES = 1 << 30  # a tensor needing more than 1 GiB cannot be meant for a microcontroller
MAX_DIMS = 16

Source = str | os.PathLike | bytes | bytearray | memoryview


def _load(source: Source) -> bytes | bytearray | memoryview:
    if isinstance(source, (bytes, bytearray, memoryview)):
        return source
    try:
        with open(source, "rb") as f:
            return f.read()
    except OSError as e:
        raise ModelError(f"cannot read model file {os.fspath(source)!r}: {e.strerror}") from e


class _Reader:
    def __init__(self, buf: bytes | bytearray | memoryview):
        self.buf = buf if not isinstance(buf, memoryview) else buf.cast("B")
        self.size = len(self.buf)
        self.where = "model"
        self.luts: dict[int, dict[int, tuple[int, int]]] = {}  # COMPRESSION_METADATA, as _lut_entries gives it
        self.encoded: set[int] = set()  # tensors of the current subgraph that DECODE operators read encoded
        self.si = 0  # the subgraph being read

    def count(self, obj: Any, name: str, elem: int = 4) -> int:
        """Length of vector ``name`` of ``obj``, refusing lengths the file cannot hold."""
        n = getattr(obj, name + "Length")()
        if n < 0 or n * elem > self.size:
            raise ModelError(f"{self.where}: {name} vector claims {n} entries, more than the file can hold")
        return n

    def ints(self, obj: Any, name: str) -> list[int]:
        n = self.count(obj, name)
        return [int(v) for v in getattr(obj, name + "AsNumpy")()] if n else []

    def string(self, s: bytes | None) -> str:
        return s.decode("utf-8", errors="replace") if s else ""

    def read(self) -> Model:
        if self.size < 8:
            raise ModelError(f"file is {self.size} bytes, too short to be a TFLite model")
        root = struct.unpack_from("<I", self.buf, 0)[0]
        if root + 4 > self.size:
            raise ModelError("root table offset points past the end of the file (truncated?)")
        if bytes(self.buf[4:8]) != b"TFL3":
            raise ModelError(f"not a TFLite model: file identifier is {bytes(self.buf[4:8])!r}, expected b'TFL3'")
        m = _Model.GetRootAs(self.buf, 0)
        self.where = "model"
        buffers = [m.Buffers(i) for i in range(self.count(m, "Buffers"))]
        self.buffers = buffers
        for i in range(len(buffers)):  # every buffer, used or not, must lie in the file (TFLM refuses it otherwise)
            self.where = f"buffer {i}"
            self.buffer_bytes(i)
        codes = []
        for i in range(self.count(m, "OperatorCodes")):
            self.where = f"operator code {i}"
            oc = m.OperatorCodes(i)
            code = max(oc.BuiltinCode(), oc.DeprecatedBuiltinCode())
            name = schema.BUILTIN_NAMES.get(code)
            if name is None:
                raise ModelError(f"operator code {i}: unknown builtin code {code}")
            # TFLM's compression tool writes DECODE with builtin code 0 and its custom code; TFLM runs it as custom
            custom = name == "CUSTOM" or (code == 0 and bool(oc.CustomCode()))
            codes.append((self.string(oc.CustomCode()) if custom else name, custom, oc.Version() or 1))
        self.codes = codes
        metadata = {}
        for i in range(self.count(m, "Metadata")):
            self.where = f"metadata {i}"
            md = m.Metadata(i)
            metadata[self.string(md.Name())] = bytes(self.buffer_bytes(md.Buffer()))
        n_sg = self.count(m, "Subgraphs")
        # the tables replace the blob: the writer makes it anew from every Tensor.lut
        self.luts = _lut_entries(metadata.pop(COMPRESSION_KEY), n_sg) if COMPRESSION_KEY in metadata else {}
        subgraphs = [self.subgraph(m.Subgraphs(i), i) for i in range(n_sg)]
        if not subgraphs:
            raise ModelError("model has no subgraphs")
        for si, entries in self.luts.items():
            if entries:
                t = min(entries)
                raise ModelError(f"{COMPRESSION_KEY}: subgraph {si} tensor {t} is compressed but the subgraph has "
                                 f"only {len(subgraphs[si].tensors)} tensors")
        sigs = []
        for i in range(self.count(m, "SignatureDefs")):
            self.where = f"signature def {i}"
            sd = m.SignatureDefs(i)
            maps = [{self.string(sd_.Name()): sd_.TensorIndex() for sd_ in
                     (getattr(sd, kind)(j) for j in range(self.count(sd, kind)))} for kind in ("Inputs", "Outputs")]
            sigs.append(SignatureDef(self.string(sd.SignatureKey()), sd.SubgraphIndex(), *maps))
        return Model(subgraphs, self.string(m.Description()), m.Version(), metadata, sigs)

    def buffer_bytes(self, index: int) -> np.ndarray:
        """The bytes of buffer ``index`` as a uint8 view over the file (inline data or offset/size)."""
        if not 0 <= index < len(self.buffers):
            raise ModelError(f"{self.where}: buffer index {index} out of range (model has {len(self.buffers)})")
        b = self.buffers[index]
        if b.Offset() > 1:  # data stored after the flatbuffer (models over 2 GB)
            off, size = b.Offset(), b.Size()
            if off + size > self.size:
                raise ModelError(f"buffer {index}: offset {off} + size {size} is past the end of the file")
            return np.frombuffer(self.buf, np.uint8, size, off)
        n = self.count(b, "Data", 1)
        if n == 0:
            return np.zeros(0, np.uint8)
        start = b._tab.Vector(b._tab.Offset(4))
        if start + n > self.size:
            raise ModelError(f"buffer {index}: data runs past the end of the file (truncated?)")
        return np.frombuffer(self.buf, np.uint8, n, start)

    def tensor(self, t: Any, i: int) -> Tensor:
        name = self.string(t.Name())
        self.where = f"tensor {i} ({name!r})"
        code = t.Type()
        if code not in DTYPES:
            raise ModelError(f"{self.where}: tensor type {_TYPE_NAMES.get(code, code)} is not supported")
        dtype = DTYPES[code]
        shape = tuple(self.ints(t, "Shape"))
        if len(shape) > MAX_DIMS or any(d < 0 for d in shape):
            raise ModelError(f"{self.where}: invalid shape {shape}")
        nbytes = span = dtype.itemsize
        for d in shape:
            nbytes *= d
            span *= max(d, 1)  # an empty dimension must not hide absurd others (kernels loop over them)
        if dtype == INT4:
            nbytes = (nbytes + 1) // 2
        if span > MAX_TENSOR_BYTES:
            what = "needs" if span == nbytes else "would need, were its empty dimension filled,"
            raise ModelError(f"{self.where}: shape {shape} {what} {span} bytes, beyond any microcontroller")
        sig = tuple(self.ints(t, "ShapeSignature")) if not t.ShapeSignatureIsNone() else None
        q = t.Quantization()
        quant = None
        if q is not None and not q.ScaleIsNone() and self.count(q, "Scale") > 0:
            scale = np.array(q.ScaleAsNumpy(), np.float32)
            zp = np.array(q.ZeroPointAsNumpy(), np.int64) if self.count(q, "ZeroPoint", 8) else np.zeros(0, np.int64)
            if len(zp) not in (len(scale), 0):
                raise ModelError(f"{self.where}: {len(scale)} scales but {len(zp)} zero points")
            axis = q.QuantizedDimension()
            if i in self.encoded:  # the compression tool leaves the decoded tensor's quantization on these bytes
                scale = zp = np.zeros(0, np.float32)
            elif axis < 0 or (len(scale) > 1 and len(scale) not in shape):  # bias tensors keep the filter's axis
                raise ModelError(f"{self.where}: {len(scale)} per-channel scales along axis {axis} fit no "
                                 f"dimension of {shape}")
            mn = np.array(q.MinAsNumpy(), np.float32) if self.count(q, "Min") else None
            mx = np.array(q.MaxAsNumpy(), np.float32) if self.count(q, "Max") else None
            # TFLM takes a tensor as quantized only when it has both scales and zero points
            quant = Quantization(scale, zp, axis, mn, mx) if len(zp) else None
        bidx = t.Buffer()
        raw = self.buffer_bytes(bidx)
        entry = self.luts.get(self.si, {}).pop(i, None)
        if entry is not None:
            n_scales = 0 if q is None or q.ScaleIsNone() else self.count(q, "Scale")
            tensor = Tensor(name, shape, dtype, quant, None, bool(t.IsVariable()), sig, bidx, i)
            return self.compressed(tensor, raw, n_scales, q.QuantizedDimension() if n_scales else 0, *entry)
        data = None
        if len(raw):
            if len(raw) < nbytes:
                raise ModelError(f"{self.where}: buffer {bidx} holds {len(raw)} bytes but shape {shape} "
                                 f"of {dtype.name} needs {nbytes}")
            data = (unpack_int4(raw[:nbytes], int(np.prod(shape, dtype=np.int64))) if dtype == INT4
                    else raw[:nbytes].view(dtype)).reshape(shape)
        return Tensor(name, shape, dtype, quant, data, bool(t.IsVariable()), sig, bidx, i)

    def compressed(self, t: Tensor, raw: np.ndarray, n_scales: int, qdim: int, value_buffer: int, bits: int) -> Tensor:
        """``t`` with its LUT-compressed data decompressed, after every check TFLM leaves to chance (it would read
        past a table or a buffer, or decode garbage)."""
        where = f"{self.where}, compressed by {COMPRESSION_KEY},"
        if t.dtype not in LUT_DTYPES:
            raise ModelError(f"{where} is {t.dtype.name}: TFLM decompresses "
                             f"{', '.join(sorted(d.name for d in LUT_DTYPES))} tensors only")
        if t.is_variable or not len(raw):
            raise ModelError(f"{where} is not a constant: only constants can be compressed")
        if not 1 <= bits <= MAX_LUT_BITS:
            raise ModelError(f"{where} has index bit width {bits}; TFLM takes 1 to {MAX_LUT_BITS}")
        rank, count = len(t.shape), int(np.prod(t.shape, dtype=np.int64))
        axis = None
        if n_scales > 1:  # TFLM: one table per channel of a per-channel quantized tensor, first or last axis
            axis = 0 if qdim == 0 or rank == 1 else rank - 1
            if qdim != axis or t.shape[axis] != n_scales:
                raise ModelError(f"{where} is quantized per channel along axis {qdim} of {list(t.shape)}; TFLM "
                                 f"looks its value tables up along the first or last axis only")
        channels = n_scales if axis is not None else 1
        table = self.buffer_bytes(value_buffer)
        size = t.dtype.itemsize
        if not len(table) or len(table) % (size * channels):
            raise ModelError(f"{where}: value buffer {value_buffer} holds {len(table)} bytes, not {channels} "
                             f"equal table(s) of {t.dtype.name}")
        if len(raw) * 8 < count * bits:
            raise ModelError(f"{where}: buffer {t.buffer} holds {len(raw)} bytes but {count} indices of {bits} "
                             f"bits need {(count * bits + 7) // 8}")
        values = np.frombuffer(bytes(table), t.dtype.newbyteorder("<")).astype(t.dtype).reshape(channels, -1)
        idx = unpack_indices(raw, bits, count)
        bad = np.flatnonzero(idx >= values.shape[1])
        if bad.size:
            raise ModelError(f"{where}: element {int(bad[0])} has index {int(idx[bad[0]])} but its value table "
                             f"holds {values.shape[1]} values")
        values.flags.writeable = False
        data = values[channel_of(t.shape, axis), idx].reshape(t.shape)
        data.flags.writeable = False
        t.data, t.lut = data, Lut(values, bits, axis)
        return t

    def subgraph(self, sg: Any, si: int) -> Subgraph:
        self.where = f"subgraph {si}"
        self.si = si
        n_t = self.count(sg, "Tensors")
        self.encoded = self.decode_inputs(sg, n_t)
        tensors = [self.tensor(sg.Tensors(i), i) for i in range(n_t)]
        self.where = f"subgraph {si}"
        inputs, outputs = self.ints(sg, "Inputs"), self.ints(sg, "Outputs")
        for kind, idx in (("input", inputs), ("output", outputs)):
            for t in idx:
                if not 0 <= t < n_t:
                    raise ModelError(f"subgraph {si}: {kind} tensor index {t} out of range ({n_t} tensors)")
        ops = []
        for i in range(self.count(sg, "Operators")):
            o = sg.Operators(i)
            ci = o.OpcodeIndex()
            if not 0 <= ci < len(self.codes):
                raise ModelError(f"operator {i}: opcode index {ci} out of range ({len(self.codes)} operator codes)")
            name, custom, version = self.codes[ci]
            self.where = f"operator {i} ({name})"
            ins, outs = self.ints(o, "Inputs"), self.ints(o, "Outputs")
            inter = self.ints(o, "Intermediates")
            for kind, idx, lo in (("input", ins, -1), ("output", outs, 0), ("intermediate", inter, 0)):
                for t in idx:
                    if not lo <= t < n_t:
                        raise ModelError(f"{self.where}: {kind} tensor index {t} out of range ({n_t} tensors)")
            opts = None
            otype = o.BuiltinOptionsType()
            if otype:
                table_name = schema.UNION_NAMES.get(otype)
                if table_name is None:
                    raise ModelError(f"{self.where}: unknown builtin options type {otype}")
                table = o.BuiltinOptions()
                if table is None:
                    raise ModelError(f"{self.where}: builtin options type {table_name} without a table")
                opts = schema.spec(table_name).decode(table, self.size)
                bias_type = getattr(opts, "quantized_bias_type", 0)
                if bias_type not in _TYPE_NAMES:  # TFLM refuses to parse the options then
                    raise ModelError(f"{self.where}: quantized_bias_type {bias_type} is not a tensor type")
            elif not custom and (table_name := schema.options_table_for(name)) is not None:
                opts = schema.options_class(table_name)()  # absent table: the schema's defaults
            copts = bytes(o.CustomOptionsAsNumpy()) if self.count(o, "CustomOptions", 1) else None
            ops.append(Operator(name, ins, outs, opts, copts, custom, version, inter, i))
        return Subgraph(tensors, ops, inputs, outputs, self.string(sg.Name()), si)

    def decode_inputs(self, sg: Any, n_t: int) -> set[int]:
        """The tensors DECODE operators read as encoded data (every other input, from the first)."""
        out: set[int] = set()
        for i in range(self.count(sg, "Operators")):
            o = sg.Operators(i)
            ci = o.OpcodeIndex()
            if 0 <= ci < len(self.codes) and self.codes[ci][:2] == (DECODE_OP, True):
                out.update(int(v) for v in self.ints(o, "Inputs")[0::2])
        return out


def _lut_entries(blob: bytes, n_subgraphs: int) -> dict[int, dict[int, tuple[int, int]]]:
    """COMPRESSION_METADATA (a flatbuffer: Metadata{schema_version, subgraphs: [{lut_tensors: [{tensor,
    value_buffer, index_bitwidth}]}]}) as subgraph -> tensor -> (value buffer, index bits), every offset checked."""
    where = f"{COMPRESSION_KEY} metadata"
    end = len(blob)

    def u(pos: int, fmt: str) -> int:
        if not 0 <= pos <= end - struct.calcsize(fmt):
            raise ModelError(f"{where} is malformed: offset {pos} lies outside its {end} bytes")
        return struct.unpack_from("<" + fmt, blob, pos)[0]

    def field(table: int, slot: int) -> int | None:
        vtable = table - u(table, "i")
        at = 4 + 2 * slot
        off = u(vtable + at, "H") if at < u(vtable, "H") else 0
        return table + off if off else None

    def scalar(table: int, slot: int, fmt: str, default: int) -> int:
        pos = field(table, slot)
        return default if pos is None else u(pos, fmt)

    def tables(table: int, slot: int) -> list[int]:
        pos = field(table, slot)
        if pos is None:
            return []
        vec = pos + u(pos, "I")
        n = u(vec, "I")
        if n * 4 > end:
            raise ModelError(f"{where} is malformed: a vector claims {n} entries")
        return [vec + 4 + 4 * k + u(vec + 4 + 4 * k, "I") for k in range(n)]

    root = u(0, "I")
    version = scalar(root, 0, "I", 1)
    if version > COMPRESSION_SCHEMA_VERSION:
        raise ModelError(f"{where} has schema version {version}; TFLM reads version {COMPRESSION_SCHEMA_VERSION} "
                         "and would ignore it, running on the packed indices")
    subgraphs = tables(root, 1)
    if not subgraphs:
        raise ModelError(f"{where} lists no subgraphs (TFLM refuses it)")
    if len(subgraphs) > n_subgraphs:
        raise ModelError(f"{where} describes {len(subgraphs)} subgraphs; the model has {n_subgraphs}")
    out: dict[int, dict[int, tuple[int, int]]] = {}
    for si, sg in enumerate(subgraphs):
        entries = out.setdefault(si, {})
        listed = tables(sg, 0)
        if not listed:
            raise ModelError(f"{where}: subgraph {si} lists no tensor (TFLM refuses it)")
        for lt in listed:
            tensor = scalar(lt, 0, "i", 0)
            if tensor < 0:
                raise ModelError(f"{where}: subgraph {si} names tensor {tensor}")
            if tensor in entries:
                raise ModelError(f"{where}: subgraph {si} tensor {tensor} is listed twice")
            entries[tensor] = (scalar(lt, 1, "I", 0), scalar(lt, 2, "B", 0))
    return out


def read(source: Source, *, validate: bool = True) -> Model:
    """Read a .tflite model from a path, bytes or memoryview; weights stay views over the bytes."""
    buf = _load(source)
    try:
        model = _Reader(buf).read()
    except MicronnError:
        raise
    except (IndexError, struct.error, ValueError, TypeError, OverflowError, AttributeError, UnicodeError) as e:
        raise ModelError(f"malformed model file: {type(e).__name__}: {e}") from e
    if validate:
        model.validate()
    return model
