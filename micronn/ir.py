"""The graph IR shared by the interpreter, the planners, the optimizer and the device runtime.

Only ``micronn.tflite`` knows the flatbuffer; everything else works on these classes.
Constant data stays a read-only numpy view over the model bytes (no copy on load).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

import numpy as np


class Padding(IntEnum):
    SAME = 0
    VALID = 1


class Activation(IntEnum):
    NONE = 0
    RELU = 1
    RELU_N1_TO_1 = 2
    RELU6 = 3
    TANH = 4
    SIGN_BIT = 5


# TFLite's RESOURCE type: a handle to a resource variable (VAR_HANDLE's output), an int32 id at run time. A
# one-field structured dtype has int32's size but stays distinct from int32, so the type code round-trips.
RESOURCE = np.dtype([("resource_id", "<i4")])

# TFLite's INT4 (weights only): two values per byte in the file, low nibble first. In the IR a constant holds one
# sign-extended value per element with this one-field dtype, distinct from int8 so only kernels that know int4
# take it; ``Tensor.nbytes`` counts the packed bytes, as they sit in flash.
INT4 = np.dtype([("int4", "i1")])

# TensorType code -> numpy dtype, for the types micronn computes with.
DTYPES: dict[int, np.dtype] = {
    0: np.dtype(np.float32),
    1: np.dtype(np.float16),
    2: np.dtype(np.int32),
    3: np.dtype(np.uint8),
    4: np.dtype(np.int64),
    6: np.dtype(np.bool_),
    7: np.dtype(np.int16),
    9: np.dtype(np.int8),
    10: np.dtype(np.float64),
    12: np.dtype(np.uint64),
    13: RESOURCE,
    15: np.dtype(np.uint32),
    16: np.dtype(np.uint16),
    17: INT4,
}
TYPE_CODES: dict[np.dtype, int] = {v: k for k, v in DTYPES.items()}


def pack_int4(values: np.ndarray) -> bytes:
    """int4 values (-8..7) two per byte, low nibble first, as TFLite files store them."""
    v = np.asarray(values).view(np.int8).ravel().astype(np.uint8) & 0xF
    if v.size % 2:
        v = np.append(v, np.uint8(0))
    return (v[0::2] | (v[1::2] << 4)).astype(np.uint8).tobytes()


def unpack_int4(raw: np.ndarray | bytes, count: int) -> np.ndarray:
    """``count`` sign-extended int4 values from packed bytes, as an :data:`INT4` array."""
    b = np.frombuffer(bytes(raw), np.uint8)
    v = np.empty(2 * b.size, np.int8)
    v[0::2], v[1::2] = (b << 4).view(np.int8) >> 4, b.view(np.int8) >> 4
    return v[:count].view(INT4)


def pack_indices(indices: np.ndarray, bits: int) -> bytes:
    """Unsigned ``bits``-wide indices packed most significant bit first, zero-padded to a byte: TFLM's LUT
    compression bitstring."""
    idx = np.asarray(indices, np.uint8).reshape(-1)
    planes = (idx[:, None] >> np.arange(bits - 1, -1, -1, dtype=np.uint8)) & 1
    return np.packbits(planes.reshape(-1)).tobytes()


def unpack_indices(raw: np.ndarray | bytes, bits: int, count: int) -> np.ndarray:
    """The first ``count`` ``bits``-wide indices of a packed bitstring (the caller checks it is long enough)."""
    planes = np.unpackbits(np.frombuffer(bytes(raw), np.uint8), count=count * bits).reshape(count, bits)
    return (planes.astype(np.uint8) << np.arange(bits - 1, -1, -1, dtype=np.uint8)).sum(axis=1, dtype=np.uint8)


def channel_of(shape: tuple[int, ...], axis: int | None) -> np.ndarray:
    """Per element (C order), which value table a LUT-compressed tensor looks it up in: 0 without ``axis``."""
    n = int(np.prod(shape, dtype=np.int64))
    if axis is None:
        return np.zeros(n, np.intp)
    inner = int(np.prod(shape[axis + 1:], dtype=np.int64))
    return (np.arange(n) // max(inner, 1)) % shape[axis]


# TFLM decompresses tensors of these types only.
LUT_DTYPES = frozenset(np.dtype(d) for d in (np.float32, np.int8, np.int16, np.int32, np.int64, np.bool_))


@dataclass(eq=False)
class Lut:
    """TFLM's look-up-table compression of a constant. ``Tensor.data`` keeps the decompressed values (kernels run
    unchanged); the file stores ``bits``-wide indices into ``values``, which has one row (value table) per channel
    along ``axis`` or a single row when ``axis`` is None. Rows may be padded past the values they use."""

    values: np.ndarray  # (channels, stride), the tensor's dtype
    bits: int
    axis: int | None = None

    def indices(self, data: np.ndarray) -> np.ndarray:
        """Each element's index into its channel's table (the first entry holding its bytes)."""
        table = np.ascontiguousarray(self.values)
        words = np.dtype(f"u{table.dtype.itemsize}")
        keys, flat = table.view(words), np.ascontiguousarray(data).reshape(-1).view(words)
        chan = channel_of(np.shape(data), self.axis)
        out = np.empty(flat.size, np.uint8)
        for c in range(table.shape[0]):
            sel = chan == c
            order = np.argsort(keys[c], kind="stable")
            pos = np.minimum(np.searchsorted(keys[c][order], flat[sel]), table.shape[1] - 1)
            found = order[pos]
            if not np.array_equal(keys[c][found], flat[sel]):
                raise ValueError(f"a value is missing from value table {c}")
            out[sel] = found
        if out.size and int(out.max()) >> self.bits:
            raise ValueError(f"an index needs more than {self.bits} bits")
        return out

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Lut) and (self.bits, self.axis) == (other.bits, other.axis) and _arr_eq(
            self.values, other.values)


def _arr_eq(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@dataclass(eq=False)
class Quantization:
    """Affine quantization: real = scale * (q - zero_point), per tensor or per channel along ``axis``."""

    scale: np.ndarray  # float32, one entry (per tensor) or one per channel
    zero_point: np.ndarray  # int64, same length as scale
    axis: int = 0
    min: np.ndarray | None = None
    max: np.ndarray | None = None

    @property
    def per_channel(self) -> bool:
        return len(self.scale) > 1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantization) and self.axis == other.axis and all(
            _arr_eq(getattr(self, f), getattr(other, f)) for f in ("scale", "zero_point", "min", "max")
        )


@dataclass(eq=False)
class Tensor:
    """A tensor of a subgraph. ``data`` is set for constants (weights), a view over the model bytes."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    quant: Quantization | None = None
    data: np.ndarray | None = None
    is_variable: bool = False
    shape_signature: tuple[int, ...] | None = None
    buffer: int = 0  # buffer index in the source file; tensors sharing one keep sharing it
    index: int = -1
    lut: Lut | None = None  # how the file compresses ``data`` (TFLM's COMPRESSION_METADATA); None: stored plainly

    @property
    def nbytes(self) -> int:
        n = int(np.prod(self.shape, dtype=np.int64))
        return (n + 1) // 2 if self.dtype == INT4 else n * self.dtype.itemsize

    @property
    def spec(self) -> str:
        """Type and shape as reports print them: ``int8[1, 96, 96, 1]``."""
        return f"{'int4' if self.dtype == INT4 else self.dtype.name}{list(self.shape)}"

    @property
    def is_constant(self) -> bool:
        return self.data is not None and not self.is_variable

    @property
    def scale(self) -> float:
        return float(self.quant.scale[0]) if self.quant is not None and len(self.quant.scale) else 0.0

    @property
    def zero_point(self) -> int:
        return int(self.quant.zero_point[0]) if self.quant is not None and len(self.quant.zero_point) else 0

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Tensor)
            and (self.name, tuple(self.shape), self.dtype, self.is_variable, self.shape_signature)
            == (other.name, tuple(other.shape), other.dtype, other.is_variable, other.shape_signature)
            and self.quant == other.quant
            and _arr_eq(self.data, other.data)
            and self.lut == other.lut
        )


@dataclass(eq=False)
class Operator:
    """One operator. ``op`` is the builtin name (``"CONV_2D"``) or the custom code for custom ops."""

    op: str
    inputs: list[int]  # -1 marks an omitted optional input
    outputs: list[int]
    options: Any = None  # a typed options dataclass from micronn.tflite.schema, or None
    custom_options: bytes | None = None
    custom: bool = False
    version: int = 1
    intermediates: list[int] = field(default_factory=list)
    index: int = -1
    # micronn-internal, never written to .tflite: (top, left) padding of a convolution that absorbed an
    # explicit PAD (micronn.planners.fold); TFLM's SAME/VALID cannot express asymmetric PyTorch-style pads
    explicit_padding: tuple[int, int] | None = None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Operator) and (
            self.op, list(self.inputs), list(self.outputs), self.options, self.custom_options,
            self.custom, self.version, list(self.intermediates), self.explicit_padding,
        ) == (
            other.op, list(other.inputs), list(other.outputs), other.options, other.custom_options,
            other.custom, other.version, list(other.intermediates), other.explicit_padding,
        )


@dataclass(eq=False)
class Subgraph:
    tensors: list[Tensor]
    operators: list[Operator]
    inputs: list[int]
    outputs: list[int]
    name: str = ""
    index: int = 0

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Subgraph) and (
            self.tensors, self.operators, list(self.inputs), list(self.outputs), self.name
        ) == (other.tensors, other.operators, list(other.inputs), list(other.outputs), other.name)

    def consumers(self) -> dict[int, list[int]]:
        """Tensor index -> indices of the operators that read it."""
        out: dict[int, list[int]] = {}
        for op in self.operators:
            for t in op.inputs:
                if t >= 0:
                    out.setdefault(t, []).append(op.index)
        return out

    def producers(self) -> dict[int, int]:
        """Tensor index -> index of the operator that writes it."""
        return {t: op.index for op in self.operators for t in op.outputs}


@dataclass(eq=False)
class SignatureDef:
    key: str
    subgraph: int
    inputs: dict[str, int]  # name -> tensor index
    outputs: dict[str, int]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SignatureDef) and dataclasses.astuple(self) == dataclasses.astuple(other)


@dataclass(eq=False)
class Model:
    subgraphs: list[Subgraph]
    description: str = ""
    version: int = 3
    metadata: dict[str, bytes] = field(default_factory=dict)
    signature_defs: list[SignatureDef] = field(default_factory=list)

    @property
    def main(self) -> Subgraph:
        return self.subgraphs[0]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Model) and (
            self.subgraphs == other.subgraphs
            and self.description == other.description
            and self.version == other.version
            and {k: bytes(v) for k, v in self.metadata.items()} == {k: bytes(v) for k, v in other.metadata.items()}
            and self.signature_defs == other.signature_defs
        )

    def op_names(self) -> list[str]:
        return [op.op for sg in self.subgraphs for op in sg.operators]

    def validate(self) -> None:
        """Check the graph is runnable in order and every tensor holds what kernels may rely on.

        Raises ModelError naming the operator and tensor for unsorted or cyclic operators,
        tensors written twice, constants or inputs that an operator overwrites, subgraph inputs that are
        constants, and quantization no kernel can compute with (see :func:`check_quantization`).
        """
        from micronn.errors import ModelError

        for sg in self.subgraphs:
            for t in sg.tensors:
                check_quantization(t, f"subgraph {sg.index} tensor {t.index} ({t.name!r})")
                if t.dtype == INT4 and not t.is_constant:
                    raise ModelError(f"subgraph {sg.index} tensor {t.index} ({t.name!r}) is int4 but not a constant: "
                                     "TFLM keeps int4 for weights only")
            for t in sg.inputs:
                if sg.tensors[t].is_constant:  # setting the input would write into the model's weights
                    raise ModelError(f"subgraph {sg.index}: input tensor {t} ({sg.tensors[t].name!r}) is a constant")
            ready = set(sg.inputs) | {t.index for t in sg.tensors if t.data is not None or t.is_variable}
            written: set[int] = set()
            for op in sg.operators:
                where = f"subgraph {sg.index} operator {op.index} ({op.op})"
                for t in op.intermediates:  # TFLM's allocator refuses intermediates that take memory
                    if sg.tensors[t].nbytes:
                        raise ModelError(f"{where}: intermediate tensor {t} ({sg.tensors[t].name!r}) holds "
                                         f"{sg.tensors[t].nbytes} bytes; TFLM supports only empty intermediates")
                for t in op.inputs:
                    if t >= 0 and t not in ready:
                        later = any(t in o.outputs for o in sg.operators[op.index:])
                        if not later and 0 in sg.tensors[t].shape:  # nothing to read: TFLM runs it (RESHAPE)
                            continue
                        why = "operators are unsorted or cyclic" if later else "nothing produces it"
                        raise ModelError(f"{where} reads tensor {t} ({sg.tensors[t].name!r}) before it is "
                                         f"written: {why}")
                for t in op.outputs:
                    tensor = sg.tensors[t]
                    if t in written or t in sg.inputs or tensor.is_constant:
                        raise ModelError(f"{where} writes tensor {t} ({tensor.name!r}), which is already "
                                         "written, a subgraph input or a constant")
                    written.add(t)
                    ready.add(t)
            for t in sg.outputs:
                if t not in ready:
                    raise ModelError(f"subgraph {sg.index}: output tensor {t} ({sg.tensors[t].name!r}) "
                                     "is never written")


# TFLM keeps zero points as int32; 8- and 16-bit tensors must also hold their zero point, which every
# quantized kernel adds to or subtracts from their values.
_ZERO_POINT_RANGE = {np.dtype(d): (int(np.iinfo(d).min), int(np.iinfo(d).max))
                     for d in (np.int8, np.uint8, np.int16, np.uint16)}
_INT32 = (-(2**31), 2**31 - 1)


def check_quantization(t: Tensor, where: str) -> None:
    """Refuse quantization whose meaning TFLM's arithmetic leaves undefined, with a ModelError naming ``where``.

    Zero points must fit the tensor's storage type (int32 for wider or float types: TFLM truncates them to
    int32); scales must be finite (TFLM turns them into integer multipliers, undefined for NaN and infinities);
    per-channel parameters need a quantized dimension of the tensor holding one channel per scale (a rank-1
    bias may keep its filter's dimension, as converters write it).
    """
    q = t.quant
    if q is None:
        return
    from micronn.errors import ModelError

    lo, hi = _ZERO_POINT_RANGE.get(t.dtype, _INT32)
    zp = np.asarray(q.zero_point)
    bad = np.flatnonzero((zp < lo) | (zp > hi))
    if bad.size:
        raise ModelError(f"{where}: zero point {int(zp[bad[0]])} is outside [{lo}, {hi}], the range of its "
                         f"{t.dtype.name if t.dtype in _ZERO_POINT_RANGE else 'int32'} storage")
    scale = np.asarray(q.scale, np.float32)
    bad = np.flatnonzero(~np.isfinite(scale))
    if bad.size:
        raise ModelError(f"{where}: scale {scale[bad[0]]} is not a finite number")
    n = len(scale)
    if n > 1:
        rank = len(t.shape)
        fits = t.shape[q.axis] == n if 0 <= q.axis < rank else q.axis >= 0 and rank == 1 and t.shape[0] == n
        if not fits:
            raise ModelError(f"{where}: {n} per-channel scales along quantized dimension {q.axis} do not match "
                             f"shape {list(t.shape)}")


# Options fields naming the subgraphs a control-flow op runs, in the order TFLM plans them.
CALLS: dict[str, tuple[str, ...]] = {
    "IF": ("then_subgraph_index", "else_subgraph_index"),
    "WHILE": ("cond_subgraph_index", "body_subgraph_index"),
    "CALL_ONCE": ("init_subgraph_index",),
}


def called_subgraphs(op: Operator) -> list[int]:
    """The subgraphs ``op`` may run (IF: then, else; WHILE: cond, body; CALL_ONCE: init); [] for other ops."""
    if op.custom or op.op not in CALLS or op.options is None:
        return []
    return [int(getattr(op.options, name)) for name in CALLS[op.op]]


def op_macs(sg: Subgraph, op: Operator) -> int:
    """Multiply-accumulates one invoke of ``op`` computes (its products; 0 for ops without a matrix product).

    CONV_2D: output elements x filter taps x filter depth; DEPTHWISE_CONV_2D: output elements x taps;
    TRANSPOSE_CONV: input elements x output channels x taps; FULLY_CONNECTED and BATCH_MATMUL: output elements x
    depth; SVDF: feature and time weights per batch row; UNIDIRECTIONAL_SEQUENCE_LSTM: the gates' input and
    recurrent weights (+ projection) per step and batch row.
    """
    def t(i: int) -> Tensor | None:
        return sg.tensors[i] if 0 <= i < len(sg.tensors) else None

    def size(x: Tensor | None) -> int:
        return int(np.prod(x.shape, dtype=np.int64)) if x is not None else 0

    ins = [t(i) for i in op.inputs]
    out = t(op.outputs[0]) if op.outputs else None
    w = ins[1] if len(ins) > 1 else None
    if op.op == "FetchConv2D" and len(ins) >= 2:
        w = ins[-2]
    if w is None or out is None or not w.shape:
        return 0
    if op.op in ("CONV_2D", "FetchConv2D") and len(w.shape) == 4:
        return size(out) * int(np.prod(w.shape[1:], dtype=np.int64))
    if op.op == "DEPTHWISE_CONV_2D" and len(w.shape) == 4:
        return size(out) * w.shape[1] * w.shape[2]
    if op.op == "TRANSPOSE_CONV" and len(w.shape) == 4 and len(ins) > 2:
        return size(ins[2]) * w.shape[0] * w.shape[1] * w.shape[2]
    if op.op == "FULLY_CONNECTED":
        return size(out) * w.shape[-1]
    if op.op == "BATCH_MATMUL" and ins[0] is not None and len(ins[0].shape) >= 2:
        adj_x = bool(getattr(op.options, "adj_x", False))
        return size(out) * ins[0].shape[-2 if adj_x else -1]
    if op.op == "SVDF" and len(ins) > 2 and ins[0] is not None and ins[2] is not None:
        rows = size(ins[0]) // max(ins[0].shape[-1], 1)  # batch
        return rows * (size(w) + size(ins[2]))  # feature weights, then time weights
    if op.op == "UNIDIRECTIONAL_SEQUENCE_LSTM" and ins[0] is not None and len(ins) > 8:
        rows = size(ins[0]) // max(ins[0].shape[-1], 1)  # time steps x batch
        gates = sum(size(ins[i]) for i in range(1, 9))  # input and recurrent weights of the (up to) four gates
        return rows * (gates + (size(ins[16]) if len(ins) > 16 else 0))  # + projection
    return 0


def random_inputs(model: Model, seed: int = 0) -> list[np.ndarray]:
    """Random values for every input of the main subgraph: the full range of integer types, [-1, 1) for floats.

    ``seed`` is a non-negative integer of any size (numpy's seeding), so every seed a user types names one input."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        from micronn.errors import MicronnError

        raise MicronnError(f"seed must be a non-negative integer, got {seed!r}")
    rng = np.random.default_rng(seed)
    out = []
    for i in model.main.inputs:
        t = model.main.tensors[i]
        if t.dtype.kind in "iu":
            info = np.iinfo(t.dtype)
            out.append(rng.integers(info.min, info.max, t.shape, dtype=t.dtype, endpoint=True))
        elif t.dtype == np.bool_:
            out.append(rng.integers(0, 2, t.shape).astype(np.bool_))
        else:
            out.append(rng.uniform(-1, 1, t.shape).astype(t.dtype))
    return out
