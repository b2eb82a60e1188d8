"""Find the patches of a patched model again, from its graph alone, for pictures and reports.

A model written by ``micronn optimize --patches auto`` (or :func:`micronn.patch.patch_stages`) is a plain TFLite
graph: nothing records which operators belong to which stripe. The structure does: every patched stage ends in a
CONCATENATION along the height of an NHWC image, and each of its inputs is computed by operators that no other input
of that join needs (the STRIDED_SLICE of the shared source and the stripe's own layers), and is named
``.../patchK`` as :mod:`micronn.patch.transform` names it. Those exclusive operators are the patch; the operators
every stripe shares are what ran before the stage.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from micronn.ir import Model, Subgraph

_STRIPE = re.compile(r"/patch\d+$")  # how micronn.patch names a stripe's output (a join of branches is no stage)


def _height_join(sg: Subgraph, k: int) -> bool:
    op = sg.operators[k]
    if op.op != "CONCATENATION" or len(op.inputs) < 2 or len(op.outputs) != 1:
        return False
    y = sg.tensors[op.outputs[0]]
    axis = getattr(op.options, "axis", None)
    return len(y.shape) == 4 and y.shape[0] == 1 and axis in (1, -3)


def _ancestors(sg: Subgraph, tensor: int, producers: dict[int, int]) -> set[int]:
    """Every operator ``tensor`` depends on (its producer, theirs, ...)."""
    seen: set[int] = set()
    todo = [tensor]
    while todo:
        k = producers.get(todo.pop())
        if k is None or k in seen:
            continue
        seen.add(k)
        todo.extend(i for i in sg.operators[k].inputs if i >= 0)
    return seen


def _source_rows(sg: Subgraph, ops: set[int], source: int) -> list[int]:
    """The rows of ``source`` the patch's operators read (a STRIDED_SLICE's bounds, else every row)."""
    h = sg.tensors[source].shape[1]
    lo, hi = h, -1
    for k in ops:
        op = sg.operators[k]
        if source not in op.inputs:
            continue
        a, b = 0, h - 1
        if op.op == "STRIDED_SLICE" and op.inputs[0] == source and sg.tensors[op.inputs[1]].data is not None:
            begin = np.asarray(sg.tensors[op.inputs[1]].data).reshape(-1)
            end = np.asarray(sg.tensors[op.inputs[2]].data).reshape(-1)
            a, b = int(begin[1]), int(end[1]) - 1
        lo, hi = min(lo, a), max(hi, b)
    return [lo, hi] if hi >= 0 else [0, h - 1]


def patch_layout(model: Model) -> list[dict[str, Any]]:
    """The patched stages of ``model``'s main subgraph, in operator order (empty for an unpatched model).

    Each stage: ``join`` (the CONCATENATION's operator index), ``output``/``shape`` (the joined image), ``source``/
    ``source_shape`` (the image its stripes slice; None when they read several), and ``patches``, top first: the
    output ``rows`` each computes, the ``source_rows`` its receptive field reads (the halo is where neighbours
    overlap) and its operator indices ``ops``."""
    sg = model.main
    producers = sg.producers()
    stages = []
    for k in range(len(sg.operators)):
        if not _height_join(sg, k) or not all(_STRIPE.search(sg.tensors[t].name or "")
                                              for t in sg.operators[k].inputs):
            continue
        join = sg.operators[k]
        closures = [_ancestors(sg, t, producers) for t in join.inputs]
        count: dict[int, int] = {}
        for c in closures:
            for o in c:
                count[o] = count.get(o, 0) + 1
        own = [{o for o in c if count[o] == 1} for c in closures]
        if any(not o for o in own):
            continue  # an input computed before the join's other inputs: a join, not a patched stage
        # the source: activations the patches read that none of them computes
        read = {i for o in own for k2 in o for i in sg.operators[k2].inputs
                if i >= 0 and not sg.tensors[i].is_constant and producers.get(i) not in o}
        outside = {i for i in read if not any(producers.get(i) in o for o in own)}
        source = outside.pop() if len(outside) == 1 else None
        top, patches = 0, []
        for t, o in zip(join.inputs, own):
            h = sg.tensors[t].shape[1]
            rows = [top, top + h - 1]
            top += h
            patches.append({"rows": rows, "ops": sorted(o),
                            "source_rows": None if source is None else _source_rows(sg, o, source)})
        y = join.outputs[0]
        stages.append({"join": k, "output": y, "name": sg.tensors[y].name, "shape": list(sg.tensors[y].shape),
                       "source": source, "source_shape": None if source is None else list(sg.tensors[source].shape),
                       "patches": patches})
    return stages
