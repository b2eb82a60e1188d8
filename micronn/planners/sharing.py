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

micronn's kernels read their whole input before writing, so any of these placements computes the same bytes;
the gaps are computed for a kernel streaming in raster order, so the plan is valid on a device too. Tensors
that share memory become one compound request whose members keep fixed offsets from each other.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from micronn.ir import Operator, Padding, Subgraph
from micronn.planners.base import Member, Request, align, footprint

ALIAS_OPS = frozenset({"RESHAPE", "SQUEEZE", "EXPAND_DIMS"})
UNARY_OPS = frozenset({
    "RELU", "RELU6", "RELU_N1_TO_1", "LEAKY_RELU", "HARD_SWISH", "ELU", "LOGISTIC", "TANH", "ABS", "NEG", "SQRT",
    "RSQRT", "EXP", "LOG", "SQUARE", "FLOOR", "CEIL", "ROUND", "QUANTIZE", "DEQUANTIZE", "CAST", "LOGICAL_NOT",
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

    @classmethod
    def none(cls) -> Sharing:
        return cls(False, False, False, False, False)

    @property
    def any(self) -> bool:
        return self.alias or self.inplace or self.overlap


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


def merge(requests: list[Request], pairs: list[tuple[int, int, int]]) -> tuple[list[Request], list[list[int]]]:
    """Requests with each accepted (input, output, gap) pair's tensors placed rigidly in one compound request.

    Pairs chain (an output can be the next op's input); a pair whose output would collide with another
    member of the chain alive at the same time is skipped.
    """
    by_tensor = {r.tensor: r for r in requests if r.tensor is not None}
    group_of: dict[int, int] = {}
    groups: list[dict[int, int]] = []  # group id -> {tensor: offset relative to the group}
    for x, y, gap in sorted(pairs, key=lambda p: by_tensor[p[1]].first):
        if y in group_of:
            continue
        if x not in group_of:
            group_of[x] = len(groups)
            groups.append({x: 0})
        g = groups[group_of[x]]
        rel, ry = g[x] - gap, by_tensor[y]
        if not any(t != x and by_tensor[t].overlaps(ry) and rel < g[t] + by_tensor[t].size and g[t] < rel + ry.size
                   for t in g):
            g[y] = rel
            group_of[y] = group_of[x]
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
    accepted: list[tuple[int, int, int]] = []
    best = _score(requests)
    trials = budget // max(1, len(requests)) ** 2
    for pair in candidates(sg, requests, sharing, may_share)[:trials]:
        trial, _ = merge(requests, accepted + [pair])
        score = _score(trial)
        if score < best:
            best, accepted = score, accepted + [pair]
    return merge(requests, accepted)


def _score(requests: list[Request]) -> tuple[int, int]:
    """(quick head, bytes x time of the live set): ties at the peak still reward sharing elsewhere."""
    times = range(min((r.first for r in requests), default=0), max((r.last for r in requests), default=-1) + 1)
    return _quick_head(requests), sum(footprint(r, t) for r in requests for t in times)
