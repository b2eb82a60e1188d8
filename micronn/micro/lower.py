"""Lowering: each operator of a prepared interpreter becomes tasks for the C kernels in ``micronn/micro/kernels``.

A task names a kernel (``mn_<name>``) and its flat word arguments. The arguments come from the Python kernel's
own prepare (multipliers, shifts, activation ranges, window geometry), so the device and the interpreter share
one prepare and compute the same bytes. Addresses stay symbolic until ``pack``: a ``TensorRef`` is a tensor
(activation in the arena or constant weights), a ``ScratchRef`` a scratch buffer the Python kernel requested, a
``ConstRef`` bytes computed here (per-channel biases folded with the input zero point, SHAPE's dimensions).

Kernels by op: CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, SOFTMAX, SVDF, TRANSPOSE_CONV, AVERAGE_POOL_2D,
MAX_POOL_2D (int8); QUANTIZE (integer types); RESHAPE and SHAPE (``mn_copy``); STRIDED_SLICE and TRANSPOSE
(``mn_strided_slice``); CONCATENATION and
PACK (``mn_concatenation``); PAD/PADV2 (any type). Windowed ops whose output the plan streams over their input
get ``stage`` = 1: each output pixel is finished in a stack buffer before it is stored, the unit the planner's
gap assumes.
"""

from __future__ import annotations

import pathlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from micronn.errors import MicronnError, UnsupportedError
from micronn.kernels.transpose_conv import transpose_conv_padding

KERNELS = pathlib.Path(__file__).parent / "kernels"
# the ops whose kernels may run with their output placed over their input (see module docstring); WHILE copies
# its state in the interpreter's order over the same arena bytes, so any overlap gives the interpreter's result
STREAMING = frozenset({"RESHAPE", "QUANTIZE", "PAD", "PADV2", "CONV_2D", "DEPTHWISE_CONV_2D", "AVERAGE_POOL_2D",
                       "MAX_POOL_2D", "WHILE", "STRIDED_SLICE", "CONCATENATION"})
INT_TYPES = {"int8": 0, "uint8": 1, "int16": 2, "int32": 3}  # mn_load / mn_store type codes


class LowerError(MicronnError):
    """An operator cannot be turned into device tasks as prepared (e.g. its output overlaps an input)."""


@dataclass(frozen=True)
class TensorRef:
    """The address of tensor ``tensor`` of subgraph ``subgraph`` (in the arena, or constant data)."""

    subgraph: int
    tensor: int


@dataclass(frozen=True)
class ScratchRef:
    """The address of scratch buffer ``scratch`` that operator ``op`` (of subgraph ``subgraph``) requested in
    prepare."""

    op: int
    scratch: int
    subgraph: int = 0


@dataclass(frozen=True, eq=False)
class ConstRef:
    """Host-computed bytes placed on the device once (little-endian, as the device reads them)."""

    data: np.ndarray


@dataclass(frozen=True)
class StorageRef:
    """The address of the storage function spilled tensors go through (TinySeg's Spill/Fetch):
    ``int fn(uint32_t id, uint32_t offset, void *buf, uint32_t n, uint32_t write)`` copies ``n`` bytes between
    ``buf`` and byte ``offset`` of the tensor stored under ``id`` (``write`` 1: into storage), returns 0 on success.
    Whoever places the tasks provides it: the host-driven runtime a memory-backed one, an exported project the
    function its application declares (each learns the ids and sizes from the model's Spill operators)."""


@dataclass(frozen=True, eq=False)
class TaskList:
    """The address of a list of kernel calls another kernel makes (a control-flow operator's subgraph): the words
    ``n, fn_0, args_0, ..., fn_n-1, args_n-1`` (kernel address, address of its packed argument words)."""

    tasks: list[Task]


Arg = int | TensorRef | ScratchRef | ConstRef | StorageRef | TaskList


@dataclass
class Task:
    """One kernel call: ``symbol(args)`` on behalf of operator ``op``."""

    symbol: str
    args: list[Arg]
    op: int


def sources() -> list[pathlib.Path]:
    """The kernels' C files (compile each with ``include_dir()`` on the include path)."""
    return sorted(KERNELS.glob("*.c"))


def include_dir() -> pathlib.Path:
    return KERNELS


def pack(task: Task, resolve: Callable[[TensorRef | ScratchRef | ConstRef], int], word_size: int) -> bytes:
    """The task's argument words, little-endian: integers as two's complement, references resolved to addresses."""
    out = bytearray()
    for a in task.args:
        v = int(a) if isinstance(a, (int, np.integer)) else int(resolve(a))
        if not -(1 << 31) <= v < 1 << (8 * word_size):
            raise LowerError(f"task {task.symbol} of operator {task.op}: argument {v} does not fit a "
                             f"{word_size}-byte word")
        out += (v & ((1 << (8 * word_size)) - 1)).to_bytes(word_size, "little")
    return bytes(out)


def _i32(a: Any) -> ConstRef:
    return ConstRef(np.ascontiguousarray(np.asarray(a, np.int64).astype("<i4")))


def _wrap(a: np.ndarray) -> np.ndarray:
    return ((np.asarray(a, np.int64) + 2**31) & 0xFFFFFFFF) - 2**31


def spans_meet(a: tuple[int, int] | None, b: tuple[int, int] | None) -> bool:
    """Whether two (offset, bytes) places in the arena share a byte (None, a tensor outside it: never)."""
    return a is not None and b is not None and a[0] < b[0] + b[1] and b[0] < a[0] + a[1]


def _placements(interp: Any, subgraph: int = 0) -> dict[int, tuple[int, int]]:
    """Tensor of ``subgraph`` -> (arena offset, bytes), from the interpreter's plan."""
    return {b["tensor"]: (b["offset"], b["size"]) for b in interp.arena_report()["buffers"]
            if b["kind"] == "tensor" and b["subgraph"] == subgraph}


class _Op:
    """What the lowering of one operator needs: its node, kernel, tensors and where they lie in the arena."""

    def __init__(self, interp: Any, index: int, places: dict[int, tuple[int, int]], subgraph: int = 0):
        self.interp, self.subgraph = interp, subgraph
        self.index, self.node = index, interp._all_nodes[subgraph][index]
        self.k = interp._all_kernels[subgraph][index]
        self.op = self.node.op
        self.name, self.places = self.op.op, places

    def ref(self, t: int) -> TensorRef:
        return TensorRef(self.subgraph, t)

    def inp(self, i: int) -> TensorRef:
        return self.ref(self.op.inputs[i])

    def out(self, i: int = 0) -> TensorRef:
        return self.ref(self.op.outputs[i])

    def overlaps(self) -> bool:
        """Whether the output's bytes overlap any input's in the plan."""
        o = self.places.get(self.op.outputs[0])
        if o is None:
            return False
        return any(spans_meet(self.places.get(t) if t >= 0 else None, o) for t in self.op.inputs)

    def in_place(self) -> bool:
        """Whether the plan put the output exactly over input 0 (e.g. an in-place CAST)."""
        o, p = self.places.get(self.op.outputs[0]), self.places.get(self.op.inputs[0])
        return o is not None and p is not None and o[0] == p[0] and self.overlaps()

    def unsupported(self, dtype: str) -> UnsupportedError:
        return UnsupportedError([(self.name, dtype)])

    def task(self, symbol: str, *args: Arg) -> Task:
        return Task(symbol, list(args), self.index)


def _requant_args(mults: np.ndarray, shifts: np.ndarray, n: int, shift8: bool = False) -> list[Arg]:
    """Per-channel multipliers (int32) and shifts: int32, or with ``shift8`` int8 (the convolutions' kernels: a
    QuantizeMultiplier shift lies in [-31, 30], and 3 bytes less per channel is most of their flash beyond the
    weights)."""
    shifts = np.broadcast_to(np.asarray(shifts, np.int64).reshape(-1), (n,))
    if shift8:
        if shifts.size and not (-128 <= shifts.min() and shifts.max() <= 127):
            raise LowerError(f"a per-channel shift in [{shifts.min()}, {shifts.max()}] does not fit int8")
        packed: Arg = ConstRef(np.ascontiguousarray(shifts.astype(np.int8)))
    else:
        packed = _i32(shifts)
    return [_i32(np.broadcast_to(np.asarray(mults).reshape(-1), (n,))), packed]


def _biases(k: Any, channels: int, wsum: np.ndarray, win: Any = None, fh: int = 1, fw: int = 1) -> list[ConstRef]:
    """(bias, bias + input_offset * sum(weights)) per output channel, wrapped to int32 like the accumulators.

    Kernels read the plain bias only for windows the input's border cuts; when the window ``win`` of an
    ``fh`` x ``fw`` filter cuts none, both words are the full bias, so the program holds one array, not two."""
    bias = np.asarray(k.bias, np.int64).reshape(-1)[:channels] if k.bias is not None else np.zeros(channels, np.int64)
    full = _i32(_wrap(bias - int(k.in_zp) * wsum.astype(np.int64)))
    uncut = win is not None and win.pad_top <= 0 and win.pad_left <= 0 and \
        (win.out_h - 1) * win.stride_h - win.pad_top + (fh - 1) * win.dilation_h < win.in_h and \
        (win.out_w - 1) * win.stride_w - win.pad_left + (fw - 1) * win.dilation_w < win.in_w
    return [full if uncut else _i32(bias), full]


def paired_rows(w: np.ndarray) -> tuple[ConstRef, ConstRef]:
    """int8 weight rows (units, depth) in the paired layout the FULLY_CONNECTED and SVDF kernels read (see
    mn_pair_block in mn_kernels.h), and its corrections. The layout: halfwords 256 * w[r + 1] + w[r] (rows r even),
    depth padded to a multiple of 4 and rows to an even count with zeros, per group of 4 inputs the halfwords of
    inputs 0, 2, 1, 3, tiles of two pairs interleaved group by group, a last single pair after them. Where
    w[r + 1] = -128 beside a negative w[r] the halfword would leave int16: it holds -127 instead, and the
    corrections (int32 pairs row r + 1, input, sorted by row, ended by INT32_MAX) say which dot products
    subtract that input once."""
    units, depth = w.shape
    d4, u2 = -(-depth // 4) * 4, units + units % 2
    p = np.zeros((u2, d4), np.int64)
    p[:units, :depth] = w
    bump = (p[1::2] == -128) & (p[0::2] < 0)
    h = 256 * (p[1::2] + bump) + p[0::2]  # (pairs, d4)
    pair, col = np.nonzero(bump)
    fix = np.stack([2 * pair + 1, col], 1)
    fix = np.concatenate([fix[np.lexsort((fix[:, 1], fix[:, 0]))].reshape(-1), [2**31 - 1, 0]])
    h = h.reshape(u2 // 2, d4 // 4, 4)[:, :, [0, 2, 1, 3]]
    full = u2 // 4 * 2  # pairs in whole tiles of four rows
    tiles = h[:full].reshape(full // 2, 2, d4 // 4, 4).transpose(0, 2, 1, 3).reshape(-1)
    return (ConstRef(np.ascontiguousarray(np.concatenate([tiles, h[full:].reshape(-1)]).astype("<i2"))),
            _i32(fix))


def _check_int8(o: _Op, kind: str) -> None:
    if kind != "int8":
        raise o.unsupported(kind)
    if not getattr(o.k, "constant", True):
        raise o.unsupported(f"{kind} with non-constant weights")


def _conv(o: _Op) -> list[Task]:
    k, inp = o.k, o.node.inputs[0]
    _check_int8(o, k.kind)
    w, win = k.weights(o.node), k.win
    oc, fh, fw, fc = w.shape
    return [o.task("mn_conv_2d_s8", o.out(), o.inp(0), o.inp(1), *_biases(k, oc, w.reshape(oc, -1).sum(1), win, fh, fw),
                   *_requant_args(k.mults, k.shifts, oc, shift8=True), inp.shape[0], win.in_h, win.in_w, inp.shape[3],
                   win.out_h, win.out_w, oc, fh, fw, fc, win.stride_h, win.stride_w, win.dilation_h, win.dilation_w,
                   win.pad_top, win.pad_left, -int(k.in_zp), int(k.out_zp), int(k.act_min), int(k.act_max),
                   int(o.overlaps()))]


def _depthwise(o: _Op) -> list[Task]:
    k, inp = o.k, o.node.inputs[0]
    _check_int8(o, k.kind)
    w, win = k.weights(o.node), k.win
    _, fh, fw, oc = w.shape
    return [o.task("mn_depthwise_conv_2d_s8", o.out(), o.inp(0), o.inp(1),
                   *_biases(k, oc, w.reshape(-1, oc).sum(0), win, fh, fw),
                   *_requant_args(k.mults, k.shifts, oc, shift8=True),
                   inp.shape[0], win.in_h, win.in_w, inp.shape[3], win.out_h, win.out_w, k.mult, fh, fw,
                   win.stride_h, win.stride_w, win.dilation_h, win.dilation_w, win.pad_top, win.pad_left,
                   -int(k.in_zp), int(k.out_zp), int(k.act_min), int(k.act_max), int(o.overlaps()))]


def _fully_connected(o: _Op) -> list[Task]:
    k = o.k
    _check_int8(o, k.kind)
    w = k.weights(o.node).reshape(-1, k.depth)[:k.units]
    per_channel = np.asarray(k.mult64).size > 1 or np.asarray(k.shift64).size > 1
    pairs, fix = paired_rows(w)
    return [o.task("mn_fully_connected_s8", o.out(), o.inp(0), pairs, _biases(k, k.units, w.sum(1))[1],
                   *_requant_args(k.mult64, k.shift64, k.units), k.batches, k.depth, k.units, int(k.out_zp),
                   int(k.act_min), int(k.act_max), int(per_channel), fix)]


def _pool(o: _Op) -> list[Task]:
    k, inp = o.k, o.node.inputs[0]
    if k.kind != "int8":
        raise o.unsupported(k.kind)
    win = k.win
    symbol = "mn_average_pool_2d_s8" if o.name == "AVERAGE_POOL_2D" else "mn_max_pool_2d_s8"
    return [o.task(symbol, o.out(), o.inp(0), inp.shape[0], win.in_h, win.in_w, inp.shape[3], win.out_h, win.out_w,
                   win.filter_h, win.filter_w, win.stride_h, win.stride_w, win.pad_top, win.pad_left,
                   int(k.act_min), int(k.act_max), int(o.overlaps()))]


def _softmax(o: _Op) -> list[Task]:
    k, inp = o.k, o.node.inputs[0]
    if k.in_dtype != "int8":
        raise o.unsupported(k.in_dtype)
    depth = inp.shape[-1]
    size = int(np.prod(inp.shape))
    if size == 0:
        return []
    return [o.task("mn_softmax_s8", o.out(), o.inp(0), size // depth, depth, int(k.multiplier), int(k.left_shift),
                   int(k.diff_min), 16 if k.out_dtype == "int16" else 8)]


def _svdf(o: _Op) -> list[Task]:
    k, ins = o.k, o.node.inputs
    if not k.quantized or ins[4].dtype != np.int16:
        raise o.unsupported(ins[0].dtype.name if not k.quantized else "int8 with an int8 state")
    batch, input_size = ins[0].shape
    # constant feature weights (every model micronn knows) are paired; others stay plain rows (PAIRED 0)
    paired = ins[1].is_constant
    w, fix = paired_rows(np.asarray(o.node.input(1))) if paired else (o.inp(1), _i32([2**31 - 1, 0]))
    return [o.task("mn_svdf_s8", o.out(), o.inp(0), w, *(o.inp(i) for i in range(2, 5)), batch, input_size,
                   k.num_filters, k.memory_size, k.rank, int(k.input_zp), int(k.state_zp), int(k.output_zp),
                   int(k.mult_1), int(k.shift_1), int(k.mult_2), int(k.shift_2), int(paired), fix)]


def _transpose_conv(o: _Op) -> list[Task]:
    k, w, inp, out = o.k, o.node.inputs[1], o.node.inputs[2], o.node.outputs[0]
    if k.dtype != np.int8:
        raise o.unsupported(np.dtype(k.dtype).name)
    oc, fh, fw, _ = w.shape
    opts = o.node.options
    bias = o.inp(3) if k.has_bias else _i32(np.zeros(oc))
    return [o.task("mn_transpose_conv_s8", o.out(), o.inp(2), o.inp(1), bias, _i32(k.mult), _i32(k.shift),
                   ScratchRef(o.index, k.scratch_id), getattr(k, "band_rows", out.shape[1]), inp.shape[0],
                   inp.shape[1], inp.shape[2], inp.shape[3], out.shape[1], out.shape[2], oc, fh, fw, opts.stride_h,
                   opts.stride_w, transpose_conv_padding(opts.padding, opts.stride_h, out.shape[1], fh),
                   transpose_conv_padding(opts.padding, opts.stride_w, out.shape[2], fw), int(k.input_offset),
                   int(k.output_offset), int(k.act_min), int(k.act_max))]


def _quantize(o: _Op) -> list[Task]:
    k = o.k
    if k.in_dtype not in INT_TYPES or k.out_dtype not in INT_TYPES:
        raise o.unsupported(f"{k.in_dtype} -> {k.out_dtype}")
    return [o.task("mn_quantize", o.out(), o.inp(0), int(np.prod(o.node.inputs[0].shape)), INT_TYPES[k.in_dtype],
                   INT_TYPES[k.out_dtype], int(k.in_zero_point), int(k.out_zero_point), int(k.multiplier),
                   int(k.shift), k.out_min, k.out_max)]


def _copy(o: _Op) -> list[Task]:
    return [o.task("mn_copy", o.out(), o.inp(0), o.node.outputs[0].nbytes)]


def _shape(o: _Op) -> list[Task]:
    return [o.task("mn_copy", o.out(), _i32(o.k.dims), 4 * len(o.k.dims))]


def _byte_strides(t: Any) -> list[int]:
    """Each axis's step through the bytes of tensor ``t`` (row-major)."""
    return [int(np.prod(t.shape[a + 1:], dtype=np.int64)) * t.dtype.itemsize for a in range(len(t.shape))]


def _strided_copy(o: _Op, start: int, axes: list[tuple[int, int]]) -> list[Task]:
    """kernels/strided_slice.c over input 0 from byte ``start``: up to 4 (count, byte stride) axes, outermost first."""
    axes = [(1, 0)] * (4 - len(axes)) + axes
    size = o.node.inputs[0].dtype.itemsize
    return [o.task("mn_strided_slice", o.out(), o.inp(0), size, start, *(v for a in axes for v in a))]


def _strided_slice(o: _Op) -> list[Task]:
    """A slice the plan placed exactly where its bytes lie in the input (micronn's stripes: a contiguous run of
    rows) is already computed: no task. Any other overlap is refused."""
    inp = o.node.inputs[0]
    size = inp.dtype.itemsize
    strides = _byte_strides(inp)
    start, axes = 0, []
    for index, dim, stride in zip(o.k.index_t, inp.shape, strides):
        if isinstance(index, slice):
            first, stop, step = index.indices(dim)
            axes.append((len(range(first, stop, step)), step * stride))
        else:
            first = index
            axes.append((1, 0))
        start += first * stride
    if o.overlaps():
        src = o.places.get(o.op.inputs[0])
        runs = [(n, st) for n, st in axes if n > 1]  # contiguous: each run steps over the runs inside it
        expected = [(n, int(np.prod([m for m, _ in runs[i + 1:]], dtype=np.int64)) * size)
                    for i, (n, _) in enumerate(runs)]
        if src is None or runs != expected or o.places[o.op.outputs[0]][0] != src[0] + start:
            raise LowerError(f"operator {o.index} (STRIDED_SLICE): its output overlaps its input other than as the "
                             "slice's own bytes, which its device kernel does not support")
        return []  # the plan put the slice where its bytes already are
    return _strided_copy(o, start, axes)


def _transpose(o: _Op) -> list[Task]:
    """The strided copy of STRIDED_SLICE: each output axis walks its input axis's stride. Unit axes go and output
    axes that walk one run of the input merge, so any transpose whose input has at most 4 such runs lowers."""
    inp = o.node.inputs[0]
    strides = _byte_strides(inp)
    axes: list[tuple[int, int]] = []
    for a in o.k.perm:
        n, stride = int(inp.shape[a]), strides[a]
        if n == 1:
            continue
        if axes and axes[-1][1] == n * stride:  # the previous axis steps over this one's whole run
            axes[-1] = (axes[-1][0] * n, stride)
        else:
            axes.append((n, stride))
    if len(axes) > 4:
        raise o.unsupported(f"{inp.dtype.name} permuting more than 4 runs")
    if o.overlaps():
        raise LowerError(f"operator {o.index} (TRANSPOSE): its output overlaps its input, which its device kernel "
                         "does not support")
    return _strided_copy(o, 0, axes)


def _concatenation(o: _Op) -> list[Task]:
    """Parts the plan placed exactly at their place in the output (micronn's stripes, one block each) are copied
    onto themselves, which leaves them as they are; any other overlap is refused."""
    out, axis = o.node.outputs[0], o.k.axis
    size, pairs = out.dtype.itemsize, []
    outer = int(np.prod(out.shape[:axis], dtype=np.int64))
    at = o.places.get(o.op.outputs[0], (0, 0))[0]
    for i, t in enumerate(o.node.inputs):
        shape = tuple(t.shape) if o.name == "CONCATENATION" else (*t.shape[:axis], 1, *t.shape[axis:])
        row = int(np.prod(shape[axis:], dtype=np.int64)) * size
        if o.overlaps() and o.name == "CONCATENATION":
            p, o_place = o.places.get(o.op.inputs[i]), o.places[o.op.outputs[0]]
            if spans_meet(p, o_place) and (outer != 1 or p[0] != at):
                raise LowerError(f"operator {o.index} (CONCATENATION): input {i} overlaps the output other than at "
                                 "its own place in it, which its device kernel does not support")
        pairs += [o.inp(i), row]
        at += row
    if o.overlaps() and o.name != "CONCATENATION":
        raise LowerError(f"operator {o.index} ({o.name}): its output overlaps an input, which its device kernel does "
                         "not support")
    return [o.task("mn_concatenation", o.out(), outer, len(o.node.inputs), *pairs)]


def _pad(o: _Op) -> list[Task]:
    k, inp, out = o.k, o.node.inputs[0], o.node.outputs[0]
    if k.block is None:
        raise o.unsupported(f"{inp.dtype.name} with negative paddings")
    lead = 5 - len(out.shape)
    value = o.inp(2) if k.has_value else ConstRef(np.ascontiguousarray(k.default.reshape(1).astype(
        k.default.dtype.newbyteorder("<"))))
    return [o.task("mn_pad", o.out(), o.inp(0), value, out.dtype.itemsize, *([1] * lead + list(out.shape)),
                   *([1] * lead + list(inp.shape)), *([0] * lead + [s.start for s in k.block]))]


LOWERINGS: dict[str, Callable[[_Op], list[Task]]] = {
    "CONV_2D": _conv, "DEPTHWISE_CONV_2D": _depthwise, "FULLY_CONNECTED": _fully_connected,
    "AVERAGE_POOL_2D": _pool, "MAX_POOL_2D": _pool, "SOFTMAX": _softmax, "SVDF": _svdf,
    "TRANSPOSE_CONV": _transpose_conv, "QUANTIZE": _quantize, "RESHAPE": _copy, "SHAPE": _shape,
    "STRIDED_SLICE": _strided_slice, "TRANSPOSE": _transpose, "CONCATENATION": _concatenation,
    "PACK": _concatenation, "PAD": _pad, "PADV2": _pad,
}


# (op, type of its first input) -> lowering: kernel families beyond the int8 set above register here from their
# own modules (``lower_<family>.py``, imported by ``micronn.micro``); they win over LOWERINGS for their type
TYPED: dict[tuple[str, str], Callable[[_Op], list[Task]]] = {}
TYPED_STREAMING: set[tuple[str, str]] = set()  # of those, the ones whose kernels accept an overlapping output


def lowering(op: str, *dtypes: str, streaming: bool = False
             ) -> Callable[[Callable[[_Op], list[Task]]], Callable[[_Op], list[Task]]]:
    """Register a lowering of ``op`` when its first input has one of ``dtypes``; ``streaming``: its kernel is
    correct when the plan places the output over an input (the lowering checks which overlaps it handles)."""
    def register(fn: Callable[[_Op], list[Task]]) -> Callable[[_Op], list[Task]]:
        for d in dtypes:
            TYPED[(op, d)] = fn
            if streaming:
                TYPED_STREAMING.add((op, d))
        return fn
    return register


def _lower(interp: Any, op_index: int, places: dict[int, tuple[int, int]], subgraph: int = 0) -> list[Task]:
    o = _Op(interp, op_index, places, subgraph)
    first = next((t for t in o.node.inputs if t is not None), None)
    key = (o.name, first.dtype.name if first is not None else "")
    fn = TYPED.get(key) or LOWERINGS.get(o.name)
    streams = key in TYPED_STREAMING if key in TYPED else o.name in STREAMING
    if fn is None:
        t = next((t for t in o.node.inputs if t is not None), o.node.outputs[0])
        raise o.unsupported(t.dtype.name)
    if not streams and o.overlaps():
        raise LowerError(f"operator {op_index} ({o.name}): its output overlaps an input in the plan, which its "
                         "device kernel does not support")
    tasks = fn(o)
    if subgraph:  # the lowerings name scratch buffers by operator index alone
        for t in tasks:
            t.args = [ScratchRef(a.op, a.scratch, subgraph) if isinstance(a, ScratchRef) else a for a in t.args]
    return tasks


def _subgraph_tasks(interp: Any, subgraph: int) -> list[Task]:
    """Every operator of ``subgraph`` as tasks (each unsupported pair reported at once)."""
    places, tasks, missing = _placements(interp, subgraph), [], []
    for i in range(len(interp._all_nodes[subgraph])):
        try:
            tasks += _lower(interp, i, places, subgraph)
        except UnsupportedError as e:
            missing += e.pairs
    if missing:
        raise UnsupportedError(missing)
    return tasks


def _while(o: _Op) -> list[Task]:
    """WHILE as one kernel (kernels/while.c) that runs the cond and body subgraphs' tasks as lists and copies
    the loop state between the operator's tensors and theirs, in the interpreter's order (less the copies
    _while_elisions finds needless)."""
    k, it = o.k, o.interp
    cond, body = k.cond.index, k.body.index
    sg = it.model.subgraphs
    fields = []
    for i, elide in enumerate(_while_elisions(o, cond, body)):
        refs = [o.inp(i), o.out(i), TensorRef(cond, sg[cond].inputs[i]), TensorRef(body, sg[body].inputs[i]),
                TensorRef(body, sg[body].outputs[i])]
        sizes = {int(it._all_views[r.subgraph][r.tensor].nbytes) for r in refs}
        if len(sizes) != 1:
            raise LowerError(f"operator {o.index} (WHILE): loop state {i} has different byte counts "
                             f"{sorted(sizes)} in the operator and its subgraphs; the copies would fail")
        fields += [*refs, sizes.pop(), *elide]
    flag = TensorRef(cond, sg[cond].outputs[0])
    return [o.task("mn_while", flag, TaskList(_subgraph_tasks(it, cond)), TaskList(_subgraph_tasks(it, body)),
                   len(o.op.inputs), *fields)]


def _while_elisions(o: _Op, cond: int, body: int) -> list[tuple[int, int, int]]:
    """Per loop state, the copies kernels/while.c may leave out, as (flags, lo, hi): each skipped copy would
    write bytes no kernel reads before they are written again, or the bytes already there, in this arena plan.

    - flag 1: the condition never reads its input (no cond operator takes it, it is no cond output), and its
      bytes meet none of the operator's inputs and outputs or the other cond inputs (which the copies into it
      would overwrite): no copy into it at all.
    - flag 2: the body passes the state through (its output is its input tensor, which no body operator writes)
      and the operator's output bytes meet no tensor the loop writes, so they keep the value copied in once. After
      the first iteration the copy into the body restores only bytes [lo, hi) of its input, where anything the
      loop writes between two body runs (cond tensors, the other states' copies) meets it; the copy back, the same
      bytes, goes."""
    it, sg = o.interp, o.interp.model.subgraphs
    n, parent = len(o.op.inputs), o.subgraph
    places = {s: _placements(it, s) for s in range(len(sg))}
    ins = [places[parent].get(t) for t in o.op.inputs]
    outs = [places[parent].get(t) for t in o.op.outputs]
    c_in = [places[cond].get(t) for t in sg[cond].inputs]
    b_in = [places[body].get(t) for t in sg[body].inputs]
    b_out = [places[body].get(t) for t in sg[body].outputs]

    cond_reads = {t for op in sg[cond].operators for t in op.inputs} | set(sg[cond].outputs)
    flags = [0] * n
    for i in range(n):
        if (c_in[i] is not None and sg[cond].inputs[i] not in cond_reads
                and not any(spans_meet(c_in[i], s) for s in [*ins, *outs, *(c for j, c in enumerate(c_in) if j != i)])):
            flags[i] |= 1
    # the tensors of subgraphs other than the parent (the cond, the body and what they call) but the loop's own
    # cond and body inputs, which only the copies write (listed below)
    own = {(cond, t) for t in sg[cond].inputs} | {(body, t) for t in sg[body].inputs}
    inner = [span for s in range(len(sg)) if s != parent for t, span in places[s].items() if (s, t) not in own]
    result = []
    for i in range(n):
        t = sg[body].inputs[i]
        passed = (sg[body].outputs[i] == t and b_in[i] is not None and outs[i] is not None
                  and not any(t in op.outputs for op in sg[body].operators))
        # written while the loop runs, besides the body's input i: inner tensors, copies into other states' places
        written = list(inner)
        written += [b for j, b in enumerate(b_in) if j != i]
        written += [x for j in range(n) if j != i for x in (outs[j], b_out[j])]
        written += [c for j, c in enumerate(c_in) if not flags[j] & 1]
        if not passed or any(spans_meet(outs[i], w) for w in written) or (
                spans_meet(outs[i], b_in[i]) and outs[i] != b_in[i]):
            result.append((flags[i], 0, 0))
            continue
        start, size = b_in[i]
        hit = [(max(w[0], start) - start, min(w[0] + w[1], start + size) - start) for w in written
               if spans_meet(w, b_in[i])]
        lo, hi = (min(a for a, _ in hit), max(b for _, b in hit)) if hit else (0, 0)
        result.append((flags[i] | 2, lo, hi))
    return result


def _gather(o: _Op) -> list[Task]:
    k, out = o.k, o.node.outputs[0]
    batch, outer, axis, inner = (int(v) for v in k.in_shape)
    count = int(np.prod(o.node.inputs[1].shape, dtype=np.int64)) // max(batch, 1)
    return [o.task("mn_gather", o.out(), o.inp(0), o.inp(1), batch, outer, axis, inner * out.dtype.itemsize, count)]


def _split(o: _Op) -> list[Task]:
    k, inp = o.k, o.node.inputs[o.k.data]
    shape, size = [int(d) for d in inp.shape], inp.dtype.itemsize
    outer, inner = int(np.prod(shape[:k.axis], dtype=np.int64)), int(np.prod(shape[k.axis + 1:], dtype=np.int64))
    parts, offset = [], 0
    for i, t in enumerate(o.node.outputs):
        n = int(t.shape[k.axis]) * inner * size
        parts += [o.out(i), offset, n]
        offset += n
    return [o.task("mn_split", o.inp(k.data), outer, shape[k.axis] * inner * size, len(o.node.outputs), *parts)]


LOWERINGS.update({"WHILE": _while, "GATHER": _gather, "SPLIT": _split, "SPLIT_V": _split})

# Kernels that can fail: they leave a non-zero code in ``mn_status`` (a storage function's return, or one of the
# kernels' own codes below), which whoever runs the tasks reads after them and clears. TFLM fails the invoke in each
# of the kernels' own cases; a device kernel cannot raise, so it writes defined bytes and reports.
FALLIBLE = frozenset({"mn_spill", "mn_fetch", "mn_fetch_conv_2d_s8", "mn_gather",
                      "mn_signal_filter_bank_square_root_u64", "mn_div_s32"})
GATHER_BAD_POSITION = -1001  # kernels/gather.c
SQRT_BAD_SCALE = -1002  # kernels/signal_filter_bank_square_root.c
DIV_BAD_DIVISOR = -1003  # kernels/div_s32.c
KERNEL_FAILURES = {
    GATHER_BAD_POSITION: "a GATHER position lies outside its axis",
    SQRT_BAD_SCALE: "a SignalFilterBankSquareRoot scale (its shift) lies outside [0, 31]",
    DIV_BAD_DIVISOR: "an int32 DIV divides by zero (or INT32_MIN by -1)",
}


# Argument words a generic kernel never reads, kept in its tasks for the generated kernels that take the same words
# (micronn.micro.templates): an exported program writes 0 there, so their constants stay out of flash.
# DEPTHWISE_CONV_2D's plain bias: the kernel derives it from bias_full (kernels/depthwise_conv_2d.c).
UNREAD: dict[str, frozenset[int]] = {"mn_depthwise_conv_2d_s8": frozenset({3})}


def read_args(task: Task) -> list[Arg]:
    """The task's argument words, those its kernel never reads (UNREAD) as 0."""
    skip = UNREAD.get(task.symbol, frozenset())
    return [0 if i in skip else a for i, a in enumerate(task.args)]


# The generic kernels' optional paths (kernels/mn_kernels.h): an exported program compiles out those no call takes.
def kernel_config(tasks: list[Task]) -> dict[str, int]:
    """``#define``s of mn_config.h for a program of ``tasks`` (and the calls they make): 0 for each path no call
    takes; paths of kernels the program does not call are 0 too."""
    need = {"MN_STAGE": False, "MN_DILATION": False, "MN_CONV_GROUPS": False, "MN_CONV_CUT": False,
            "MN_CONV_ONE": False, "MN_DW_TAIL": False}

    def word(t: Task, i: int) -> int | None:
        a = t.args[i]
        return int(a) if isinstance(a, int | np.integer) else None

    def cut(t: Task) -> bool:  # whether the border cuts a window of a CONV_2D call (as _biases)
        w = [word(t, i) for i in (8, 9, 11, 12, 14, 15, 17, 18, 19, 20, 21, 22)]
        if None in w:
            return True
        in_h, in_w, out_h, out_w, fh, fw, sh, sw, dh, dw, pad_t, pad_l = w
        return pad_t > 0 or pad_l > 0 or (out_h - 1) * sh - pad_t + (fh - 1) * dh >= in_h or \
            (out_w - 1) * sw - pad_l + (fw - 1) * dw >= in_w

    def visit(ts: list[Task]) -> None:
        for t in ts:
            for a in t.args:
                if isinstance(a, TaskList):
                    visit(a.tasks)
            if t.symbol == "mn_conv_2d_s8":  # kernels/conv_2d.c's word order
                stage, dil, groups = word(t, 27), (word(t, 19), word(t, 20)), (word(t, 10), word(t, 16))
                grouped, out_c = None in groups or groups[0] != groups[1], word(t, 13)
                need["MN_CONV_GROUPS"] |= grouped
                need["MN_CONV_CUT"] |= cut(t)
                need["MN_CONV_ONE"] |= grouped or cut(t) or out_c is None or out_c % 2 != 0
            elif t.symbol == "mn_depthwise_conv_2d_s8":  # kernels/depthwise_conv_2d.c's word order
                stage, dil, mult, in_c = word(t, 26), (word(t, 18), word(t, 19)), word(t, 13), word(t, 10)
                need["MN_DW_TAIL"] |= mult != 1 or in_c is None or in_c % 4 != 0
            else:
                continue
            need["MN_STAGE"] |= stage != 0
            need["MN_DILATION"] |= dil != (1, 1)

    visit(tasks)
    return {k: 0 for k, v in need.items() if not v}


def fallible(task: Task) -> bool:
    """Whether ``task`` (or a call it makes) can fail."""
    return task.symbol in FALLIBLE or any(isinstance(a, TaskList) and any(fallible(t) for t in a.tasks)
                                          for a in task.args)


def lower(interp: Any, op_index: int) -> list[Task]:
    """The tasks that compute operator ``op_index`` of the main subgraph (after ``interp.allocate_tensors()``)."""
    interp._ensure()
    if not 0 <= op_index < len(interp._nodes):
        raise LowerError(f"operator {op_index} out of range ({len(interp._nodes)} operators)")
    return _lower(interp, op_index, _placements(interp))


def lower_model(interp: Any, fuse: bool = False) -> list[Task]:
    """The tasks of every operator of the main subgraph, in order; every unsupported (op, type) reported at once.
    ``fuse`` (NativeModel's): runs of int32 elementwise operators become one task each (``fuse_chains``), a
    depthwise convolution of a one-channel image a CONV_2D (``_one_channel_conv``)."""
    interp._ensure()
    places, tasks, missing = _placements(interp), [], []
    for i in range(len(interp._nodes)):
        try:
            tasks += _lower(interp, i, places)
        except UnsupportedError as e:
            missing += e.pairs
    if missing:
        raise UnsupportedError(missing)
    return fuse_chains(interp, [_one_channel_conv(interp, t) for t in tasks], places) if fuse else tasks


def _one_channel_conv(interp: Any, t: Task) -> Task:
    """A depthwise convolution of a one-channel image (micro_speech's first layer: 1 channel, multiplier 8) as the
    CONV_2D it is: filter (1, fh, fw, oc) read as (oc, fh, fw, 1), the same sums, biases and requantization per
    output channel, the same streaming over the input where the plan overlaps them (both kernels read a window of
    the same input pixels per output pixel); the host's CONV_2D port sums such windows without interleaving taps.
    Other tasks are returned as they are."""
    if t.symbol != "mn_depthwise_conv_2d_s8" or t.args[10] != 1:
        return t
    node, k = interp._nodes[t.op], interp._kernels[t.op]
    w = np.asarray(k.weights(node), np.int8)
    filt = ConstRef(np.ascontiguousarray(w.transpose(3, 1, 2, 0)))
    a = t.args
    return Task("mn_conv_2d_s8", [*a[:2], filt, *a[3:16], 1, *a[16:]], t.op)


# ---- fused int32 elementwise chains (kernels/chain_s32.c) -------------------------------------------------------

CHAIN_STEPS = {"ADD": 0, "SUB": 1, "MUL": 2, "DIV": 3, "MINIMUM": 4, "MAXIMUM": 5}
INT32_RANGE = (-(1 << 31), (1 << 31) - 1)


def _chain_step(interp: Any, task: Task) -> tuple[int, int, int, int, int] | None:
    """(chain input tensor, code, constant, lo, hi) of an int32 ADD/SUB/MUL/DIV/MINIMUM/MAXIMUM task whose other
    operand is a one-element constant (second for SUB and DIV; a DIV by neither 0 nor -1, which cannot fail); for a
    CAST between integer types (int32 at one end at least), (input, -1, its task's input and output type codes, 0);
    else None."""
    g = interp.model.main
    op = g.operators[task.op]
    if len(op.outputs) != 1 or op.custom:
        return None
    y = g.tensors[op.outputs[0]]
    if op.op == "CAST" and task.symbol == "mn_cast" and len(op.inputs) == 1:
        x = g.tensors[op.inputs[0]]
        types = {x.dtype.name, y.dtype.name}
        ok = types <= set(INT_TYPES) | {"uint32"} and ("int32" in types or "uint32" in types)
        if not ok or x.is_constant or tuple(x.shape) != tuple(y.shape):
            return None
        return op.inputs[0], -1, int(task.args[3]), int(task.args[4]), 0  # (mn_cast's IN_TYPE and OUT_TYPE words)
    code = CHAIN_STEPS.get(op.op)
    if code is None or task.symbol != f"mn_{op.op.lower()}_s32" or len(op.inputs) != 2 or y.dtype.name != "int32":
        return None
    a, b = (g.tensors[i] if i >= 0 else None for i in op.inputs)
    if a is None or b is None:
        return None
    if not b.is_constant and a.is_constant and op.op not in ("SUB", "DIV"):
        a, b = b, a
    if (a.is_constant or not b.is_constant or b.dtype.name != "int32" or np.asarray(b.data).size != 1
            or tuple(a.shape) != tuple(y.shape)):
        return None
    c = int(np.asarray(b.data).reshape(-1)[0])
    if op.op == "DIV" and c in (0, -1):
        return None
    lo, hi = (int(task.args[3]), int(task.args[4])) if code <= 3 else INT32_RANGE
    return a.index, code, c, lo, hi


def fuse_chains(interp: Any, tasks: list[Task], places: dict[int, tuple[int, int]]) -> list[Task]:
    """Each run of two or more tasks of ``_chain_step`` operators, each reading the one before's output (read by
    nothing else and not a model output), as one ``mn_chain_s32`` task: element by element in registers instead of
    one pass per operator over the arena (audio_preprocessor's tail: CAST, MUL, ADD, DIV, ADD, MINIMUM, MAXIMUM,
    CAST on 40 values). A CAST may only open or close a run. The run's output must lie at or below its input with
    elements no wider, or apart from it, so that writing element i never reaches an unread one."""
    g = interp.model.main
    consumers = g.consumers()
    steps = [_chain_step(interp, t) for t in tasks]
    out: list[Task] = []
    i = 0
    while i < len(tasks):
        j = i
        while (j + 1 < len(tasks) and steps[j] is not None and steps[j + 1] is not None
               and (steps[j][1] >= 0 or j == i) and steps[j + 1][0] == g.operators[tasks[j].op].outputs[0]
               and consumers.get(steps[j + 1][0]) == [tasks[j + 1].op] and steps[j + 1][0] not in g.outputs):
            j += 1
            if steps[j][1] < 0:  # a CAST closes the run
                break
        run = tasks[i:j + 1]
        if len(run) < 2 or not _chain_placed(g, places, steps[i][0], g.operators[run[-1].op].outputs[0]):
            out.append(tasks[i])
            i += 1
            continue
        x, y = g.tensors[steps[i][0]], g.tensors[g.operators[run[-1].op].outputs[0]]
        words = [w for k in range(i, j + 1) if steps[k][1] >= 0 for w in steps[k][1:]]
        count = int(np.prod(x.shape, dtype=np.int64))
        int32 = INT_TYPES["int32"]  # the types the opening and closing CASTs read and write, else int32
        in_type, out_type = steps[i][2] if steps[i][1] < 0 else int32, steps[j][3] if steps[j][1] < 0 else int32
        out.append(Task("mn_chain_s32", [TensorRef(0, y.index), TensorRef(0, x.index), count, in_type, out_type,
                                         len(words) // 4, *words], run[-1].op))
        i = j + 1
    return out


def _chain_placed(g: Any, places: dict[int, tuple[int, int]], x: int, y: int) -> bool:
    px, py = places.get(x), places.get(y)
    if px is None or py is None or px[0] >= py[0] + py[1] or py[0] >= px[0] + px[1]:
        return True
    return py[0] <= px[0] and g.tensors[y].dtype.itemsize <= g.tensors[x].dtype.itemsize
