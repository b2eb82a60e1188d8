"""Memory sharing below the live-set bound: aliasing, in-place ops and outputs streamed over their inputs.

When an operator's input dies at that operator, its output may reuse the input's bytes:

- **alias**: RESHAPE, SQUEEZE and EXPAND_DIMS only relabel bytes, so the output *is* the input.
- **in-place**: an elementwise op writes element k after reading element k, so the output can sit exactly
  on a same-shaped input.
- **overlap** (segment-level overlap, as in vMCU, MLSys 2024): an op that produces its output pixel by pixel
  in raster order (convolutions, depthwise convolutions, pooling) only needs the input from the first pixel
  its remaining outputs read. Placing the output ``gap`` bytes below the input, where ``gap`` is the largest
  amount by which written output bytes ever run ahead of the input still to be read, means nothing is
  overwritten before it is read. A 1x1 convolution that doubles the channels then needs the output's size plus
  one input pixel instead of input plus output. A spatial PAD streams the same way (each output pixel copies
  one input pixel or the pad value).
- **slices** (patch-based execution, ``micronn.patch``): a STRIDED_SLICE of whole rows of a batch-1 image (or any
  slice that is one contiguous run of its input) is a run of its bytes, so it can *be* those bytes (a view) even
  while the image stays alive. And a CONCATENATION whose output's leading dimensions before the axis are all 1 lays
  its inputs out one after another; each activation input that dies there can be written directly into its slot of
  the output, which then exists (whole, as one block) from the first input's producer on and the copy moves every
  byte onto itself (constant inputs are copied into their slots as usual). Views and slots start at multiples of
  ``Sharing.align`` bytes into their tensor (TFLM's 16 unless asked otherwise).
  Patch-based execution joins its stripes this way, so only one stripe's intermediates are alive besides the
  joined output. The joined output is then also placed over the image the stripes slice, as low as no stripe
  overwrites rows a later stripe still reads (the stream gap of a whole run of operators).
  With several patched stages, a later stage's row slices are views of the earlier stage's joined output just
  the same; since one stage's views, join and stream only pay off together, each stage's are also offered to the
  greedy choice as one candidate (``stage_bundles``).

micronn's kernels read their whole input before writing, so any of these placements computes the same bytes;
the gaps are computed for a kernel streaming in raster order, so the plan is valid on a device too. Tensors
that share memory become one compound request whose members keep fixed offsets from each other.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from micronn.ir import Operator, Padding, Subgraph
from micronn.planners.base import ALIGN, Member, Request, align, footprint

ALIAS_OPS = frozenset({"RESHAPE", "SQUEEZE", "EXPAND_DIMS"})
UNARY_OPS = frozenset({
    "RELU", "RELU6", "RELU_N1_TO_1", "LEAKY_RELU", "HARD_SWISH", "ELU", "LOGISTIC", "TANH", "ABS", "NEG", "SQRT",
    "RSQRT", "EXP", "LOG", "SQUARE", "FLOOR", "CEIL", "ROUND", "QUANTIZE", "DEQUANTIZE", "CAST", "LOGICAL_NOT",
    "SignalWindow",  # (the signal library's: its other input is the constant window)
})
BINARY_OPS = frozenset({
    "ADD", "SUB", "MUL", "DIV", "SQUARED_DIFFERENCE", "MAXIMUM", "MINIMUM", "LOGICAL_AND", "LOGICAL_OR",
})
WINDOW_OPS = frozenset({"CONV_2D", "DEPTHWISE_CONV_2D", "AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D"})
PAD_OPS = frozenset({"PAD", "PADV2"})


@dataclass(frozen=True)
class Sharing:
    """Which kinds of memory sharing the planner may use (all on by default; ``Sharing.none()`` is TFLM's)."""

    alias: bool = True
    inplace: bool = True
    overlap: bool = True
    fold_pad: bool = True  # fold explicit PADs into the convolution they feed (micronn.planners.fold)
    # kernels may ask for less scratch than TFLM's reference kernels (same bytes out): TRANSPOSE_CONV accumulates
    # one band of output rows at a time instead of holding an output-sized int32 buffer
    compact_scratch: bool = True
    # patch-based execution: row slices read in place, CONCATENATION inputs written into their slot of the output,
    # and the joined output streamed over the image its stripes slice
    slices: bool = True
    # the persistent tail keeps one copy of identical read-only per-operator data (per-channel multipliers and
    # shifts computed from the same constant scales), where TFLM keeps one per operator; never changes a plan's head
    persistent: bool = True
    # read-only per-operator data computed from constants (those per-channel multipliers and shifts) lives with the
    # weights in flash, as micronn's firmware export places it, instead of in the arena's tail. Off by default:
    # TFLM computes it in prepare into its arena, and micronn's default figures count it the same way
    rom: bool = False
    # keep a sharing whose real plan has the same head as the unshared one (the arena is the same size, and aliased
    # RESHAPEs and in-place CASTs copy nothing). Off by default: the plan then stays the unshared one, which
    # micronn's figures and exports use; NativeModel turns it on, where each avoided copy is time
    ties: bool = False
    # bytes a slice view or a concatenation slot must be aligned to inside its tensor: TFLM's 16 by default (every
    # tensor of a device plan starts aligned as in TFLM's arena); NativeModel takes 4 (whole words and elements),
    # which lets the slice of a vector at any word be a view (audio_preprocessor's spectrum: 20 bytes in)
    align: int = ALIGN

    @classmethod
    def none(cls) -> Sharing:
        return cls(False, False, False, False, False, False, False)

    @property
    def any(self) -> bool:
        return self.alias or self.inplace or self.overlap or self.slices


def stream_gap(low_read: np.ndarray, out_unit: int) -> int:
    """Bytes the output must start below the input so that streaming writes never pass unread input.

    ``low_read[k]`` is the first input byte that output unit k (and so the units after it, once the suffix
    minimum is taken) still reads; writing unit k ends at ``(k + 1) * out_unit`` bytes of output.
    """
    if len(low_read) < 2:
        return 0
    still_needed = np.minimum.accumulate(low_read[::-1])[::-1]  # first byte read by any unit >= k
    k = np.arange(1, len(low_read), dtype=np.int64)
    return max(0, int(np.max(k * out_unit - still_needed[1:])))


def _pad_before(padding: int, in_size: int, out_size: int, stride: int, filt: int, dilation: int) -> int:
    if padding != Padding.SAME:
        return 0
    effective = (filt - 1) * dilation + 1
    return max(((out_size - 1) * stride + effective - in_size) // 2, 0)


def window_low_read(sg: Subgraph, op: Operator) -> tuple[np.ndarray, int] | None:
    """For a windowed NHWC op: the first input byte each output pixel reads, and bytes per output pixel."""
    x, y = sg.tensors[op.inputs[0]], sg.tensors[op.outputs[0]]
    if len(x.shape) != 4 or len(y.shape) != 4:
        return None
    o = op.options
    n, h, w, c = x.shape
    _, oh, ow, oc = y.shape
    if op.op in ("CONV_2D", "DEPTHWISE_CONV_2D"):
        f = sg.tensors[op.inputs[1]].shape
        fh, fw, dh, dw = f[1], f[2], o.dilation_h_factor, o.dilation_w_factor
    else:
        fh, fw, dh, dw = o.filter_height, o.filter_width, 1, 1
    if op.explicit_padding is not None:  # a PAD folded in: the kernel pads as the PAD did
        pt, pl = op.explicit_padding
    else:
        pt = _pad_before(o.padding, h, oh, o.stride_h, fh, dh)
        pl = _pad_before(o.padding, w, ow, o.stride_w, fw, dw)
    rows = np.maximum(np.arange(oh) * o.stride_h - pt, 0)
    cols = np.maximum(np.arange(ow) * o.stride_w - pl, 0)
    pix = (np.arange(n)[:, None, None] * h * w + rows[None, :, None] * w + cols[None, None, :]).reshape(-1)
    return pix.astype(np.int64) * c * x.dtype.itemsize, oc * y.dtype.itemsize


def pad_low_read(sg: Subgraph, op: Operator) -> tuple[np.ndarray, int] | None:
    """For a spatial NHWC PAD: the first input byte each output pixel reads (its clamped source pixel)."""
    x, y, p = sg.tensors[op.inputs[0]], sg.tensors[op.outputs[0]], sg.tensors[op.inputs[1]]
    if len(x.shape) != 4 or p.data is None or p.data.shape != (4, 2):
        return None
    pads = p.data.astype(np.int64)
    if pads[0].any() or pads[3].any() or (pads < 0).any():  # batch or channel padding does not stream by pixel
        return None
    n, h, w, c = x.shape
    _, oh, ow, _ = y.shape
    rows = np.clip(np.arange(oh) - pads[1, 0], 0, h - 1)
    cols = np.clip(np.arange(ow) - pads[2, 0], 0, w - 1)
    pix = (np.arange(n)[:, None, None] * h * w + rows[None, :, None] * w + cols[None, None, :]).reshape(-1)
    return pix * c * x.dtype.itemsize, c * y.dtype.itemsize


def _candidate(sg: Subgraph, op: Operator, sharing: Sharing) -> tuple[int, int] | None:
    """(input tensor, gap in bytes) for an output that may be placed over that input, or None."""
    if len(op.outputs) != 1:
        return None
    y = sg.tensors[op.outputs[0]]
    ins = [i for i in op.inputs if i >= 0 and not sg.tensors[i].is_constant and not sg.tensors[i].is_variable]
    if op.op in ALIAS_OPS and sharing.alias and ins and sg.tensors[ins[0]].nbytes == y.nbytes:
        return op.inputs[0], 0
    if op.op in UNARY_OPS and sharing.inplace and ins and sg.tensors[ins[0]].shape == y.shape:
        x = sg.tensors[ins[0]]
        n = int(np.prod(y.shape, dtype=np.int64))
        return ins[0], stream_gap(np.arange(n, dtype=np.int64) * x.dtype.itemsize, y.dtype.itemsize)
    if op.op in BINARY_OPS and sharing.inplace:
        same = [i for i in ins if sg.tensors[i].shape == y.shape and sg.tensors[i].dtype.itemsize >= y.dtype.itemsize]
        return (same[0], 0) if same else None
    if (op.op in WINDOW_OPS or op.op in PAD_OPS) and sharing.overlap and op.inputs[0] in ins:
        geo = window_low_read(sg, op) if op.op in WINDOW_OPS else pad_low_read(sg, op)
        return None if geo is None else (op.inputs[0], stream_gap(*geo))
    return None


def candidates(sg: Subgraph, requests: list[Request], sharing: Sharing,
               may_share: Callable[[Operator], bool] = lambda op: True) -> list[tuple[int, int, int]]:
    """Every (input, output, gap) pair where the output may be placed ``gap`` bytes below a dying input.

    ``may_share(op)`` says whether the op's kernel reads its inputs before writing (``Kernel.reads_input_first``).
    """
    by_tensor = {r.tensor: r for r in requests if r.tensor is not None and not r.members}
    out = []
    for op in sg.operators:
        cand = _candidate(sg, op, sharing) if may_share(op) else None
        if cand is None:
            continue
        x, gap = cand
        y, time = op.outputs[0], op.index + 1
        rx, ry = by_tensor.get(x), by_tensor.get(y)
        if rx is not None and ry is not None and rx.last == time and ry.first == time and x not in sg.outputs:
            out.append((x, y, align(gap)))
    return out


def _slice_view(sg: Subgraph, op: Operator) -> int | None:
    """Byte offset of a STRIDED_SLICE's output in its input when the output is one contiguous run of the input's
    bytes (whole rows of a batch-1 image, a run of a vector, ...); None for any other slice."""
    if op.op != "STRIDED_SLICE" or op.custom or len(op.inputs) != 4 or len(op.outputs) != 1 or min(op.inputs) < 0:
        return None
    x, y = sg.tensors[op.inputs[0]], sg.tensors[op.outputs[0]]
    b, e, st = (sg.tensors[i].data for i in op.inputs[1:])
    o = op.options
    rank = len(x.shape)
    if (b is None or e is None or st is None or not rank or x.dtype != y.dtype or o is None or o.begin_mask
            or o.end_mask or o.shrink_axis_mask or o.ellipsis_mask or o.new_axis_mask):
        return None
    b, e, st = (np.asarray(v).reshape(-1).astype(np.int64) for v in (b, e, st))
    if b.size != rank or e.size != rank or st.size != rank or (st != 1).any() or (b < 0).any():
        return None
    e = np.minimum(e, x.shape)
    if (e <= b).any() or tuple(y.shape) != tuple(int(v) for v in e - b):
        return None
    # contiguous: one index on every axis before some axis k, any run on k, whole axes after it
    partial = [a for a in range(rank) if b[a] or e[a] != x.shape[a]]
    k = partial[-1] if partial else 0
    if any(e[a] - b[a] != 1 for a in range(k)):
        return None
    strides = [int(np.prod(x.shape[a + 1:], dtype=np.int64)) * x.dtype.itemsize for a in range(rank)]
    return int(sum(int(b[a]) * strides[a] for a in range(rank)))


def view_candidates(sg: Subgraph, requests: list[Request], sharing: Sharing) -> list[tuple[int, int, int]]:
    """(input, output, -offset) for every contiguous slice whose output may be a view of its (still live) input."""
    if not sharing.slices:
        return []
    by_tensor = {r.tensor: r for r in requests if r.tensor is not None and not r.members}
    out = []
    for op in sg.operators:
        off = _slice_view(sg, op)
        if off is None or off % max(sharing.align, sg.tensors[op.inputs[0]].dtype.itemsize):
            continue
        x, y = op.inputs[0], op.outputs[0]
        rx, ry = by_tensor.get(x), by_tensor.get(y)
        if rx is not None and ry is not None and ry.first == op.index + 1 and y not in sg.outputs:
            out.append((x, y, -off))
    return out


Concat = tuple[int, tuple[tuple[int, int], ...]]  # (output, ((input, byte offset in the output), ...))


def concat_candidates(sg: Subgraph, requests: list[Request], sharing: Sharing) -> list[Concat]:
    """Every CONCATENATION whose activation inputs may be written straight into their slot of its output.

    The activations must die at the concatenation, lie one after another in the output (every dimension before the
    axis is 1) at offsets aligned to ``sharing.align`` and their element size, and be distinct; the copy then moves
    each of their bytes onto itself, so the kernel's order of reads and writes does not matter. Constant inputs keep
    their slots and are copied there by the kernel as usual.
    """
    if not sharing.slices:
        return []
    by_tensor = {r.tensor: r for r in requests if r.tensor is not None and not r.members}
    out = []
    for op in sg.operators:
        if op.op != "CONCATENATION" or op.custom or len(op.outputs) != 1 or op.options is None:
            continue
        y, time = sg.tensors[op.outputs[0]], op.index + 1
        rank = len(y.shape)
        axis = op.options.axis + rank if op.options.axis < 0 else op.options.axis
        if op.options.fused_activation_function or not 0 <= axis < rank or any(d != 1 for d in y.shape[:axis]):
            continue
        if len(set(op.inputs)) != len(op.inputs) or len(op.inputs) < 2 or y.index not in by_tensor:
            continue
        parts, off = [], 0
        for i in op.inputs:
            t = sg.tensors[i] if i >= 0 else None
            if t is None or t.dtype != y.dtype:
                break
            if not t.is_constant:
                r = by_tensor.get(i)
                if (r is None or i in sg.outputs or i in sg.inputs or r.last != time
                        or off % max(sharing.align, t.dtype.itemsize)):
                    break
                parts.append((i, off))
            off += t.nbytes
        else:
            if parts and off == y.nbytes and by_tensor[y.index].first == time:
                out.append((y.index, tuple(parts)))
    return out


def _join_concat(groups: list[dict[int, int]], group_of: dict[int, int], by_tensor: dict[int, Request],
                 cand: Concat, loose: bool = False) -> None:
    """Place a concatenation's inputs (with the groups they already belong to) in their slots of its output, unless a
    tensor would then collide with another member alive at the same time.

    A group's own members already fit each other, though some overlap by design (an in-place pair at its operator, a
    view and the tensor it views); only ``loose`` (``Sharing.ties``) lets such a group join. Strictly, it stays
    apart: the quick plans that choose sharings misjudge those joins on patched graphs (person_detect's four
    stripes of operators 0..3 then plan 27,648 B of head instead of 24,384 B)."""
    y, parts = cand
    if y in group_of:
        return
    joined: dict[int, int] = {y: 0}
    slots = {s for s, _ in parts}
    for s, off in parts:
        if s in joined:
            if joined[s] != off:
                return
            continue
        g = groups[group_of[s]] if s in group_of else {s: 0}
        shift = off - g[s]
        for t, rel in g.items():
            rel += shift
            rt = by_tensor[t]
            for u, urel in joined.items():
                if (u == y and t in slots) or (t == y and u in slots):
                    continue
                if loose and u in g:
                    continue
                ru = by_tensor[u]
                if rt.overlaps(ru) and rel < urel + ru.size and urel < rel + rt.size:
                    return
            joined[t] = rel
    gid = len(groups)
    for t in joined:
        if t in group_of:
            groups[group_of[t]] = {}
        group_of[t] = gid
    groups.append(joined)


def stream_candidates(sg: Subgraph, concats: list[Concat]) -> list[tuple[int, int]]:
    """(image, joined output) for each concatenation whose inputs are computed from row slices of one image that
    nothing reads after the concatenation: the output may then stream over the image (see :func:`_join_stream`)."""
    producers, consumers = sg.producers(), sg.consumers()
    out = []
    for y, parts in concats:
        at = producers[y]
        sliced = {sg.operators[c].inputs[0] for p, _ in parts for c in _ancestors(sg, producers, p)
                  if _slice_view(sg, sg.operators[c]) is not None}
        for x in sliced:
            if x not in sg.outputs and max(consumers.get(x, [at])) < at:
                out.append((x, y))
    return out


def _ancestors(sg: Subgraph, producers: dict[int, int], t: int) -> set[int]:
    """Indices of the operators ``t`` is computed from."""
    seen: set[int] = set()
    todo = [producers[t]] if t in producers else []
    while todo:
        k = todo.pop()
        if k in seen:
            continue
        seen.add(k)
        todo += [producers[i] for i in sg.operators[k].inputs if i in producers]
    return seen


def _join_stream(groups: list[dict[int, int]], group_of: dict[int, int], by_tensor: dict[int, Request],
                 x: int, y: int) -> None:
    """Place the group of ``y`` at the offset from the group of ``x`` that collides with nothing alive at the same
    time and keeps the two smallest together (members placed rigidly, as every group is)."""
    gx = groups[group_of[x]] if x in group_of else {x: 0}
    gy = groups[group_of[y]] if y in group_of else {y: 0}
    if x in gy or y in gx:
        return
    bad: list[tuple[int, int]] = []  # open intervals of shifts d (gy's offsets + d) that collide
    for t, rt in gy.items():
        for u, ru in gx.items():
            a, b = by_tensor[t], by_tensor[u]
            if a.overlaps(b) and a.size and b.size:
                bad.append((ru - rt - a.size, ru + b.size - rt))
    lo_x = min(gx.values())
    hi_x = max(r + by_tensor[t].size for t, r in gx.items())
    lo_y = min(gy.values())
    hi_y = max(r + by_tensor[t].size for t, r in gy.items())
    # the extent is piecewise linear in d: its minimum lies where a forbidden interval ends or the blocks line up
    # (shifts stay multiples of ALIGN, so a group's views and slots keep their alignment)
    tries = {d for iv in bad for d in iv} | {lo_x - lo_y, hi_x - hi_y}
    best = None
    for d in sorted(tries):
        if d % ALIGN or any(lo < d < hi for lo, hi in bad):
            continue
        extent = max(hi_x, hi_y + d) - min(lo_x, lo_y + d)
        if best is None or extent < best[0]:
            best = (extent, d)
    if best is None or best[0] >= (hi_x - lo_x) + (hi_y - lo_y):
        return
    joined = {**gx, **{t: r + best[1] for t, r in gy.items()}}
    gid = len(groups)
    for t in joined:
        if t in group_of:
            groups[group_of[t]] = {}
        group_of[t] = gid
    groups.append(joined)


def merge(requests: list[Request], pairs: list[tuple[int, int, int]], concats: list[Concat] = (),
          streams: list[tuple[int, int]] = (), views: list[tuple[int, int, int]] = (), loose: bool = False
          ) -> tuple[list[Request], list[list[int]]]:
    """Requests with each accepted (input, output, gap) pair's tensors placed rigidly in one compound request.

    Pairs chain (an output can be the next op's input); a pair whose output would collide with another
    member of the chain alive at the same time is skipped. ``concats`` (see :func:`concat_candidates`) put the
    inputs of a concatenation, with everything already sharing memory with them, inside its output; ``streams``
    (:func:`stream_candidates`) then place a joined output over the image its stripes slice. ``views`` are pairs
    (:func:`view_candidates`) whose output is bytes of the input: they may overlap the input and each other.
    """
    by_tensor = {r.tensor: r for r in requests if r.tensor is not None}
    group_of: dict[int, int] = {}
    groups: list[dict[int, int]] = []  # group id -> {tensor: offset relative to the group}
    joins = sorted(concats, key=lambda c: by_tensor[c[0]].first)
    same_bytes: dict[int, set[int]] = {}  # a tensor -> the views of its bytes (and itself)
    items = [(x, y, gap, True) for x, y, gap in views] + [(x, y, gap, False) for x, y, gap in pairs]
    for x, y, gap, view in sorted(items, key=lambda p: by_tensor[p[1]].first):
        while joins and by_tensor[joins[0][0]].first <= by_tensor[y].first:
            _join_concat(groups, group_of, by_tensor, joins.pop(0), loose)
        if y in group_of:
            continue
        if x not in group_of:
            group_of[x] = len(groups)
            groups.append({x: 0})
        g = groups[group_of[x]]
        rel, ry = g[x] - gap, by_tensor[y]
        free = same_bytes.setdefault(x, {x}) if view else {x}
        if not any(t not in free and by_tensor[t].overlaps(ry) and rel < g[t] + by_tensor[t].size
                   and g[t] < rel + ry.size for t in g):
            g[y] = rel
            group_of[y] = group_of[x]
            if view:
                free.add(y)
    for c in joins:
        _join_concat(groups, group_of, by_tensor, c, loose)
    for x, y in streams:
        _join_stream(groups, group_of, by_tensor, x, y)
    grouped = [g for g in groups if len(g) > 1]
    members = {t for g in grouped for t in g}
    out = [r for r in requests if r.tensor not in members]
    for g in grouped:
        base = min(g.values())
        ms = tuple(Member(t, rel - base, by_tensor[t].size, by_tensor[t].first, by_tensor[t].last)
                   for t, rel in sorted(g.items(), key=lambda kv: by_tensor[kv[0]].first))
        out.append(Request(max(m.rel + m.size for m in ms), min(m.first for m in ms), max(m.last for m in ms),
                           tensor=ms[0].tensor, members=ms))
    return out, [sorted(g) for g in grouped]


def _quick_head(requests: list[Request]) -> int:
    """Head of the best of a few fast greedy plans: the yardstick for accepting a sharing."""
    from micronn.planners.greedy import GreedyPlanner
    from micronn.planners.tflm import TflmPlanner

    return min(p.plan(requests).head for p in (TflmPlanner(), GreedyPlanner("size"), GreedyPlanner("area")))


# How much quick re-planning one ``share`` call may do. A trial re-plans every request with greedy planners, whose
# cost grows about with the square of the request count, so a trial costs len(requests) ** 2 units. A count, not
# seconds, so the sharing (and so the plan) is the same on every machine. 2**20 lets the largest bundled model
# (mobilenet_v2_pad_int8: 69 requests, 52 candidates, 248k units) try every candidate with 4x to spare, and
# keeps a call near a third of a second (where measured) at any graph size: there is at most one candidate per
# operator, so the worst case is near 100 requests with about 100 trials.
SHARE_BUDGET = 1 << 20


def share(sg: Subgraph, requests: list[Request], sharing: Sharing,
          may_share: Callable[[Operator], bool] = lambda op: True,
          budget: int = SHARE_BUDGET) -> tuple[list[Request], list[list[int]]]:
    """Merge requests of tensors that share memory into compound requests, keeping only sharings that help.

    Rigid sharing can also hurt (a long chain of outputs each placed below its input drifts down and widens
    its block), so each candidate is kept only if a quick re-plan gets a smaller head, or the same head and
    less memory held over time. Candidates are tried in operator order while ``budget`` lasts (see
    ``SHARE_BUDGET``). Returns the new requests and the groups of tensors that share memory.
    """
    if not sharing.any or any(r.offline is not None for r in requests):
        return requests, []
    trials = budget // max(1, len(requests)) ** 2
    concats = concat_candidates(sg, requests, sharing)
    views = view_candidates(sg, requests, sharing)
    pairs = candidates(sg, requests, sharing, may_share)
    # patch-based execution's joins first: they are few, and what the other sharings of their inputs must fit around.
    # A slice that goes straight into a concatenation's slot helps only together with that join (the join alone
    # leaves the slice's copy where the view alone leaves the concatenation's), so each such pair is also one try
    fed = []
    for c in concats:
        slotted = [("view", v) for v in views if v[1] in dict(c[1])]
        if slotted:
            fed.append(("bundle", [("concat", c), *slotted]))
    joins = fed + [("concat", c) for c in concats] + [("view", p) for p in views]
    joins += [("stream", c) for c in stream_candidates(sg, concats)]
    loose = sharing.ties
    best, chosen = _greedy(requests, joins + [("pair", p) for p in pairs], trials, loose)
    if joins:  # a patched graph: many small stripe tensors, so also try the biggest sharings first
        size = {r.tensor: r.size for r in requests if r.tensor is not None}
        big = sorted(pairs, key=lambda p: -(min(size[p[0]], size[p[1]]) - p[2]))
        other = _greedy(requests, joins + [("pair", p) for p in big], trials, loose)
        best, chosen = min((best, chosen), other, key=lambda bc: bc[0])
        if len(concats) > 1:
            # several patched stages: one stage's views, join and stream help only together (each alone can widen
            # a quick greedy plan where another stage still peaks), so also offer each stage's joins as one
            stages = stage_bundles(sg, concats, views, stream_candidates(sg, concats))
            for order in (pairs, big):
                other = _greedy(requests, stages + joins + [("pair", p) for p in order], trials, loose)
                best, chosen = min((best, chosen), other, key=lambda bc: bc[0])
    return merge(requests, *chosen, loose=loose)


def stage_bundles(sg: Subgraph, concats: list[Concat], views: list[tuple[int, int, int]],
                  streams: list[tuple[int, int]]) -> list[tuple[str, list[tuple[str, Any]]]]:
    """For each patched stage (a concatenation joining stripes): its concatenation and the row-slice views its
    stripes read, as one candidate, and again with the join streamed over the image those views slice."""
    producers = sg.producers()
    out: list[tuple[str, list[tuple[str, Any]]]] = []
    for c in concats:
        y, parts = c
        ops = set().union(*(_ancestors(sg, producers, p) for p, _ in parts))
        own = [v for v in views if producers.get(v[1]) in ops]
        images = {v[0] for v in own}
        bundle = [("concat", c), *(("view", v) for v in own)]
        out.append(("bundle", bundle))
        flows = [("stream", st) for st in streams if st[1] == y and st[0] in images]
        if flows:
            out.append(("bundle", bundle + flows))
    return out


def _greedy(requests: list[Request], tries: list[tuple[str, Any]], trials: int, loose: bool = False
            ) -> tuple[tuple[int, int], tuple]:
    """Accept each candidate (in order, at most ``trials``) that lowers the quick score; returns the score and the
    accepted (pairs, concats, streams, views). A ``("bundle", [(kind, candidate), ...])`` is tried as one."""
    chosen: tuple = ([], [], [], [])
    best = _score(requests)
    kinds = ("pair", "concat", "stream", "view")
    for kind, cand in tries[:trials]:
        items = cand if kind == "bundle" else [(kind, cand)]  # a bundle: candidates accepted together or not at all
        trial_set = tuple(c + [x for k, x in items if k == name and x not in c] for name, c in zip(kinds, chosen))
        if trial_set == chosen:
            continue
        score = _score(merge(requests, *trial_set, loose=loose)[0])
        if score < best:
            best, chosen = score, trial_set
    return best, chosen


def _score(requests: list[Request]) -> tuple[int, int]:
    """(quick head, bytes x time of the live set): ties at the peak still reward sharing elsewhere."""
    times = range(min((r.first for r in requests), default=0), max((r.last for r in requests), default=-1) + 1)
    return _quick_head(requests), sum(footprint(r, t) for r in requests for t in times)
