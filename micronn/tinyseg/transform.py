"""TinySeg's graph transformations (Algorithm 3 and beyond), each returning a new valid ``ir.Model``.

- ``spill``: Spill a tensor after the operator that opens its cold range and Fetch it back before the operator
  that ends it; with ``nbytes`` below its size, only that much of it (whole channels) goes, split off with SPLIT_V
  and put back with CONCATENATION (partial spilling).
- ``fuse``: fused fetching. A Fetch followed by the CONCATENATION that reads it becomes one Fetch; a Fetch along the
  channel axis followed by the CONV_2D that reads it becomes a FetchConv2D. The fetched tensor then never exists.
- ``stream_input``: beyond the paper, an arena input of a fused fetch is spilled right after its last other use
  and read back part by part too, so the fused op holds only its output and a few rows of line buffer.
- ``fold_constants`` / ``drop_identities``: beyond the paper, shape computations whose answer is known when the
  model is built (SHAPE -> STRIDED_SLICE -> PACK feeding TRANSPOSE_CONV) become constants, and PADs that pad
  nothing disappear: fewer operators and tensors, so a smaller persistent tail on the device.

Inputs are never modified; tensors keep their quantization; unused tensors are dropped so that TFLM's tail (an eval
tensor per tensor) does not pay for them.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from flatbuffers import flexbuffers

from micronn.errors import MicronnError
from micronn.interpreter import Interpreter
from micronn.ir import Model, Operator, Subgraph, Tensor
from micronn.kernels._custom_options import custom_options
from micronn.kernels.fetch_conv_2d import CONV_OPTIONS
from micronn.tflite import schema

SPILL_OPS = frozenset({"Spill", "Fetch", "FetchConv2D"})
FOLDABLE_OPS = frozenset({"SHAPE", "STRIDED_SLICE", "PACK", "CONCATENATION", "RESHAPE", "SLICE", "GATHER", "CAST",
                          "ADD", "SUB", "MUL", "FILL", "EXPAND_DIMS", "SQUEEZE"})
FOLD_MAX_BYTES = 256  # fold only small results: a folded constant is stored in the model


class TransformError(MicronnError):
    """A transformation does not apply to this tensor or operator (the optimizer then tries another)."""


def _copy(model: Model) -> tuple[Model, Subgraph]:
    """A model whose main subgraph's lists and operators may be changed without touching ``model``."""
    sg = model.main
    ops = [dataclasses.replace(op, inputs=list(op.inputs), outputs=list(op.outputs)) for op in sg.operators]
    new = dataclasses.replace(sg, tensors=list(sg.tensors), operators=ops, inputs=list(sg.inputs),
                              outputs=list(sg.outputs))
    return dataclasses.replace(model, subgraphs=[new, *model.subgraphs[1:]]), new


def _add(sg: Subgraph, t: Tensor) -> int:
    sg.tensors.append(dataclasses.replace(t, index=len(sg.tensors)))
    return len(sg.tensors) - 1


def _const(sg: Subgraph, name: str, values: np.ndarray) -> int:
    data = np.array(values, order="C")  # (np.ascontiguousarray would make a scalar 1-D)
    data.flags.writeable = False
    return _add(sg, Tensor(name, data.shape, data.dtype, data=data))


def _finish(model: Model) -> Model:
    """Renumber operators, drop tensors nothing refers to (remapping every index), validate."""
    sg = model.main
    for i, op in enumerate(sg.operators):
        op.index = i
    used = set(sg.inputs) | set(sg.outputs)
    for op in sg.operators:
        used.update(t for t in [*op.inputs, *op.outputs, *op.intermediates] if t >= 0)
    if len(model.subgraphs) == 1 and len(used) < len(sg.tensors):
        keep = sorted(used)
        new_index = {old: new for new, old in enumerate(keep)}

        def remap(ts: list[int]) -> list[int]:
            return [new_index[t] if t >= 0 else t for t in ts]

        sg.tensors = [dataclasses.replace(sg.tensors[t], index=new_index[t]) for t in keep]
        for op in sg.operators:
            op.inputs, op.outputs, op.intermediates = remap(op.inputs), remap(op.outputs), remap(op.intermediates)
        sg.inputs, sg.outputs = remap(sg.inputs), remap(sg.outputs)
        model.signature_defs = [dataclasses.replace(d, inputs={k: new_index[v] for k, v in d.inputs.items()},
                                                    outputs={k: new_index[v] for k, v in d.outputs.items()})
                                for d in model.signature_defs]
    model.validate()
    return model


def _options(op: Operator) -> dict:
    return dict(flexbuffers.Loads(bytes(op.custom_options))) if op.custom_options else {}


def spill_ids(model: Model) -> set[int]:
    """Storage ids the model's Spill operators already use."""
    return {_options(op)["id"] for op in model.main.operators if op.op == "Spill"}


def _uses(sg: Subgraph, t: int) -> list[int]:
    return [op.index for op in sg.operators if t in op.inputs]


def spill(model: Model, tensor: int, start: int, end: int, nbytes: int | None = None, *, early: bool = False) -> Model:
    """Spill ``tensor`` after operator ``start`` (-1: before the first) and fetch it back before operator ``end``
    (Algorithm 3, lines 4-14). With ``nbytes`` smaller than the tensor, spill only enough whole channels (last
    axis) to cover ``nbytes``: SPLIT_V after ``start``, CONCATENATION of the kept part and the fetched one before
    ``end``. Every use from ``end`` on reads the fetched tensor. ``early`` spills right after the tensor is written
    instead (beyond the paper): its last arena reader before the cold range may then stream over it."""
    sg0 = model.main
    t = sg0.tensors[tensor]
    if t.is_constant or t.is_variable or tensor in sg0.outputs:
        raise TransformError(f"tensor {tensor} is a constant, a variable or a model output")
    uses = _uses(sg0, tensor)
    if any(start < u < end for u in uses) or end not in uses or not -1 <= start < end:
        raise TransformError(f"operators {start}..{end} are not a cold range of tensor {tensor}")
    model, sg = _copy(model)
    sid = max(spill_ids(model), default=-1) + 1
    victim, kept, channels = tensor, None, t.shape[-1] if t.shape else 1
    per_channel = t.nbytes // max(channels, 1)
    k = channels if nbytes is None or not per_channel else min(channels, -(-nbytes // per_channel))
    before: list[Operator] = []  # inserted after ``start``
    after: list[Operator] = []  # inserted before ``end``
    if k < channels:  # partial spilling along the channels
        a = _add(sg, dataclasses.replace(t, name=f"{t.name}/kept", shape=(*t.shape[:-1], channels - k),
                                         shape_signature=None))
        victim = _add(sg, dataclasses.replace(t, name=f"{t.name}/spilled", shape=(*t.shape[:-1], k),
                                              shape_signature=None))
        sizes = _const(sg, f"{t.name}/split_sizes", np.array([channels - k, k], np.int32))
        axis = _const(sg, f"{t.name}/split_axis", np.array(len(t.shape) - 1, np.int32))
        before.append(Operator("SPLIT_V", [tensor, sizes, axis], [a, victim], schema.options("SPLIT_V", num_splits=2)))
        kept = a
    fetched = _add(sg, dataclasses.replace(sg.tensors[victim], name=f"{sg.tensors[victim].name}/fetched"))
    before.append(Operator("Spill", [victim], [], custom_options=custom_options(id=sid), custom=True))
    after.append(Operator("Fetch", [], [fetched], custom_options=custom_options(
        victims=[sid], positions=[0], sizes=[sg.tensors[victim].shape[0] if sg.tensors[victim].shape else 1],
        axis=0), custom=True))
    restored = fetched
    if kept is not None:
        restored = _add(sg, dataclasses.replace(t, name=f"{t.name}/restored"))
        after.append(Operator("CONCATENATION", [kept, fetched], [restored],
                              schema.options("CONCATENATION", axis=len(t.shape) - 1)))
    for op in sg.operators[end:]:
        op.inputs = [restored if i == tensor else i for i in op.inputs]
    sg.operators[end:end] = after
    at = start + 1
    if early:
        at = sg0.producers().get(tensor, -1) + 1
        if at == start + 1 or kept is not None:
            raise TransformError("spilling early changes nothing here (or the spill is partial)")
    sg.operators[at:at] = before
    return _finish(model)


def fuse(model: Model, fetch: int) -> Model:
    """Fuse the Fetch at operator ``fetch`` with the CONCATENATION or CONV_2D that follows it and is the only reader
    of its output (TinySeg's fused fetching)."""
    sg0 = model.main
    f = sg0.operators[fetch]
    if f.op != "Fetch" or fetch + 1 >= len(sg0.operators):
        raise TransformError(f"operator {fetch} is not a Fetch followed by another operator")
    out = f.outputs[0]
    nxt = sg0.operators[fetch + 1]
    if _uses(sg0, out) != [fetch + 1] or out in sg0.outputs or nxt.inputs.count(out) != 1:
        raise TransformError(f"the output of Fetch {fetch} is read by more than the next operator")
    opts = _options(f)
    model, sg = _copy(model)
    t = sg.tensors[out]
    rank = len(t.shape)
    plain = not f.inputs and len(opts["victims"]) == 1  # a fetch of one whole tensor: any axis will do
    if nxt.op == "CONCATENATION":
        axis = nxt.options.axis + (len(sg.tensors[nxt.outputs[0]].shape) if nxt.options.axis < 0 else 0)
        if nxt.options.fused_activation_function:
            raise TransformError("the CONCATENATION has a fused activation")
        if not plain and (opts["axis"] + rank) % rank != axis:
            raise TransformError("the Fetch and the CONCATENATION join along different axes")
        mine = [("victim", v, t.shape[axis]) for v in opts["victims"]] if plain else _parts(opts, f.inputs)
        parts = [p for i in nxt.inputs for p in (mine if i == out else [("ram", i, 0)])]
        vict = [(p, key, size) for p, (kind, key, size) in enumerate(parts) if kind == "victim"]
        new = Operator("Fetch", [key for kind, key, _ in parts if kind == "ram"], list(nxt.outputs),
                       custom_options=custom_options(victims=[v for _, v, _ in vict], positions=[p for p, _, _ in vict],
                                                     sizes=[s for _, _, s in vict], axis=axis,
                                                     drop=opts.get("drop", 1)), custom=True)
    elif nxt.op == "CONV_2D":
        if rank != 4 or (opts["axis"] + 4) % 4 != 3 and not plain:
            raise TransformError("only a channel concatenation can be fused into a convolution")
        if nxt.inputs[0] != out or nxt.explicit_padding is not None:
            raise TransformError("the CONV_2D reads the fetched tensor as its filter or has a folded PAD")
        sizes = [t.shape[3]] if plain else opts["sizes"]
        conv = {k: int(getattr(nxt.options, k)) for k in CONV_OPTIONS}
        quant = {} if t.quant is None else {"scale": float(t.quant.scale[0]), "zero_point": int(t.zero_point)}
        if t.quant is not None and t.quant.per_channel:
            raise TransformError("the fetched tensor is quantized per channel")
        bias = nxt.inputs[2] if len(nxt.inputs) > 2 else -1
        new = Operator("FetchConv2D", [*f.inputs, nxt.inputs[1], bias], list(nxt.outputs), custom=True,
                       custom_options=custom_options(victims=opts["victims"], positions=opts["positions"], sizes=sizes,
                                                     axis=3, drop=opts.get("drop", 1), height=t.shape[1],
                                                     width=t.shape[2], **conv, **quant))
    else:
        raise TransformError(f"a Fetch cannot be fused with {nxt.op}")
    sg.operators[fetch:fetch + 2] = [new]
    return _finish(model)


def _ram_positions(opts: dict, inputs: list[int]) -> list[tuple[int, int]]:
    """(position, tensor) of a Fetch's arena inputs among all its parts."""
    taken = set(opts["positions"])
    free = [p for p in range(len(inputs) + len(opts["victims"])) if p not in taken]
    return list(zip(free, inputs))


def _parts(opts: dict, inputs: list[int]) -> list[tuple[str, int, int]]:
    """A Fetch's parts in order: ("ram", tensor, 0) or ("victim", id, size)."""
    parts = {p: ("ram", t, 0) for p, t in _ram_positions(opts, inputs)}
    parts.update({p: ("victim", v, s) for p, v, s in zip(opts["positions"], opts["victims"], opts["sizes"])})
    return [parts[p] for p in sorted(parts)]


def stream_input(model: Model, op_index: int, tensor: int) -> Model:
    """Spill ``tensor``, an arena input of the fused fetch at ``op_index``, right after its last other use, and let
    that op read it from storage like its other spilled parts (beyond the paper)."""
    sg0 = model.main
    f = sg0.operators[op_index]
    if f.op not in ("Fetch", "FetchConv2D") or tensor not in (f.inputs[:-2] if f.op == "FetchConv2D" else f.inputs):
        raise TransformError(f"tensor {tensor} is not an arena part of a fused fetch at operator {op_index}")
    uses = _uses(sg0, tensor)
    if uses[-1] != op_index or tensor in sg0.outputs or sg0.tensors[tensor].is_constant:
        raise TransformError(f"tensor {tensor} is read after operator {op_index} or is a model output/constant")
    prior = [u for u in uses if u < op_index] + [p for p in [sg0.producers().get(tensor)] if p is not None]
    start = max(prior, default=-1)
    opts = _options(f)
    model, sg = _copy(model)
    sid = max(spill_ids(model), default=-1) + 1
    ram = f.inputs[:-2] if f.op == "FetchConv2D" else f.inputs
    pos = dict((t, p) for p, t in _ram_positions(opts, ram))[tensor]
    t = sg.tensors[tensor]
    opts["victims"], opts["positions"] = [*opts["victims"], sid], [*opts["positions"], pos]
    opts["sizes"] = [*opts["sizes"], t.shape[(opts["axis"] + len(t.shape)) % len(t.shape)]]
    if f.op == "FetchConv2D" and "scale" not in opts and t.quant is not None:
        opts.update(scale=float(t.quant.scale[0]), zero_point=int(t.zero_point))
    op = sg.operators[op_index]
    op.inputs = [i for i in op.inputs if i != tensor] if f.op == "Fetch" else [
        *[i for i in ram if i != tensor], *f.inputs[-2:]]
    op.custom_options = custom_options(**opts)
    sg.operators.insert(start + 1, Operator("Spill", [tensor], [], custom_options=custom_options(id=sid), custom=True))
    return _finish(model)


def fold_constants(model: Model) -> Model:
    """Replace small operators whose result is known before running (SHAPE of a static shape, then anything over
    constants only) by constants, computed by micronn's own kernels so the bytes are the runtime's."""
    model, sg = _copy(model)
    keep = []
    for op in sg.operators:
        outs = [sg.tensors[o] for o in op.outputs]
        ins = [sg.tensors[i] for i in op.inputs if i >= 0]
        small = len(outs) == 1 and outs[0].nbytes <= FOLD_MAX_BYTES and op.outputs[0] not in sg.outputs
        value = None
        if small and op.op == "SHAPE" and ins:  # TFLM (and micronn) run with the static shape, never the signature
            value = np.array(ins[0].shape, outs[0].dtype)
        elif small and not op.custom and op.op in FOLDABLE_OPS and ins and all(t.is_constant for t in ins):
            if -1 in op.inputs:
                keep.append(op)
                continue
            one = Subgraph([dataclasses.replace(t, index=k) for k, t in enumerate(ins + outs)],
                           [dataclasses.replace(op, inputs=[k for k in range(len(ins))], outputs=[len(ins)], index=0)],
                           [], [len(ins)])
            try:
                it = Interpreter(Model([one]))
                it.invoke()
                value = it.get_output(0)
            except MicronnError:
                value = None
        if value is None:
            keep.append(op)
            continue
        value = np.array(value.astype(outs[0].dtype).reshape(outs[0].shape), order="C")
        value.flags.writeable = False
        sg.tensors[op.outputs[0]] = dataclasses.replace(outs[0], data=value, buffer=0)
    sg.operators = keep
    return _finish(model)


def drop_identities(model: Model) -> Model:
    """Remove PAD/PADV2 operators that pad nothing (their output is a byte copy of the input with the same type and
    quantization): their readers read the input instead."""
    model, sg = _copy(model)
    keep, alias = [], {}
    for op in sg.operators:
        op.inputs = [alias.get(i, i) for i in op.inputs]
        if op.op in ("PAD", "PADV2") and len(op.outputs) == 1 and op.outputs[0] not in sg.outputs:
            x, p, y = sg.tensors[op.inputs[0]], sg.tensors[op.inputs[1]], sg.tensors[op.outputs[0]]
            if (p.is_constant and not np.asarray(p.data).any() and x.shape == y.shape and x.dtype == y.dtype
                    and x.quant == y.quant and op.inputs[0] not in sg.outputs):
                alias[op.outputs[0]] = op.inputs[0]
                continue
        keep.append(op)
    sg.operators = keep
    sg.outputs = [alias.get(t, t) for t in sg.outputs]
    return _finish(model)
