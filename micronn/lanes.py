"""Many samples per invoke: whether a model has a *twin* that computes ``n`` samples at once, and the twin.

Every tensor that depends on the sample gets a sample axis ``n`` long in the twin: where the model has a unit
dimension there, or as a new one. Tensors that do not (constants, a loop's counters, its condition) stay as they
are, so a ``WHILE`` whose trip count does not depend on the data loops once for all ``n`` samples.

Where the sample axis goes is the tensor's *placement*: its layout (``outer``, the sample's elements before the
axis: the twin interleaves samples in runs of the rest) and the axis. Byte copies (``RESHAPE``, a loop's state)
carry a layout and leave the axis open; the first operator that reads the axis (a slice, a gather, a split, a
row-wise kernel) picks one of the unit dimensions that give that layout. A ``RESHAPE`` that moves the sample to
another layout (a time-major ``[1, T, C] -> [T, 1, C]``) becomes a ``TRANSPOSE`` in the twin, and a constant that
starts a loop state which the body makes per-sample is repeated ``n`` times.

The twin's inputs and outputs hold their ``n`` samples back to back, so a caller passes ``n`` stacked samples
and reads ``n`` stacked results. Variable tensors are allowed only as the state rows of ``STATE_ROW_OPS`` (one row
per sample, each from the initial state: the twin runs samples that each start afresh, not a stream).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Collection

import numpy as np

from micronn.ir import Model, Operator, Subgraph, Tensor

# Operators that keep samples apart along axis 0 when every activation's leading dimension is the batch, under the
# conditions _row_reason checks; STATE_ROW_OPS also keep one row of state (their variable tensors) per sample.
ROW_OPS = frozenset({"CONV_2D", "DEPTHWISE_CONV_2D", "AVERAGE_POOL_2D", "MAX_POOL_2D", "RESHAPE", "SOFTMAX",
                     "FULLY_CONNECTED", "ADD", "MEAN", "PAD", "CONCATENATION", "RELU", "RELU6", "LOGISTIC",
                     "QUANTIZE", "DEQUANTIZE"})
STATE_ROW_OPS = frozenset({"SVDF", "UNIDIRECTIONAL_SEQUENCE_LSTM"})
# Operators that keep samples apart along any axis they do not slice, split, gather or permute, and the loops made
# of them (a Keras LSTM's: its time-major RESHAPE a TRANSPOSE in the twin)
LOOP_OPS = frozenset({"WHILE", "GATHER", "SPLIT", "SPLIT_V", "STRIDED_SLICE", "TRANSPOSE", "SUB", "MUL", "TANH"})
# Operators that broadcast their inputs elementwise: the sample axis may lie anywhere, the same from the right in
# every input that has one; an input the same for every sample broadcasts across them
ELEMENTWISE = frozenset({"ADD", "SUB", "MUL", "LOGISTIC", "TANH", "RELU", "RELU6", "QUANTIZE", "DEQUANTIZE"})
# Operators that compute nothing per sample but must never be shared by the samples (state, control flow)
_NEVER_SHARED = frozenset({"VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE", "CALL_ONCE", "IF"})
# The types TRANSPOSE takes (micronn.kernels.transpose), which a transposing RESHAPE needs
_TRANSPOSED = frozenset(np.dtype(d) for d in (np.float32, np.int8, np.int16))
_LSTM_STATE = (18, 19)  # UNIDIRECTIONAL_SEQUENCE_LSTM's output and cell state inputs
_CONSTANT_INPUTS = {  # inputs that must be constants of the model (weights, paddings, axes, slice bounds)
    "CONV_2D": (1, 2), "DEPTHWISE_CONV_2D": (1, 2), "FULLY_CONNECTED": (1, 2), "MEAN": (1,), "PAD": (1, 2),
    "RESHAPE": (1,), "STRIDED_SLICE": (1, 2, 3), "SVDF": (1, 2, 3), "GATHER": (), "SPLIT": (0,), "SPLIT_V": (1, 2),
    "TRANSPOSE": (1,),
    "UNIDIRECTIONAL_SEQUENCE_LSTM": tuple(i for i in range(1, 24) if i not in _LSTM_STATE),
}
_STATE_INPUTS = {"SVDF": (4,), "UNIDIRECTIONAL_SEQUENCE_LSTM": _LSTM_STATE}
_ARITY = {"GATHER": 2, "SPLIT": 2, "SPLIT_V": 3, "STRIDED_SLICE": 4, "TRANSPOSE": 2}  # inputs the rules below read


def rows_reason(model: Model, ops: Collection[str] = ROW_OPS) -> str | None:
    """Why ``twin_model(model, n)`` would not compute, for each of ``n`` samples, what ``model`` computes for one
    (None: it would). Every operator that reads a sample must be in ``ops`` (the ones whose kernels the caller has
    checked with samples in rows) and keep samples apart; ``WHILE`` (when in ``ops``) only with a condition the
    same for every sample."""
    try:
        _Lanes(model, ops)
    except _Refused as e:
        return str(e)
    return None


def twin_model(model: Model, n: int) -> Model:
    """``model`` computing ``n`` samples per invoke, each in its own place along its tensors' sample axes, where
    :func:`rows_reason` finds nothing. Constants are shared, not copied (but for loop states' starting values)."""
    lanes = _Lanes(model, None)
    twin = copy.copy(model)
    twin.subgraphs = [_twin_subgraph(lanes, sg, n) for sg in model.subgraphs]
    return twin


class _Refused(Exception):
    pass


@dataclasses.dataclass
class _At:
    """A per-sample tensor's placement: the layout (``outer``) and, once an operator needs it, the axis (``new``:
    inserted before dimension ``axis``, where the tensor has no unit dimension to take)."""

    outer: int
    axis: int | None = None
    new: bool = False


def _prod(dims: tuple[int, ...] | list[int]) -> int:
    return int(np.prod(dims, dtype=np.int64))


def _choices(shape: tuple[int, ...], outer: int) -> list[tuple[int, bool]]:
    """The axes of the layout ``outer`` in ``shape``: its unit dimensions there, else the new axis there."""
    units = [(b, False) for b, d in enumerate(shape) if d == 1 and _prod(shape[:b]) == outer]
    return units or [(b, True) for b in range(len(shape) + 1) if _prod(shape[:b]) == outer][:1]


def _placed(shape: tuple[int, ...], a: int) -> _At:
    """The placement whose sample axis replaces unit dimension ``a`` of ``shape``."""
    return _At(_prod(shape[:a]), a)


def _twin_shape(shape: tuple[int, ...], at: _At, n: int) -> tuple[int, ...]:
    a = at.axis
    return (*shape[:a], n, *shape[a + (0 if at.new else 1):])


class _Lanes:
    """The placements of every per-sample tensor of every subgraph (``places``), the RESHAPEs the twin transposes
    (``transposes``: (subgraph, operator) -> perm) and the loop inputs it repeats (``tiles``: (subgraph, operator,
    input) -> layout). Raises _Refused naming what keeps the model from a twin. ``ops``: None accepts any operator
    (twin_model, after rows_reason)."""

    def __init__(self, model: Model, ops: Collection[str] | None):
        self.model, self.ops = model, ops
        self.places: dict[int, dict[int, _At]] = {}
        self.transposes: dict[tuple[int, int], list[int]] = {}
        self.tiles: dict[tuple[int, int, int], int] = {}
        self.callers: dict[int, tuple[int, int]] = {}
        self.stack: list[int] = []  # the subgraphs being placed, outermost first
        if "OfflineMemoryAllocation" in model.metadata:
            raise _Refused("it carries an offline memory plan, whose offsets hold for one sample only")
        main = model.main
        outs = self.subgraph(0, [_At(1) for _ in main.inputs])
        for t, at in zip(main.outputs, outs):
            if at is None:
                raise _Refused(f"output tensor {t} ({main.tensors[t].name!r}) is the same for every sample")
            if at.outer != 1:
                raise _Refused(f"output tensor {t} ({main.tensors[t].name!r}) would interleave the samples")

    def subgraph(self, s: int, given: list[_At | None]) -> list[_At | None]:
        """Place subgraph ``s``'s tensors from its inputs' placements; its outputs' placements."""
        sg = self.model.subgraphs[s]
        self.stack.append(s)
        place = {t: dataclasses.replace(at) for t, at in zip(sg.inputs, given) if at is not None}
        states = {i: op for op in sg.operators if op.op in STATE_ROW_OPS and (self.ops is None or op.op in self.ops)
                  for k in _STATE_INPUTS[op.op] if k < len(op.inputs) and (i := op.inputs[k]) >= 0}
        for t in sg.tensors:
            if t.is_variable and t.index not in states:
                raise _Refused(f"tensor {t.index} ({t.name!r}) is a variable: samples would share state")
            if t.is_variable and t.data is not None:
                raise _Refused(f"variable tensor {t.index} ({t.name!r}) has an initial value for one sample")
            if t.is_variable:
                place[t.index] = _At(1)
        self.places[s] = place
        for op in sg.operators:
            why = self.operator(s, sg, op, place, states)
            if why:
                where = f"operator {op.index} ({op.op})" + (f" of subgraph {s}" if s else "")
                raise _Refused(f"{where} {why}")
        for t, at in place.items():
            if at.axis is None:
                at.axis, at.new = _choices(sg.tensors[t].shape, at.outer)[0]
        self.stack.pop()
        return [place.get(t) for t in sg.outputs]

    def operator(self, s: int, sg: Subgraph, op: Operator, place: dict[int, _At], states: dict[int, Operator]
                 ) -> str | None:
        sampled = [k for k, t in enumerate(op.inputs) if t in place]
        if not sampled and op.op != "WHILE":  # the same for every sample: computed once
            return "keeps state or calls a subgraph" if op.custom or op.op in _NEVER_SHARED else None
        if op.custom or self.ops is not None and op.op not in self.ops:
            return "is not known to keep samples apart"
        if len(op.inputs) < _ARITY.get(op.op, 1) or not op.outputs:
            return "has too few inputs or no output"
        if op.op == "WHILE":
            return self.loop(s, sg, op, place)
        if op.op in ELEMENTWISE:
            return self.elementwise(sg, op, place, sampled)
        if op.op in ("RESHAPE", "GATHER", "SPLIT", "SPLIT_V", "STRIDED_SLICE", "TRANSPOSE"):
            consts = [op.inputs[k] for k in _CONSTANT_INPUTS[op.op] if k < len(op.inputs)]
            if any(t >= 0 and not sg.tensors[t].is_constant for t in consts):
                return "reads a computed shape, axis or bound (they must be constants)"
            return getattr(self, op.op.lower())(s, sg, op, place)
        why = _row_reason(sg, op, states)
        if why:
            return why
        for k, t in enumerate(op.inputs):
            if t >= 0 and t not in place and not sg.tensors[t].is_constant:
                return f"reads input {k}, the same for every sample, beside the samples' rows"
            if t in place and not _pick(place[t], sg.tensors[t].shape, {0}):
                return f"reads input {k} with its samples along another axis than its first"
        for t in op.outputs:
            if sg.tensors[t].shape[:1] != (1,):
                return f"writes tensor {t} of shape {list(sg.tensors[t].shape)}, with no leading batch dimension of 1"
            place[t] = _At(1, 0)
        return None

    def elementwise(self, sg: Subgraph, op: Operator, place: dict[int, _At], sampled: list[int]) -> str | None:
        # the sample axis's position from the right that every per-sample input can take
        froms: set[int] | None = None
        for k in sampled:
            t = sg.tensors[op.inputs[k]]
            at = place[t.index]
            options = [(at.axis, at.new)] if at.axis is not None else _choices(t.shape, at.outer)
            mine = {len(t.shape) + new - a for a, new in options}
            froms = mine if froms is None else froms & mine
        out = sg.tensors[op.outputs[0]].shape
        fits = [p for p in sorted(froms or (), reverse=True) if p == len(out) + 1 or p <= len(out) and out[-p] == 1]
        if not fits:
            return "reads samples that lie along different axes"
        p = fits[0]
        for k in sampled:
            t = sg.tensors[op.inputs[k]]
            at = place[t.index]
            if at.axis is None:
                at.axis, at.new = next((a, new) for a, new in _choices(t.shape, at.outer)
                                       if len(t.shape) + new - a == p)
        a = len(out) - p
        place[op.outputs[0]] = _At(1, 0, True) if a < 0 else _placed(out, a)
        return None

    def reshape(self, s: int, sg: Subgraph, op: Operator, place: dict[int, _At]) -> str | None:
        inp, out = sg.tensors[op.inputs[0]], sg.tensors[op.outputs[0]]
        at = place[inp.index]
        same = _choices(out.shape, at.outer)
        if any(not new for _, new in same):  # the same layout: a copy in the twin too
            place[out.index] = _At(at.outer)
            return None
        # another layout: a transpose in the twin, if the sample moves across the other dimensions as they are
        if (self.ops is None or "TRANSPOSE" in self.ops) and inp.dtype in _TRANSPOSED:
            options = [(at.axis, at.new)] if at.axis is not None else _choices(inp.shape, at.outer)
            for a, new in options:
                rest = [d for i, d in enumerate(inp.shape) if i != a]
                for b, d in enumerate(out.shape):
                    if not new and d == 1 and [e for i, e in enumerate(out.shape) if i != b] == rest:
                        at.axis, at.new = a, False
                        others = [i for i in range(len(inp.shape)) if i != a]
                        self.transposes[(s, op.index)] = [*others[:b], a, *others[b:]]
                        place[out.index] = _placed(out.shape, b)
                        return None
        if same:  # the same layout with a new axis (the output has no unit dimension there)
            place[out.index] = _At(at.outer)
            return None
        return "moves the samples to another layout that no transpose gives"

    def gather(self, s: int, sg: Subgraph, op: Operator, place: dict[int, _At]) -> str | None:
        params, indices, out = (sg.tensors[t] for t in (op.inputs[0], op.inputs[1], op.outputs[0]))
        if indices.index in place:
            return "gathers at positions that depend on the sample"
        axis = op.options.axis % max(len(params.shape), 1) if op.options is not None else 0
        if op.options is not None and op.options.batch_dims:
            return "has batch dimensions"
        at = place[params.index]
        if not _pick(at, params.shape, set(range(len(params.shape))) - {axis}):
            return "gathers along the samples' axis"
        a = at.axis if at.axis < axis else at.axis - 1 + len(indices.shape)
        place[out.index] = _placed(out.shape, a)
        return None

    def split(self, s: int, sg: Subgraph, op: Operator, place: dict[int, _At]) -> str | None:
        data = op.inputs[1] if op.op == "SPLIT" else op.inputs[0]
        axis_t = sg.tensors[op.inputs[0] if op.op == "SPLIT" else op.inputs[2]]
        shape = sg.tensors[data].shape
        if np.asarray(axis_t.data).size != 1:
            return "has no single axis"
        axis = int(np.asarray(axis_t.data).reshape(-1)[0]) % max(len(shape), 1)
        at = place[data]
        if not _pick(at, shape, set(range(len(shape))) - {axis}):
            return "splits along the samples' axis"
        for t in op.outputs:
            place[t] = _placed(sg.tensors[t].shape, at.axis)
        return None

    split_v = split

    def strided_slice(self, s: int, sg: Subgraph, op: Operator, place: dict[int, _At]) -> str | None:
        o, inp = op.options, sg.tensors[op.inputs[0]]
        if o is None or o.ellipsis_mask or o.new_axis_mask:
            return "has an ellipsis or new axes"
        strides = np.asarray(sg.tensors[op.inputs[3]].data).reshape(-1)
        whole = {a for a in range(len(inp.shape)) if o.begin_mask >> a & o.end_mask >> a & 1
                 and not o.shrink_axis_mask >> a & 1 and a < len(strides) and int(strides[a]) == 1}
        at = place[inp.index]
        if not _pick(at, inp.shape, whole):
            return "does not keep the whole samples' axis (masks, stride)"
        a = at.axis - bin(o.shrink_axis_mask & ((1 << at.axis) - 1)).count("1")
        place[op.outputs[0]] = _placed(sg.tensors[op.outputs[0]].shape, a)
        return None

    def transpose(self, s: int, sg: Subgraph, op: Operator, place: dict[int, _At]) -> str | None:
        inp, out = sg.tensors[op.inputs[0]], sg.tensors[op.outputs[0]]
        perm = [int(p) % max(len(inp.shape), 1) for p in np.asarray(sg.tensors[op.inputs[1]].data).reshape(-1)]
        at = place[inp.index]
        if len(perm) != len(inp.shape) or not _pick(at, inp.shape, set(range(len(inp.shape)))):
            return "permutes axes it does not name"
        b = perm.index(at.axis)
        place[out.index] = _placed(out.shape, b)
        return None

    def loop(self, s: int, sg: Subgraph, op: Operator, place: dict[int, _At]) -> str | None:
        o = op.options
        cond, body = (o.cond_subgraph_index, o.body_subgraph_index) if o is not None else (-1, -1)
        for sub in (cond, body):
            if not 0 < sub < len(self.model.subgraphs) or sub in self.stack:
                return f"calls subgraph {sub}, which is not a loop's own subgraph"
            if self.callers.setdefault(sub, (s, op.index)) != (s, op.index):
                return f"calls subgraph {sub}, which another operator calls too"
        n, subs = len(op.inputs), self.model.subgraphs
        if cond == body or len(subs[cond].inputs) != n or (len(subs[body].inputs), len(subs[body].outputs)) != (n, n):
            return "has a condition or body that does not take its state"
        given = [place.get(t) for t in op.inputs]
        states = [None if at is None else _At(at.outer) for at in given]
        for _ in range(len(states) + 1):  # each round makes at least one more state per-sample, or ends
            if self.subgraph(cond, states)[0] is not None:
                return "has a condition that depends on the sample"
            changed = False
            for k, (at, out) in enumerate(zip(states, self.subgraph(body, states))):
                if at is not None and out is None:
                    return f"makes loop state {k} the same for every sample"
                if at is None and out is not None:
                    states[k], changed = _At(out.outer), True
                elif at is not None and out is not None and at.outer != out.outer:
                    return f"moves the samples of loop state {k} to another layout"
            if not changed:
                break
        for k, (at, t) in enumerate(zip(states, op.inputs)):
            if at is not None and given[k] is None:
                if not sg.tensors[t].is_constant:
                    return f"starts loop state {k} from a computed value, the same for every sample"
                self.tiles[(s, op.index, k)] = at.outer
        for at, t in zip(states, op.outputs):
            if at is not None:
                place[t] = _At(at.outer)
        return None


def _pick(at: _At, shape: tuple[int, ...], axes: set[int]) -> bool:
    """Settle ``at`` on one of ``axes`` (a unit dimension of its layout) if it is open; whether it lies on one."""
    if at.axis is None:
        for a, new in _choices(shape, at.outer):
            if not new and a in axes:
                at.axis = a
                return True
        return False
    return not at.new and at.axis in axes


def _row_reason(sg: Subgraph, op: Operator, states: dict[int, Operator]) -> str | None:
    ins = [sg.tensors[i] if i >= 0 else None for i in op.inputs]
    for k, t in enumerate(ins):
        if t is not None and t.is_variable and (states.get(t.index) is not op or k not in _STATE_INPUTS[op.op]):
            return f"reads variable tensor {t.index} as input {k}, not as its own state"
    if ins and ins[0] is not None and ins[0].is_constant:
        return "reads a constant as its input 0, the same for every sample"
    for k in _CONSTANT_INPUTS.get(op.op, ()):
        if k < len(ins) and ins[k] is not None and not ins[k].is_constant:
            return f"reads a computed input {k} (weights, paddings, axes and bounds must be constants)"
    if op.op not in _CONSTANT_INPUTS and any(t is not None and t.is_constant for t in ins):
        return "reads a constant operand, which would broadcast across samples"
    if op.op == "PAD" and np.asarray(ins[1].data).reshape(-1, 2)[0].any():
        return "pads the batch axis"
    if op.op == "MEAN" and 0 in {int(a) % len(ins[0].shape) for a in np.asarray(ins[1].data).ravel()}:
        return "reduces the batch axis"
    if op.op == "CONCATENATION" and op.options.axis % len(sg.tensors[op.outputs[0]].shape) == 0:
        return "concatenates along the batch axis"
    if op.op == "SOFTMAX" and len(ins[0].shape) < 2:
        return "normalizes along the batch axis"
    if op.op == "FULLY_CONNECTED" and sg.tensors[op.outputs[0]].shape[0] != 1:
        return "has no batch of 1 in its output"
    if op.op == "UNIDIRECTIONAL_SEQUENCE_LSTM" and op.options.time_major:
        return "is time-major: its leading axis is time, not samples"
    return None


def _twin_subgraph(lanes: _Lanes, sg: Subgraph, n: int) -> Subgraph:
    s, place = sg.index, lanes.places.get(sg.index, {})
    tensors = [t if t.index not in place else dataclasses.replace(t, shape=_twin_shape(t.shape, place[t.index], n),
                                                                  shape_signature=None) for t in sg.tensors]
    operators = list(sg.operators)

    def constant(name: str, data: np.ndarray) -> int:
        tensors.append(Tensor(name=name, shape=tuple(data.shape), dtype=data.dtype, data=data, index=len(tensors)))
        return len(tensors) - 1

    for (at_s, i), perm in lanes.transposes.items():
        if at_s == s:
            op = operators[i]
            p = constant(f"{sg.tensors[op.outputs[0]].name}/twin_perm", np.array(perm, np.int32))
            operators[i] = dataclasses.replace(op, op="TRANSPOSE", inputs=[op.inputs[0], p], options=None, version=1)
    repeated: dict[tuple[int, int], int] = {}
    for (at_s, i, k), outer in sorted(lanes.tiles.items()):
        if at_s == s:
            t = sg.tensors[operators[i].inputs[k]]
            if (t.index, outer) not in repeated:
                at = _At(outer, *_choices(t.shape, outer)[0])
                one = np.asarray(t.data).reshape(outer, 1, -1)
                data = np.ascontiguousarray(np.repeat(one, n, axis=1).reshape(_twin_shape(t.shape, at, n)))
                repeated[(t.index, outer)] = constant(f"{t.name}/twin_{n}", data)
            ins = list(operators[i].inputs)
            ins[k] = repeated[(t.index, outer)]
            operators[i] = dataclasses.replace(operators[i], inputs=ins)
    return dataclasses.replace(sg, tensors=tensors, operators=operators)
