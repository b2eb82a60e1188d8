"""``micronn info``: a model's ops, tensors, sizes and memory summary."""

from __future__ import annotations

from collections import Counter
from typing import Any

from micronn.errors import MicronnError
from micronn.interpreter import Interpreter
from micronn.ir import Model
from micronn.tflite.reader import Source, read
from micronn.tinyseg.cold import cold_ranges as find_cold_ranges


def info(model: Model | Source, cold_ranges: bool = False) -> dict[str, Any]:
    """Ops, tensors, sizes and a memory summary (TFLM plan and the live-set lower bound); with ``cold_ranges``, each
    activation's longest idle stretch (TinySeg's Algorithm 2)."""
    m = model if isinstance(model, Model) else read(model)
    sg = m.main
    weights = sum(t.nbytes for sg_ in m.subgraphs for t in sg_.tensors if t.is_constant)
    tensors = [{"index": t.index, "name": t.name, "shape": list(t.shape), "dtype": t.dtype.name, "bytes": t.nbytes,
                "kind": "constant" if t.is_constant else "variable" if t.is_variable else "activation"}
               for t in sg.tensors]
    out: dict[str, Any] = {
        "subgraphs": len(m.subgraphs), "operators": len(sg.operators),
        "op_counts": dict(Counter(op.op for op in sg.operators)),
        "ops": [{"index": op.index, "op": op.op, "inputs": op.inputs, "outputs": op.outputs} for op in sg.operators],
        "inputs": [tensors[i] for i in sg.inputs], "outputs": [tensors[i] for i in sg.outputs],
        "tensors": tensors, "weight_bytes": weights,
        "activation_bytes": sum(t["bytes"] for t in tensors if t["kind"] == "activation"),
    }
    try:
        report = Interpreter(m).arena_report()
        out["memory"] = {k: report[k] for k in ("planner", "head_bytes", "tail_bytes", "total_bytes",
                                                "lower_bound_bytes", "shared_groups")}
        out["memory"]["tflm_head_bytes"] = Interpreter(m, planner="tflm").arena_report()["head_bytes"]
    except MicronnError as e:  # info must still describe models micronn cannot run
        out["memory"] = {"error": f"{type(e).__name__}: {e}"}
    if cold_ranges:
        out["cold_ranges"] = [{"tensor": c.tensor, "name": sg.tensors[c.tensor].name, "start": c.start, "end": c.end,
                               "last": c.last, "length": c.length, "bytes": c.nbytes} for c in find_cold_ranges(m)]
    return out
