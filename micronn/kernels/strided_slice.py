"""STRIDED_SLICE: every ``stride``-th element between ``begin`` and ``end`` per axis, as TFLM slices.

TFLM resolves the slice once at prepare from constant ``begin``/``end``/``strides`` (read as int32)
and checks it against the output's static shape. It honours ``begin_mask``, ``end_mask``,
``shrink_axis_mask`` and negative indices and strides, but *ignores* ``ellipsis_mask``,
``new_axis_mask`` and the ``offset`` option: micronn ignores them too, so the outputs stay identical
(a model that relies on them usually fails the output shape check, in both).

A shrunk axis whose begin lies past the end of the axis, or that has a negative stride, makes TFLM
skip writing the output altogether (stale arena bytes); micronn refuses those at prepare.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels.base import Kernel, Node, register

MAX_DIMS = 4


def _clamp(v: int, lo: int, hi: int) -> int:
    return hi if v > hi else lo if v < lo else v


def slice_start(begin: int, stride: int, size: int, masked: bool) -> int:
    """First index along an axis, in [0, size] (or [-1, size - 1] for negative strides)."""
    if begin < 0:
        begin += size
    begin = _clamp(begin, 0, size) if stride > 0 else _clamp(begin, -1, size - 1)
    if masked:
        begin = 0 if stride > 0 else size - 1
    return begin


def slice_stop(end: int, stride: int, size: int, masked: bool) -> int:
    """One past the last index along an axis (for a non-shrunk axis)."""
    if end < 0:
        end += size
    end = _clamp(end, 0, size) if stride > 0 else _clamp(end, -1, size - 1)
    if masked:
        end = size if stride > 0 else -1
    return end


def _indices(node: Node, i: int, rank: int) -> list[int]:
    """begin/end/strides as TFLM reads them: the tensor's first ``rank`` int32 words."""
    t = node.inputs[i]
    name = ("begin", "end", "strides")[i - 1]
    if t is None or not t.is_constant:
        raise node.fail(f"{name} must be a constant tensor (TFLM resolves the slice at prepare)")
    if t.dtype not in (np.int32, np.int64):
        raise node.fail(f"{name} must be int32 (or int64), got {t.dtype.name}")
    raw = np.ascontiguousarray(node.input(i)).reshape(-1)
    if raw.size < rank:
        raise node.fail(f"{name} has {raw.size} values for a {rank}-D input")
    return [int(v) for v in raw.view(np.int32)[:rank]]


@register
class StridedSlice(Kernel):
    """TFLM STRIDED_SLICE for float32, int8, int16, int32 and bool, up to 4-D."""

    op = "STRIDED_SLICE"
    dtypes = frozenset({"float32", "int8", "int16", "int32", "bool"})

    def prepare(self, node: Node) -> None:
        if len(node.inputs) != 4 or len(node.outputs) != 1 or node.inputs[0] is None:
            raise node.fail("expects 4 inputs (input, begin, end, strides) and 1 output")
        inp, out = node.inputs[0], node.outputs[0]
        if inp.dtype != out.dtype:
            raise node.fail(f"input is {inp.dtype.name} but output is {out.dtype.name}")
        rank = len(inp.shape)
        if rank > MAX_DIMS:
            raise node.fail(f"input has {rank} dimensions; TFLM slices at most {MAX_DIMS}")
        begin, end, strides = (_indices(node, i, rank) for i in (1, 2, 3))
        opts = node.options
        begin_mask, end_mask, shrink = (opts.begin_mask, opts.end_mask, opts.shrink_axis_mask) if opts else (0, 0, 0)
        self.index: list[slice | int] = []
        kept: list[int] = []
        for axis, size in enumerate(inp.shape):
            stride = strides[axis]
            if stride == 0:
                raise node.fail(f"stride of axis {axis} is 0")
            start = slice_start(begin[axis], stride, size, bool(begin_mask >> axis & 1))
            if shrink >> axis & 1:
                if stride < 0 or start >= size:
                    raise node.fail(f"shrunk axis {axis} (begin {begin[axis]}, stride {stride}) selects nothing: "
                                    "TFLM would leave the output unwritten")
                self.index.append(start)
                continue
            stop = slice_stop(end[axis], stride, size, bool(end_mask >> axis & 1))
            picked = range(start, stop, stride)
            kept.append(len(picked))
            if len(picked) == 0:
                self.index.append(slice(0, 0))
            else:
                last = picked[-1] + (1 if stride > 0 else -1)
                self.index.append(slice(picked[0], last if last >= 0 else None, stride))
        if tuple(kept) != tuple(out.shape):
            raise node.fail(f"the slice of {inp.shape} has shape {tuple(kept)}, but the output is {out.shape} "
                            "(TFLM ignores ellipsis_mask, new_axis_mask and offset)")
        if 0 in kept:
            raise node.fail(f"the slice is empty {tuple(kept)}: TFLM refuses zero-size tensors (as dynamic tensors)")
        self.index_t = tuple(self.index)

    def invoke(self, node: Node) -> None:
        node.output(0)[...] = node.input(0)[self.index_t]
