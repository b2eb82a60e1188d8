"""Lowerings of the int8 elementwise and reduction ops onto ``micronn/micro/kernels``: ADD, SUB, MUL, MAXIMUM,
MINIMUM, MEAN, RELU, RELU6, LEAKY_RELU, LOGISTIC and TANH.

Every multiplier, shift, zero point and bound is read off the Python kernel's prepare. Broadcasting binary ops
and MEAN become a walk (``mn_elementwise.h``): up to ``WALK_DIMS`` dimensions with a byte stride per operand,
0 where an operand is broadcast or a dimension reduced; dimensions of size 1 are dropped and dimensions that
every operand walks contiguously merged here, on the host, so the kernels run long inner rows.

The planner places the output of these ops exactly over a same-shaped input that dies there (in-place
sharing, ``micronn.planners.sharing``). Their kernels read each element before writing it, so that placement
is safe: they register with ``streaming=True`` (``lower`` then accepts an overlapping output), and each
lowering here checks that an overlap is exactly in place, the only kind the kernels handle.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from micronn.micro import lower
from micronn.micro.lower import LowerError, ScratchRef, Task, _Op, lowering

WALK_DIMS = 6  # MN_WALK_DIMS
BINARY = ("ADD", "SUB", "MUL", "MAXIMUM", "MINIMUM")
UNARY = ("RELU", "RELU6", "LEAKY_RELU", "LOGISTIC", "TANH")


def _contiguous(shape: Sequence[int], itemsize: int) -> list[int]:
    """Row-major byte strides of ``shape``."""
    strides, step = [], itemsize
    for d in reversed(shape):
        strides.append(step)
        step *= int(d)
    return strides[::-1]


def walk(o: _Op, sizes: Sequence[int], *strides: Sequence[int]) -> list[int]:
    """The walk's words: ``WALK_DIMS`` sizes, then each of the three operands' byte strides.

    Size-1 dimensions go; a dimension merges into the one outside it when every operand steps over it
    contiguously (its outer stride is its inner stride times its size, which holds for broadcast 0s too).
    """
    dims: list[tuple[int, list[int]]] = []
    for i, n in enumerate(sizes):
        if n == 1:
            continue
        step = [int(s[i]) for s in strides]
        if dims and all(outer == s * n for outer, s in zip(dims[-1][1], step)):
            dims[-1] = (dims[-1][0] * int(n), step)
        else:
            dims.append((int(n), step))
    if len(dims) > WALK_DIMS:
        raise o.unsupported(f"int8 with {len(dims)} dimensions left after merging (the kernels walk {WALK_DIMS})")
    dims = [(1, [0] * len(strides))] * (WALK_DIMS - len(dims)) + dims
    return [n for n, _ in dims] + [s[k] for k in range(len(strides)) for _, s in dims]


def binary_walk(o: _Op) -> list[int]:
    """The walk of a broadcasting binary op over its output, mirroring ``_elementwise.broadcast_inputs``:
    equal input shapes walk flat; otherwise each input is aligned on the right of the output's shape."""
    (a, b), out = o.node.inputs[:2], o.node.outputs[0]
    size = out.dtype.itemsize  # the inputs step by their own element size (a bool result of wider operands)
    if tuple(a.shape) == tuple(b.shape):
        n = int(np.prod(out.shape, dtype=np.int64))
        return walk(o, [n], [size], [a.dtype.itemsize], [b.dtype.itemsize])
    shape = [int(d) for d in out.shape]
    rank = len(shape)
    steps = []
    for t in (a, b):
        s = [int(d) for d in t.shape]
        s = [1] * (rank - len(s)) + s if len(s) <= rank else s[len(s) - rank:]
        steps.append([0 if d == 1 else st for d, st in zip(s, _contiguous(s, t.dtype.itemsize))])
    return walk(o, shape, _contiguous(shape, size), *steps)


def check_in_place(o: _Op) -> None:
    """Refuse an output that overlaps an input other than exactly in place (same start, same size)."""
    if not o.overlaps():
        return
    out = o.places[o.op.outputs[0]]
    size = o.node.outputs[0].nbytes
    for t, tensor in zip(o.op.inputs, o.node.inputs):
        p = o.places.get(t) if t >= 0 else None
        if not lower.spans_meet(p, out):
            continue
        if p[0] != out[0] or tensor.nbytes != size:
            raise LowerError(f"operator {o.index} ({o.name}): its output overlaps input tensor {t} other than in "
                             "place, which its device kernel does not support")


def _int8(o: _Op, *shifts: int) -> None:
    """Refuse operands of other types (the kernels read and write int8) and shifts the C kernels cannot apply
    (``mn_mbqm`` shifts by at most 31 bits either way)."""
    operands = [*o.node.inputs[:2 if o.name in BINARY else 1], o.node.outputs[0]]
    if any(t is None or t.dtype != np.int8 for t in operands):
        raise o.unsupported("int8 with operands of another type")
    if any(not -31 <= int(s) <= 31 for s in shifts):
        raise o.unsupported(f"int8 with a multiplier shift of {max(shifts, key=abs)}")


@lowering("ADD", "int8", streaming=True)
@lowering("SUB", "int8", streaming=True)
def _add(o: _Op) -> list[Task]:
    p = o.k.params
    _int8(o, p.s1, p.s2, p.so)
    if not all(m >= 0 and s <= 0 for m, s in ((p.m1, p.s1), (p.m2, p.s2), (p.mo, p.so))):
        raise o.unsupported("int8 with a multiplier of one or more")  # the kernel's fast path assumes below one
    check_in_place(o)
    symbol = "mn_sub_s8" if o.k.subtract else "mn_add_s8"
    return [o.task(symbol, o.out(), o.inp(0), o.inp(1), int(p.off1), int(p.off2), int(p.left_shift), int(p.m1),
                   int(p.s1), int(p.m2), int(p.s2), int(p.mo), int(p.so), int(p.off_out), int(p.lo), int(p.hi),
                   *binary_walk(o))]


@lowering("MUL", "int8", streaming=True)
def _mul(o: _Op) -> list[Task]:
    k = o.k
    _int8(o, k.shift)
    check_in_place(o)
    return [o.task("mn_mul_s8", o.out(), o.inp(0), o.inp(1), int(k.zp1), int(k.zp2), int(k.multiplier), int(k.shift),
                   int(k.zp_out), int(k.lo), int(k.hi), *binary_walk(o))]


@lowering("MAXIMUM", "int8", streaming=True)
@lowering("MINIMUM", "int8", streaming=True)
def _max_min(o: _Op) -> list[Task]:
    _int8(o)
    check_in_place(o)
    symbol = "mn_maximum_s8" if o.name == "MAXIMUM" else "mn_minimum_s8"
    return [o.task(symbol, o.out(), o.inp(0), o.inp(1), *binary_walk(o))]


@lowering("MEAN", "int8")
def _mean(o: _Op) -> list[Task]:
    """The multiplier with 1/count folded in is computed as the Python kernel's invoke does, once: the axes are
    constant (a computed axis tensor is not supported)."""
    k, inp = o.k, o.node.inputs[0]
    if k.axes is None:
        raise o.unsupported("int8 with a computed axis tensor")
    shape = [int(d) for d in inp.shape]
    kept = [a for a in range(len(shape)) if a not in k.axes]
    outputs = int(np.prod([shape[a] for a in kept], dtype=np.int64))
    count = int(np.prod([shape[a] for a in k.axes], dtype=np.int64))
    mult, shift = int(k.multiplier), int(k.shift)
    pre = min(count.bit_length() - 1, 32, 31 + shift)
    mult = int(lower._wrap((mult << pre) // count))
    shift -= pre
    _int8(o, shift)
    acc_strides = dict(zip(kept, _contiguous([shape[a] for a in kept], 4)))
    geo = walk(o, shape, [acc_strides.get(a, 0) for a in range(len(shape))], _contiguous(shape, 1),
               [0] * len(shape))
    return [o.task("mn_mean_s8", o.out(), o.inp(0), ScratchRef(o.index, k.scratch), outputs, count, int(k.in_zp),
                   mult, shift, int(k.out_zp), *geo)]


def _count(o: _Op) -> int:
    return int(np.prod(o.node.inputs[0].shape, dtype=np.int64))


@lowering("RELU", "int8", streaming=True)
def _relu(o: _Op) -> list[Task]:
    k = o.k
    _int8(o, k.shift)
    check_in_place(o)
    return [o.task("mn_relu_s8", o.out(), o.inp(0), _count(o), int(k.in_zp), int(k.multiplier), int(k.shift),
                   int(k.out_zp), int(k.lo), int(k.hi))]


@lowering("LEAKY_RELU", "int8", streaming=True)
def _leaky_relu(o: _Op) -> list[Task]:
    k = o.k
    _int8(o, k.identity_shift, k.alpha_shift)
    check_in_place(o)
    return [o.task("mn_leaky_relu_s8", o.out(), o.inp(0), _count(o), int(k.in_zp), int(k.identity_multiplier),
                   int(k.identity_shift), int(k.out_zp), int(k.lo), int(k.hi), int(k.alpha_multiplier),
                   int(k.alpha_shift))]


@lowering("RELU6", "int8", streaming=True)
def _relu6(o: _Op) -> list[Task]:
    k = o.k
    _int8(o)
    check_in_place(o)
    return [o.task("mn_relu6_s8", o.out(), o.inp(0), _count(o), int(k.lower), int(k.upper))]



@lowering("LOGISTIC", "int8", streaming=True)
@lowering("TANH", "int8", streaming=True)
def _squash(o: _Op) -> list[Task]:
    k = o.k
    multiplier, left_shift, radius = (int(v) for v in k.params)
    _int8(o, left_shift)
    if not -(2**31) < radius < 2**31:
        raise o.unsupported(f"int8 with an input radius of {radius}")
    check_in_place(o)
    symbol = "mn_tanh_s8" if o.name == "TANH" else "mn_logistic_s8"
    return [o.task(symbol, o.out(), o.inp(0), _count(o), int(k.zero_point), multiplier, left_shift, radius)]
