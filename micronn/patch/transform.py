"""Patch-based execution (MCUNetV2-style) written with standard TFLite operators.

A *run* is a contiguous range of spatially local operators (convolutions, depthwise convolutions, max pooling,
PAD, same-shape elementwise ops and activations) with one activation input ``x`` and one output ``y``. Its output
is cut into horizontal stripes (rows of ``y``); each stripe is computed from just the rows of ``x`` its receptive
field reaches, and the stripes are joined again with CONCATENATION on the height axis. Only one stripe's
intermediates are alive at a time, so the large early activations never exist whole.

Every operator stays a standard TFLite operator, so every runtime runs the patched model unchanged:

- STRIDED_SLICE cuts the rows a stripe needs (of ``x``, or of a stripe tensor read by two branches that need
  different rows);
- a windowed op becomes VALID over its stripe; where the original SAME padding (or a stripe touching the image
  border) needs padding, an explicit PAD (convolutions: TFLM's padded taps contribute exactly zero, which is what a
  zero-point pixel contributes) or PADV2 with the type's minimum (max pooling: a padded cell never wins) supplies
  it, on that side only;
- PAD operators of the run keep their width padding and pad rows only on stripes touching the border.

Average pooling divides by the number of valid cells, so it joins a run only where it never needs padding.
The result computes the same bytes as the original: ``tests/patch`` checks it on micronn and on the TFLM wheel.

Several runs may be patched one after another (:func:`patch_stages`): a later stage then slices the joined output of
an earlier one as it would any image (micronn's planner makes those slices views of the join too).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from micronn.errors import MicronnError
from micronn.ir import Model, Operator, Padding, Subgraph, Tensor, op_macs
from micronn.tflite import schema

WINDOW_OPS = frozenset({"CONV_2D", "DEPTHWISE_CONV_2D", "MAX_POOL_2D", "AVERAGE_POOL_2D"})
PAD_OPS = frozenset({"PAD", "PADV2"})
UNARY_OPS = frozenset({"RELU", "RELU6", "RELU_N1_TO_1", "LEAKY_RELU", "HARD_SWISH", "LOGISTIC", "TANH", "ABS",
                       "NEG", "QUANTIZE", "DEQUANTIZE"})
BINARY_OPS = frozenset({"ADD", "SUB", "MUL", "MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE"})
SPATIAL_OPS = WINDOW_OPS | PAD_OPS | UNARY_OPS | BINARY_OPS
MAX_CONCAT_INPUTS = 10  # TFLM's CONCATENATION joins at most 10 tensors
# what TFLM's STRIDED_SLICE, PAD and CONCATENATION all take
CUT_DTYPES = frozenset({np.dtype(np.float32), np.dtype(np.int8), np.dtype(np.int16)})


class PatchError(MicronnError):
    """A range of operators cannot be run in patches (the search then tries another)."""


@dataclass(frozen=True)
class Run:
    """Operators ``start``..``end`` (inclusive), reading activation ``x`` and producing ``y``."""

    start: int
    end: int
    x: int
    y: int


@dataclass(frozen=True)
class Stage:
    """One patched run: operators ``start``..``end`` (indices of the original model) cut into ``split`` stripes, a
    count or the stripes' heights (top first)."""

    start: int
    end: int
    split: int | tuple[int, ...]


@dataclass(frozen=True)
class _Window:
    """The row geometry of a windowed op or a PAD: output row ``r`` reads input rows ``r * stride - before`` to
    ``r * stride - before + extent - 1``."""

    stride: int
    extent: int
    before: int
    left: int  # columns padded on the left and right (the op's own width padding)
    right: int


def _same_pads(size: int, out: int, stride: int, extent: int) -> tuple[int, int]:
    total = max((out - 1) * stride + extent - size, 0)
    return total // 2, total - total // 2


def _activations(sg: Subgraph, op: Operator) -> list[int]:
    """The op's inputs that are computed at run time (not weights, not constants)."""
    return [i for i in op.inputs if i >= 0 and not sg.tensors[i].is_constant]


def _window(sg: Subgraph, op: Operator) -> _Window | None:
    """Row geometry of ``op``; None for ops that map row r to row r (elementwise)."""
    if op.op in PAD_OPS:
        pads = np.asarray(sg.tensors[op.inputs[1]].data).astype(np.int64).reshape(4, 2)
        return _Window(1, 1, int(pads[1, 0]), int(pads[2, 0]), int(pads[2, 1]))
    if op.op not in WINDOW_OPS:
        return None
    o = op.options
    x, y = sg.tensors[op.inputs[0]], sg.tensors[op.outputs[0]]
    if op.op in ("CONV_2D", "DEPTHWISE_CONV_2D"):
        w = sg.tensors[op.inputs[1]].shape
        eh, ew = (w[1] - 1) * o.dilation_h_factor + 1, (w[2] - 1) * o.dilation_w_factor + 1
    else:
        eh, ew = o.filter_height, o.filter_width
    top = left = right = 0
    if o.padding == Padding.SAME:
        top = _same_pads(x.shape[1], y.shape[1], o.stride_h, eh)[0]
        left, right = _same_pads(x.shape[2], y.shape[2], o.stride_w, ew)
    return _Window(o.stride_h, eh, top, left, right)


def _check_op(sg: Subgraph, op: Operator) -> None:
    """Raise PatchError unless ``op`` may join a run (batch 1, NHWC, geometry micronn can cut by rows)."""
    if op.custom or op.op not in SPATIAL_OPS or len(op.outputs) != 1 or op.explicit_padding is not None:
        raise PatchError(f"operator {op.index} ({op.op}) is not a spatially local operator")
    y = sg.tensors[op.outputs[0]]
    acts = _activations(sg, op)
    if any(sg.tensors[t].dtype not in CUT_DTYPES for t in [*acts, op.outputs[0]]):
        raise PatchError(f"operator {op.index} ({op.op}) computes a type TFLM cannot slice, pad and join")
    if len(y.shape) != 4 or y.shape[0] != 1 or not acts:
        raise PatchError(f"operator {op.index} ({op.op}) does not write one NHWC image of batch 1")
    for i in acts:
        if len(sg.tensors[i].shape) != 4 or sg.tensors[i].shape[1] != (
                sg.tensors[op.inputs[0]].shape[1] if op.op in WINDOW_OPS | PAD_OPS else y.shape[1]):
            raise PatchError(f"operator {op.index} ({op.op}) reads a tensor that is not an image of its height")
    if op.op in WINDOW_OPS | PAD_OPS and (acts != [op.inputs[0]]):
        raise PatchError(f"operator {op.index} ({op.op}) has run-time weights or paddings")
    if op.op in WINDOW_OPS and op.options.padding not in (Padding.SAME, Padding.VALID):
        raise PatchError(f"operator {op.index} ({op.op}) has unknown padding")
    if op.op in PAD_OPS:
        p = sg.tensors[op.inputs[1]]
        pads = None if p.data is None or p.data.size != 8 else np.asarray(p.data).astype(np.int64).reshape(4, 2)
        if pads is None or (pads < 0).any() or pads[0].any() or pads[3].any():
            raise PatchError(f"operator {op.index} ({op.op}) pads more than height and width")
    if op.op == "MAX_POOL_2D" and y.dtype.kind not in "iu":
        raise PatchError(f"operator {op.index}: float max pooling is not cut (NaN order)")
    if op.op == "CONV_2D" or op.op == "DEPTHWISE_CONV_2D":
        w = sg.tensors[op.inputs[1]]
        if len(w.shape) != 4 or (y.dtype.kind == "f" and not np.isfinite(np.asarray(w.data, np.float64)).all()):
            raise PatchError(f"operator {op.index} ({op.op}) has weights an explicit zero pad would change")
    if op.op == "AVERAGE_POOL_2D":
        win = _window(sg, op)
        if win.before or win.left or win.right or _tail_pad(sg, op, win):
            raise PatchError(f"operator {op.index}: average pooling with padding counts only valid cells")
    if op.op in UNARY_OPS | BINARY_OPS:
        for i in op.inputs:
            t = sg.tensors[i] if i >= 0 else None
            if t is not None and t.is_constant and len(t.shape) >= 3 and t.shape[-3] != 1:
                raise PatchError(f"operator {op.index} ({op.op}) reads a constant that varies along the height")
            if t is not None and not t.is_constant and t.shape != y.shape:
                raise PatchError(f"operator {op.index} ({op.op}) broadcasts an image")


def _tail_pad(sg: Subgraph, op: Operator, win: _Window) -> int:
    """Rows the op pads below its input (SAME padding's bottom share)."""
    x, y = sg.tensors[op.inputs[0]], sg.tensors[op.outputs[0]]
    return max(0, (y.shape[1] - 1) * win.stride - win.before + win.extent - x.shape[1])


def find_run(model: Model, start: int, end: int) -> Run:
    """The run of operators ``start``..``end`` of the main subgraph; PatchError if it cannot be cut into stripes."""
    sg = model.main
    if not 0 <= start <= end < len(sg.operators):
        raise PatchError(f"operators {start}..{end} are not a range of the model's {len(sg.operators)} operators")
    ops = sg.operators[start:end + 1]
    made = {t for op in ops for t in op.outputs}
    outside: set[int] = set()
    for op in ops:
        _check_op(sg, op)
        outside.update(i for i in _activations(sg, op) if i not in made)
    if len(outside) != 1:
        raise PatchError(f"operators {start}..{end} read {len(outside)} activations from outside, not one")
    y = ops[-1].outputs[0]
    consumers = sg.consumers()
    for t in made - {y}:
        if t in sg.outputs or any(c < start or c > end for c in consumers.get(t, [])):
            raise PatchError(f"tensor {t}, made inside operators {start}..{end}, is read after them")
        if not consumers.get(t):
            raise PatchError(f"tensor {t}, made inside operators {start}..{end}, feeds nothing")
    return Run(start, end, outside.pop(), y)


def stripes(height: int, n: int) -> list[tuple[int, int]]:
    """``n`` stripes of rows (first, last inclusive) covering ``height`` rows, as equal as possible."""
    if not 1 <= n <= height:
        raise PatchError(f"cannot cut {height} rows into {n} stripes")
    bounds = [height * k // n for k in range(n + 1)]
    return [(bounds[k], bounds[k + 1] - 1) for k in range(n)]


def receptive_rows(sg: Subgraph, run: Run, rows: tuple[int, int]) -> dict[int, tuple[int, int]]:
    """For output rows ``rows`` of ``run.y``: the rows of every tensor of the run (and of ``x``) they depend on."""
    need: dict[int, tuple[int, int]] = {run.y: rows}
    for op in reversed(sg.operators[run.start:run.end + 1]):
        a, b = need[op.outputs[0]]
        win = _window(sg, op)
        for i in _activations(sg, op):
            h = sg.tensors[i].shape[1]
            lo, hi = (a, b) if win is None else (a * win.stride - win.before, b * win.stride - win.before
                                                  + win.extent - 1)
            lo, hi = max(lo, 0), min(hi, h - 1)
            if lo > hi:  # the stripe reads only padding here: TFLM has no tensor of zero rows to pad
                raise PatchError(f"output rows {rows[0]}..{rows[1]} read only padding of tensor {i}")
            if i in need:
                lo, hi = min(lo, need[i][0]), max(hi, need[i][1])
            need[i] = (lo, hi)
    return need


class _Builder:
    """Appends tensors, constants and operators to a copy of the main subgraph."""

    def __init__(self, sg: Subgraph):
        self.sg = dataclasses.replace(sg, tensors=list(sg.tensors), operators=[], inputs=list(sg.inputs),
                                      outputs=list(sg.outputs))
        self.consts: dict[tuple[str, bytes], int] = {}

    def tensor(self, like: Tensor, name: str, rows: int, cols: int | None = None) -> int:
        """A new activation like ``like`` with ``rows`` rows (and ``cols`` columns, if given)."""
        shape = (like.shape[0], rows, like.shape[2] if cols is None else cols, *like.shape[3:])
        t = dataclasses.replace(like, name=name, shape=shape, shape_signature=None, data=None, buffer=0,
                                index=len(self.sg.tensors), lut=None)
        self.sg.tensors.append(t)
        return t.index

    def const(self, name: str, values: np.ndarray, like: Tensor | None = None) -> int:
        data = np.array(values, order="C")
        key = (str(data.dtype) + str(data.shape) + ("" if like is None else f"{like.scale}/{like.zero_point}"),
               data.tobytes())
        if key not in self.consts:
            data.flags.writeable = False
            quant = None if like is None else like.quant
            t = Tensor(name, data.shape, data.dtype, quant, data, index=len(self.sg.tensors))
            self.sg.tensors.append(t)
            self.consts[key] = t.index
        return self.consts[key]

    def op(self, name: str, inputs: list[int], outputs: list[int], options: object = None,
           like: Operator | None = None) -> None:
        if like is not None:
            new = dataclasses.replace(like, inputs=inputs, outputs=outputs, options=options, index=-1)
        else:
            new = Operator(name, inputs, outputs, options)
        new.index = len(self.sg.operators)
        self.sg.operators.append(new)


def _slice(b: _Builder, src: int, lo: int, hi: int, name: str) -> int:
    """A STRIDED_SLICE of rows ``lo``..``hi`` of the stripe tensor ``src``."""
    t = b.sg.tensors[src]
    out = b.tensor(t, name, hi - lo + 1)
    begin = b.const("patch/begin", np.array([0, lo, 0, 0], np.int32))
    end = b.const("patch/end", np.array([t.shape[0], hi + 1, t.shape[2], t.shape[3]], np.int32))
    step = b.const("patch/strides", np.ones(4, np.int32))
    b.op("STRIDED_SLICE", [src, begin, end, step], [out], schema.options("STRIDED_SLICE"))
    return out


def _pad(b: _Builder, src: int, top: int, bottom: int, left: int, right: int, minimum: bool, name: str) -> int:
    """PAD (the zero point: what a skipped convolution tap contributes) or, for max pooling, PADV2 with the type's
    minimum (a padded cell never wins)."""
    t = b.sg.tensors[src]
    out = b.tensor(t, name, t.shape[1] + top + bottom, t.shape[2] + left + right)
    pads = b.const("patch/paddings", np.array([[0, 0], [top, bottom], [left, right], [0, 0]], np.int32))
    if minimum:
        value = b.const("patch/pad_min", np.array(np.iinfo(t.dtype).min, t.dtype).reshape(()), like=t)
        b.op("PADV2", [src, pads, value], [out], schema.options("PADV2"))
    else:
        b.op("PAD", [src, pads], [out], schema.options("PAD"))
    return out


def _cut_input(b: _Builder, sg: Subgraph, run: Run, rows: tuple[int, int], k: int) -> tuple[int, int, int]:
    """The rows of ``run.x`` stripe ``k`` reads: (tensor, first row, last row), a STRIDED_SLICE unless all of them."""
    lo, hi = receptive_rows(sg, run, rows)[run.x]
    xt = sg.tensors[run.x]
    if (lo, hi) == (0, xt.shape[1] - 1):
        return run.x, lo, hi
    return _slice(b, run.x, lo, hi, f"{xt.name}/patch{k}"), lo, hi


def _stripe(b: _Builder, sg: Subgraph, run: Run, rows: tuple[int, int], k: int, xs: tuple[int, int, int]) -> int:
    """Append stripe ``k`` (output rows ``rows`` of ``run.y``, reading ``xs`` of ``run.x``); returns the tensor
    holding those rows."""
    need = receptive_rows(sg, run, rows)
    have: dict[int, tuple[int, int, int]] = {run.x: xs}  # original tensor -> (stripe tensor, first row, last row)
    for op in sg.operators[run.start:run.end + 1]:
        out = op.outputs[0]
        a, z = need[out]
        win = _window(sg, op)
        inputs = list(op.inputs)
        for slot, i in enumerate(op.inputs):
            if i < 0 or sg.tensors[i].is_constant:
                continue
            h = sg.tensors[i].shape[1]
            want_lo, want_hi = (a, z) if win is None else (a * win.stride - win.before,
                                                           z * win.stride - win.before + win.extent - 1)
            u, v = max(want_lo, 0), min(want_hi, h - 1)
            t, tlo, thi = have[i]
            if (u, v) != (tlo, thi):
                t = _slice(b, t, u - tlo, v - tlo, f"{sg.tensors[i].name}/patch{k}/rows{u}-{v}")
            inputs[slot] = t
            top, bottom = u - want_lo, want_hi - v
        yt = sg.tensors[out]
        name = f"{yt.name}/patch{k}"
        options = op.options
        if op.op in PAD_OPS:
            inputs[1] = b.const("patch/paddings", np.array([[0, 0], [top, bottom], [win.left, win.right], [0, 0]],
                                                           np.int32))
        elif win is not None:
            if top or bottom or win.left or win.right:
                inputs[0] = _pad(b, inputs[0], top, bottom, win.left, win.right, op.op == "MAX_POOL_2D",
                                 f"{sg.tensors[op.inputs[0]].name}/patch{k}/padded")
            options = dataclasses.replace(op.options, padding=Padding.VALID)
        new = b.tensor(yt, name, z - a + 1)
        b.op(op.op, inputs, [new], options, like=op)
        have[out] = (new, a, z)
    t, tlo, thi = have[run.y]
    assert (tlo, thi) == rows
    return t


def _finish(model: Model, sg: Subgraph) -> Model:
    """Drop tensors nothing refers to (renumbering), validate, and return the model with ``sg`` as main."""
    used = set(sg.inputs) | set(sg.outputs)
    for op in sg.operators:
        used.update(t for t in [*op.inputs, *op.outputs, *op.intermediates] if t >= 0)
    keep = sorted(used) if len(model.subgraphs) == 1 else list(range(len(sg.tensors)))
    index = {old: new for new, old in enumerate(keep)}

    def remap(ts: list[int]) -> list[int]:
        return [index[t] if t >= 0 else t for t in ts]

    sg.tensors = [dataclasses.replace(sg.tensors[t], index=index[t]) for t in keep]
    for i, op in enumerate(sg.operators):
        op.inputs, op.outputs, op.intermediates, op.index = remap(op.inputs), remap(op.outputs), \
            remap(op.intermediates), i
    sg.inputs, sg.outputs = remap(sg.inputs), remap(sg.outputs)
    out = dataclasses.replace(model, subgraphs=[sg, *model.subgraphs[1:]], signature_defs=[
        dataclasses.replace(d, inputs={k: index[v] for k, v in d.inputs.items()},
                            outputs={k: index[v] for k, v in d.outputs.items()}) for d in model.signature_defs])
    out.validate()
    return out


def patch(model: Model, start: int, end: int, n: int | list[int], *, slices_first: bool = True) -> Model:
    """``model`` with operators ``start``..``end`` run in ``n`` horizontal stripes of their output, joined by
    CONCATENATION (byte-identical outputs). ``model`` is not modified.

    ``slices_first`` cuts every stripe's rows of the run's input before the first stripe runs: micronn's planner
    makes those slices views of the input (no bytes of their own), so the input's rows then die stripe by stripe
    and the joined output can stream over them. A runtime that copies each slice pays for them all at once:
    ``slices_first=False`` cuts each just before its stripe instead. ``n`` may also list the stripes' heights
    (top first), which must add up to the output's height."""
    sg = model.main
    run = find_run(model, start, end)
    y = sg.tensors[run.y]
    if isinstance(n, int):
        parts = stripes(y.shape[1], n)
    else:
        if not n or min(n) < 1 or sum(n) != y.shape[1]:
            raise PatchError(f"stripe heights {n} do not cut {y.shape[1]} rows")
        ends = np.cumsum(n)
        parts = [(int(e - h), int(e - 1)) for e, h in zip(ends, n)]
    if len(parts) > MAX_CONCAT_INPUTS:
        raise PatchError(f"{len(parts)} stripes: TFLM's CONCATENATION joins at most {MAX_CONCAT_INPUTS}")
    b = _Builder(sg)
    for op in sg.operators[:start]:
        b.op(op.op, list(op.inputs), list(op.outputs), op.options, like=op)
    if slices_first:
        cuts = [_cut_input(b, sg, run, rows, k) for k, rows in enumerate(parts)]
        outs = [_stripe(b, sg, run, rows, k, cut) for k, (rows, cut) in enumerate(zip(parts, cuts))]
    else:
        outs = [_stripe(b, sg, run, rows, k, _cut_input(b, sg, run, rows, k)) for k, rows in enumerate(parts)]
    b.op("CONCATENATION", outs, [run.y], schema.options("CONCATENATION", axis=1))
    for op in sg.operators[end + 1:]:
        b.op(op.op, list(op.inputs), list(op.outputs), op.options, like=op)
    return _finish(model, b.sg)


def patch_stages(model: Model, stages: list[Stage] | tuple[Stage, ...], *, slices_first: bool = True) -> Model:
    """``model`` with every stage's run patched (see :func:`patch`); the runs must not share operators.

    Stages are applied from the last run to the first: :func:`patch` keeps the operators before its run where they
    were, so every stage's indices still name the original operators when it is applied."""
    order = sorted(stages, key=lambda st: st.start)
    if not order:
        raise PatchError("no stage to patch")
    for a, b in zip(order, order[1:]):
        if b.start <= a.end:
            raise PatchError(f"stages {a.start}..{a.end} and {b.start}..{b.end} share operators")
    out = model
    for st in reversed(order):
        split = st.split if isinstance(st.split, int) else list(st.split)
        out = patch(out, st.start, st.end, split, slices_first=slices_first)
    return out


def macs(model: Model) -> int:
    """Multiply-accumulates of one invoke of the main subgraph."""
    return sum(op_macs(model.main, op) for op in model.main.operators)
