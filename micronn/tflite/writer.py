"""Serialize a :class:`micronn.ir.Model` to a TFLite flatbuffer (schema version 3, file identifier ``TFL3``).

The writer is the inverse of :mod:`micronn.tflite.reader`: ``read(write(m)) == m``. It builds the file with the
PyPI ``flatbuffers`` builder and the builder functions generated into the PyPI ``tflite`` package, so no schema
is vendored. Layout choices that matter to the runtime:

* buffer 0 is the empty sentinel every non-constant tensor points to;
* constant data is written first (so it sits at the end of the file, like the converter does) and each data
  vector is 16-byte aligned, so kernels can view it in place with any element type;
* tensors that shared a buffer in the source file (same ``Tensor.buffer``, identical bytes) share one again;
* operator codes are deduplicated by (op, custom, version); codes no operator uses are dropped;
* a tensor with a ``lut`` is written LUT-compressed: its buffer holds the packed indices, a buffer of its own the
  value tables, and the ``COMPRESSION_METADATA`` entry (a small flatbuffer built here) ties them together.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import flatbuffers
import numpy as np

from micronn import ir
from micronn.errors import writing
from micronn.tflite import schema
from micronn.tflite.reader import COMPRESSION_KEY

FILE_IDENTIFIER = b"TFL3"
DATA_ALIGNMENT = 16
# OperatorCode.deprecated_builtin_code is an int8: codes above it are stored as this placeholder.
PLACEHOLDER_FOR_GREATER_OP_CODES = 127
CUSTOM_CODE = schema.BUILTIN_CODES["CUSTOM"]


def _fb(table: str) -> ModuleType:
    """The generated module of a schema table (``tflite.Tensor`` the package attribute is the class)."""
    return importlib.import_module(f"tflite.{table}")


_Model = _fb("Model")
_SubGraph = _fb("SubGraph")
_Tensor = _fb("Tensor")
_Operator = _fb("Operator")
_OperatorCode = _fb("OperatorCode")
_Buffer = _fb("Buffer")
_Quant = _fb("QuantizationParameters")
_Metadata = _fb("Metadata")
_SignatureDef = _fb("SignatureDef")
_TensorMap = _fb("TensorMap")


def write(model: ir.Model) -> bytes:
    """Serialize ``model`` to the bytes of a ``.tflite`` file."""
    return _Writer(model).build()


def save(model: ir.Model, path: str | os.PathLike[str]) -> None:
    """Write ``model`` to the file ``path``."""
    data = write(model)
    with writing(path), open(path, "wb") as f:
        f.write(data)


@dataclass
class _Buffers:
    """The model's buffer table: index 0 is the empty sentinel, then one entry per distinct constant."""

    data: list[bytes | None] = field(default_factory=lambda: [None])
    _shared: dict[tuple[int, bytes], int] = field(default_factory=dict)

    def add(self, payload: bytes, source: int = 0) -> int:
        """Index of a buffer holding ``payload``; reuses the buffer of a tensor that shared ``source`` with it."""
        if source > 0:
            key = (source, payload)
            if key in self._shared:
                return self._shared[key]
            self._shared[key] = len(self.data)
        self.data.append(payload)
        return len(self.data) - 1


def _lut_bytes(t: ir.Tensor) -> tuple[bytes, bytes]:
    """(packed indices, value tables) of a LUT-compressed tensor."""
    lut = t.lut
    values = np.asarray(lut.values)
    if values.dtype != t.dtype or values.ndim != 2:
        raise ValueError(f"tensor {t.name!r}: value tables are {values.dtype}{list(values.shape)}, not a "
                         f"(channels, stride) table of {t.dtype}")
    channels = 1 if lut.axis is None else t.shape[lut.axis]
    if values.shape[0] != channels or not 1 <= lut.bits <= 7:
        raise ValueError(f"tensor {t.name!r}: {values.shape[0]} value tables at {lut.bits} bits for "
                         f"{channels} channel(s)")
    try:
        indices = lut.indices(np.asarray(t.data).reshape(t.shape))
    except ValueError as e:
        raise ValueError(f"tensor {t.name!r}: {e}") from e
    table = values.astype(values.dtype.newbyteorder("<"), copy=False).tobytes()
    return ir.pack_indices(indices, lut.bits), table


def _lut_metadata(entries: list[list[tuple[int, int, int]]]) -> bytes:
    """COMPRESSION_METADATA: Metadata{schema_version: 1, subgraphs: [Subgraph{lut_tensors: [LutTensor{tensor,
    value_buffer, index_bitwidth}]}]}, the Subgraph entries by position, each with at least one tensor."""
    b = flatbuffers.Builder(64 + 16 * sum(len(e) for e in entries))

    def vector(offsets: list[int]) -> int:
        b.StartVector(4, len(offsets), 4)
        for off in reversed(offsets):
            b.PrependUOffsetTRelative(off)
        return b.EndVector()

    subgraphs = []
    for luts in entries:
        tables = []
        for tensor, value_buffer, bits in luts:
            b.StartObject(3)
            b.PrependInt32Slot(0, tensor, 0)
            b.PrependUint32Slot(1, value_buffer, 0)
            b.PrependUint8Slot(2, bits, 0)
            tables.append(b.EndObject())
        luts_vec = vector(tables)
        b.StartObject(1)
        b.PrependUOffsetTRelativeSlot(0, luts_vec, 0)
        subgraphs.append(b.EndObject())
    subgraphs_vec = vector(subgraphs)
    b.StartObject(2)
    b.PrependUint32Slot(0, 1, 0)  # written even though it is the default: the version is what readers check
    b.PrependUOffsetTRelativeSlot(1, subgraphs_vec, 0)
    b.Finish(b.EndObject())
    return bytes(b.Output())


def _tensor_bytes(t: ir.Tensor) -> bytes:
    data = np.asarray(t.data)
    if data.dtype != t.dtype:
        raise ValueError(f"tensor {t.name!r}: data is {data.dtype}, tensor is {t.dtype}")
    if data.size != int(np.prod(t.shape, dtype=np.int64)):
        raise ValueError(f"tensor {t.name!r}: data has {data.size} elements, shape {tuple(t.shape)} needs "
                         f"{int(np.prod(t.shape, dtype=np.int64))}")
    if t.dtype == ir.INT4:
        return ir.pack_int4(np.ascontiguousarray(data))
    return data.astype(data.dtype.newbyteorder("<"), copy=False).tobytes(order="C")


class _Writer:
    """One serialization: flatbuffers are built back to front, children before their parents."""

    def __init__(self, model: ir.Model):
        self.model = model
        self.buffers = _Buffers()
        # buffer index of every tensor, per subgraph, assigned before anything is written
        self.tensor_buffers: list[list[int]] = []
        luts: list[list[tuple[int, int, int]]] = []
        for sg in model.subgraphs:
            buffers, entries = [], []
            for t in sg.tensors:
                if t.data is None:
                    buffers.append(0)
                elif t.lut is None:
                    buffers.append(self.buffers.add(_tensor_bytes(t), t.buffer))
                else:
                    _tensor_bytes(t)  # the same checks of the data
                    packed, table = _lut_bytes(t)
                    buffers.append(self.buffers.add(packed, t.buffer))
                    entries.append((len(buffers) - 1, self.buffers.add(table), t.lut.bits))  # its place in the file
            self.tensor_buffers.append(buffers)
            luts.append(entries)
        while luts and not luts[-1]:
            luts.pop()
        if not all(luts):  # TFLM refuses a subgraph entry without a tensor, and entries are by position
            raise ValueError(f"subgraph {luts.index([])} has no LUT-compressed tensor but a later one has: TFLM's "
                             f"{COMPRESSION_KEY} cannot describe that")
        if any(luts) and COMPRESSION_KEY in model.metadata:
            raise ValueError(f"metadata {COMPRESSION_KEY!r} is made from the tensors' lut; remove it from the model")
        metadata = dict(model.metadata)
        if any(luts):
            metadata[COMPRESSION_KEY] = _lut_metadata(luts)
        self.metadata_buffers = {name: self.buffers.add(bytes(blob)) for name, blob in metadata.items()}
        self.opcodes: dict[tuple[str, bool, int], int] = {}
        self.vectors: dict[tuple[str, bytes], int] = {}
        payload = sum(len(d) for d in self.buffers.data if d is not None)
        self.b = flatbuffers.Builder(payload + 64 * 1024)

    # ---- helpers -------------------------------------------------------------------------------------------

    def _ints(self, values: Any, dtype: type = np.int32) -> int:
        """A scalar vector, written once per distinct content: tensors share their zero points, scales, shapes."""
        data = np.asarray(values, dtype=dtype).reshape(-1)
        key = (data.dtype.str, data.tobytes())
        if key not in self.vectors:
            self.vectors[key] = self.b.CreateNumpyVector(data)
        return self.vectors[key]

    def _table_vector(self, start: Any, offsets: list[int]) -> int:
        start(self.b, len(offsets))
        for off in reversed(offsets):
            self.b.PrependUOffsetTRelative(off)
        return self.b.EndVector()

    def _aligned_bytes(self, payload: bytes) -> int:
        """A ``[ubyte]`` vector whose first element is ``DATA_ALIGNMENT``-aligned in the final file."""
        b = self.b
        b.StartVector(1, len(payload), DATA_ALIGNMENT)
        b.head = b.head - len(payload)
        b.Bytes[b.head:b.head + len(payload)] = payload
        return b.EndVector()

    # ---- parts ---------------------------------------------------------------------------------------------

    def _buffers(self) -> int:
        vectors = [None if d is None or not d else self._aligned_bytes(d) for d in self.buffers.data]
        tables = []
        for vec in vectors:
            _Buffer.BufferStart(self.b)
            if vec is not None:
                _Buffer.BufferAddData(self.b, vec)
            tables.append(_Buffer.BufferEnd(self.b))
        return self._table_vector(_Model.ModelStartBuffersVector, tables)

    def _quantization(self, q: ir.Quantization) -> int:
        vecs = {
            "Scale": self._ints(q.scale, np.float32),
            "ZeroPoint": self._ints(q.zero_point, np.int64),
        }
        if q.min is not None:
            vecs["Min"] = self._ints(q.min, np.float32)
        if q.max is not None:
            vecs["Max"] = self._ints(q.max, np.float32)
        _Quant.QuantizationParametersStart(self.b)
        for name, vec in vecs.items():
            getattr(_Quant, f"QuantizationParametersAdd{name}")(self.b, vec)
        _Quant.QuantizationParametersAddQuantizedDimension(self.b, q.axis)
        return _Quant.QuantizationParametersEnd(self.b)

    def _tensor(self, t: ir.Tensor, buffer: int) -> int:
        b = self.b
        if t.dtype not in ir.TYPE_CODES:
            raise ValueError(f"tensor {t.name!r}: dtype {t.dtype} has no TFLite type")
        name = b.CreateString(t.name)
        shape = self._ints(t.shape)
        signature = self._ints(t.shape_signature) if t.shape_signature is not None else None
        quant = self._quantization(t.quant) if t.quant is not None else None
        _Tensor.TensorStart(b)
        _Tensor.TensorAddShape(b, shape)
        _Tensor.TensorAddType(b, ir.TYPE_CODES[t.dtype])
        _Tensor.TensorAddBuffer(b, buffer)
        _Tensor.TensorAddName(b, name)
        if quant is not None:
            _Tensor.TensorAddQuantization(b, quant)
        _Tensor.TensorAddIsVariable(b, t.is_variable)
        if signature is not None:
            _Tensor.TensorAddShapeSignature(b, signature)
        _Tensor.TensorAddHasRank(b, True)  # IR shapes are always ranked
        return _Tensor.TensorEnd(b)

    def _opcode_index(self, op: ir.Operator) -> int:
        key = (op.op, op.custom, op.version)
        if key not in self.opcodes:
            if not op.custom and op.op not in schema.BUILTIN_CODES:
                raise ValueError(f"unknown builtin op {op.op!r} (set custom=True for a custom op)")
            self.opcodes[key] = len(self.opcodes)
        return self.opcodes[key]

    def _operator(self, op: ir.Operator) -> int:
        if op.explicit_padding is not None:
            raise ValueError(f"operator {op.index} ({op.op}) has micronn-internal explicit padding, which .tflite "
                             "cannot express; write the model before folding its PADs")
        b = self.b
        inputs = self._ints(op.inputs)
        outputs = self._ints(op.outputs)
        intermediates = self._ints(op.intermediates) if op.intermediates else None
        custom = b.CreateByteVector(bytes(op.custom_options)) if op.custom_options is not None else None
        options = None
        if op.options is not None:
            table = type(op.options).__name__
            if table not in schema.UNION_TYPES:
                raise ValueError(f"operator {op.op}: {table} is not a BuiltinOptions table")
            options = (schema.UNION_TYPES[table], schema.spec(table).encode(b, op.options))
        _Operator.OperatorStart(b)
        _Operator.OperatorAddOpcodeIndex(b, self._opcode_index(op))
        _Operator.OperatorAddInputs(b, inputs)
        _Operator.OperatorAddOutputs(b, outputs)
        if options is not None:
            _Operator.OperatorAddBuiltinOptionsType(b, options[0])
            _Operator.OperatorAddBuiltinOptions(b, options[1])
        if custom is not None:
            _Operator.OperatorAddCustomOptions(b, custom)
        if intermediates is not None:
            _Operator.OperatorAddIntermediates(b, intermediates)
        return _Operator.OperatorEnd(b)

    def _subgraph(self, sg: ir.Subgraph, buffers: list[int]) -> int:
        b = self.b
        tensors = [self._tensor(t, buf) for t, buf in zip(sg.tensors, buffers, strict=True)]
        tensors_vec = self._table_vector(_SubGraph.SubGraphStartTensorsVector, tensors)
        operators = [self._operator(op) for op in sg.operators]
        operators_vec = self._table_vector(_SubGraph.SubGraphStartOperatorsVector, operators)
        inputs = self._ints(sg.inputs)
        outputs = self._ints(sg.outputs)
        name = b.CreateString(sg.name) if sg.name else None
        _SubGraph.SubGraphStart(b)
        _SubGraph.SubGraphAddTensors(b, tensors_vec)
        _SubGraph.SubGraphAddInputs(b, inputs)
        _SubGraph.SubGraphAddOutputs(b, outputs)
        _SubGraph.SubGraphAddOperators(b, operators_vec)
        if name is not None:
            _SubGraph.SubGraphAddName(b, name)
        return _SubGraph.SubGraphEnd(b)

    def _operator_codes(self) -> int:
        b = self.b
        tables = []
        for op, custom, version in self.opcodes:  # dict order is opcode index order
            code = CUSTOM_CODE if custom else schema.BUILTIN_CODES[op]
            custom_code = b.CreateString(op) if custom else None
            _OperatorCode.OperatorCodeStart(b)
            _OperatorCode.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, PLACEHOLDER_FOR_GREATER_OP_CODES))
            if custom_code is not None:
                _OperatorCode.OperatorCodeAddCustomCode(b, custom_code)
            _OperatorCode.OperatorCodeAddVersion(b, version)
            _OperatorCode.OperatorCodeAddBuiltinCode(b, code)
            tables.append(_OperatorCode.OperatorCodeEnd(b))
        return self._table_vector(_Model.ModelStartOperatorCodesVector, tables)

    def _tensor_maps(self, start: Any, names: dict[str, int]) -> int:
        tables = []
        for name, index in names.items():
            s = self.b.CreateString(name)
            _TensorMap.TensorMapStart(self.b)
            _TensorMap.TensorMapAddName(self.b, s)
            _TensorMap.TensorMapAddTensorIndex(self.b, index)
            tables.append(_TensorMap.TensorMapEnd(self.b))
        return self._table_vector(start, tables)

    def _signature_defs(self) -> int:
        b = self.b
        tables = []
        for sd in self.model.signature_defs:
            inputs = self._tensor_maps(_SignatureDef.SignatureDefStartInputsVector, sd.inputs)
            outputs = self._tensor_maps(_SignatureDef.SignatureDefStartOutputsVector, sd.outputs)
            key = b.CreateString(sd.key)
            _SignatureDef.SignatureDefStart(b)
            _SignatureDef.SignatureDefAddInputs(b, inputs)
            _SignatureDef.SignatureDefAddOutputs(b, outputs)
            _SignatureDef.SignatureDefAddSignatureKey(b, key)
            _SignatureDef.SignatureDefAddSubgraphIndex(b, sd.subgraph)
            tables.append(_SignatureDef.SignatureDefEnd(b))
        return self._table_vector(_Model.ModelStartSignatureDefsVector, tables)

    def _metadata(self) -> int:
        tables = []
        for name, buffer in self.metadata_buffers.items():
            s = self.b.CreateString(name)
            _Metadata.MetadataStart(self.b)
            _Metadata.MetadataAddName(self.b, s)
            _Metadata.MetadataAddBuffer(self.b, buffer)
            tables.append(_Metadata.MetadataEnd(self.b))
        return self._table_vector(_Model.ModelStartMetadataVector, tables)

    def build(self) -> bytes:
        b = self.b
        buffers = self._buffers()
        subgraphs = [self._subgraph(sg, bufs) for sg, bufs in zip(self.model.subgraphs, self.tensor_buffers)]
        subgraphs_vec = self._table_vector(_Model.ModelStartSubgraphsVector, subgraphs)
        opcodes = self._operator_codes()
        signatures = self._signature_defs() if self.model.signature_defs else None
        metadata = self._metadata() if self.metadata_buffers else None
        description = b.CreateString(self.model.description) if self.model.description else None
        _Model.ModelStart(b)
        _Model.ModelAddVersion(b, self.model.version)
        _Model.ModelAddOperatorCodes(b, opcodes)
        _Model.ModelAddSubgraphs(b, subgraphs_vec)
        if description is not None:
            _Model.ModelAddDescription(b, description)
        _Model.ModelAddBuffers(b, buffers)
        if metadata is not None:
            _Model.ModelAddMetadata(b, metadata)
        if signatures is not None:
            _Model.ModelAddSignatureDefs(b, signatures)
        b.Finish(_Model.ModelEnd(b), file_identifier=FILE_IDENTIFIER)
        return bytes(b.Output())
