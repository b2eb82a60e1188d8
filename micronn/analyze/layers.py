"""``micronn analyze``: one row per operator (shapes, types, quantization, MACs, flash, live memory, plan offsets,
scratch and, on a device target, measured instructions and cycles) and the model's totals, like STM32Cube.AI's
analyze and Vela's summary, from micronn's exact plans."""

from __future__ import annotations

import csv
import dataclasses
import io
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from micronn import planners
from micronn.errors import MicronnError
from micronn.footprint import tflm_footprint
from micronn.interpreter import Interpreter
from micronn.ir import Model, Subgraph, Tensor, op_macs
from micronn.planners.base import op_times
from micronn.tflite.reader import Source, read

COLUMNS = ("index", "op", "inputs", "outputs", "quantization", "macs", "weight_bytes", "live_bytes", "output_offsets",
           "scratch_bytes", "instructions", "cycles")


def _spec(t: Tensor | None) -> str:
    return "-" if t is None else t.spec


def _quantization(ts: list[Tensor]) -> str:
    """How the op's quantized tensors are quantized: per-tensor, or per-channel with the channel count."""
    kinds = []
    for t in ts:
        if t.quant is not None and len(t.quant.scale):
            n = len(t.quant.scale)
            kinds.append(f"per-channel({n})" if n > 1 else "per-tensor")
    if not kinds:
        return "-"
    return "per-channel" if any(k.startswith("per-channel") for k in kinds) and len(set(kinds)) > 1 else kinds[0]


def _buffer_key(sg: Subgraph, t: Tensor) -> Any:
    return t.buffer if t.buffer > 0 else ("t", sg.index, t.index)  # tensors built in code have no buffer yet


def weight_bytes(model: Model) -> int:
    """Bytes of constant data in the file: each buffer once, however many tensors share it."""
    return sum({_buffer_key(sg, t): t.nbytes for sg in model.subgraphs for t in sg.tensors if t.is_constant}.values())


@dataclass
class Analysis:
    """Per-operator rows and model totals; ``text()``, ``csv()`` and ``to_dict()`` render them. ``live_bytes`` is
    the sum of the tensors and scratch buffers alive during the op (its maximum is the live-set lower bound)."""

    model: str
    rows: list[dict[str, Any]]
    totals: dict[str, Any]
    memory: dict[str, Any] = field(default_factory=dict)
    details: list[dict[str, Any]] = field(default_factory=list)  # per operator: options and every tensor
    edges: list[dict[str, Any]] = field(default_factory=list)  # producer -> consumer ("input"/"output" ends)
    plan: dict[str, Any] | None = field(default=None, repr=False)  # Interpreter.arena_report() of the planner

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "rows": self.rows, "totals": self.totals, "memory": self.memory,
                "details": self.details, "edges": self.edges}

    def csv(self) -> str:
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(COLUMNS)
        for r in self.rows:
            w.writerow([" ".join(map(str, r[c])) if isinstance(r[c], list) else ("" if r[c] is None else r[c])
                        for c in COLUMNS])
        return buf.getvalue()

    def text(self, width: int = 120) -> str:
        device = any(r["cycles"] is not None for r in self.rows)
        head = ["#", "op", "output", "quant", "MACs", "flash B", "live B", "scratch B"] + (["cycles"] if device else [])
        body = [[str(r["index"]), r["op"][:22], r["outputs"][0] if r["outputs"] else "-", r["quantization"],
                 f"{r['macs']:,}", f"{r['weight_bytes']:,}", f"{r['live_bytes']:,}", f"{r['scratch_bytes']:,}"]
                + ([f"{round(r['cycles']):,}" if r["cycles"] is not None else "-"] if device else [])
                for r in self.rows]
        widths = [max(len(x) for x in col) for col in zip(head, *body)]
        spare = width - sum(widths) - 2 * (len(widths) - 1)
        if spare < 0:  # shorten the output column first: shapes are the widest cells
            widths[2] = max(8, widths[2] + spare)
        right = {0, 4, 5, 6, 7, 8}

        def line(cells: list[str]) -> str:
            return "  ".join((c[:w].rjust(w) if i in right else c[:w].ljust(w)) for i, (c, w) in
                             enumerate(zip(cells, widths))).rstrip()

        t, m = self.totals, self.memory
        out = [line(head), line(["-" * w for w in widths]), *map(line, body), ""]
        out.append(f"{t['operators']} operators, {t['macs']:,} MACs, {t['weight_bytes']:,} B of weights (flash)"
                   + (f", {round(t['cycles']):,} cycles ({t['instructions']:,} instructions) on {t['target']}"
                      if t.get("cycles") is not None else ""))
        if "error" in m:
            out.append(f"memory: {m['error']}")
        else:
            out.append(f"arena: micronn ({m['planner']}) head {m['head_bytes']:,} B + tail {m['tail_bytes']:,} B; "
                       f"TFLM's planner head {m['tflm_head_bytes']:,} B")
            out.append(f"live set: lower bound {m['lower_bound_bytes']:,} B, peak at operator {m['peak_op']} "
                       f"({m['peak_op_name']})")
            out.append(f"TFLM's kTensorArenaSize with its own plan (estimated): {m['tflm_arena_bytes']:,} B on the "
                       f"64-bit host, {m['tflm_arena_cortex_m_bytes']:,} B on a 32-bit Cortex-M")
        return "\n".join(out)

    def __repr__(self) -> str:
        t = self.totals
        return f"Analysis({self.model!r}: {t['operators']} ops, {t['macs']:,} MACs, {t['weight_bytes']:,} B weights)"

    def _repr_html_(self) -> str:
        import html

        cells = "".join(f"<th>{c}</th>" for c in COLUMNS)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(str(r[c]))}</td>" for c in COLUMNS) + "</tr>"
                       for r in self.rows)
        return f"<p>{html.escape(repr(self))}</p><table><tr>{cells}</tr>{body}</table>"


def _tensor_detail(t: Tensor) -> dict[str, Any]:
    d: dict[str, Any] = {"index": t.index, "name": t.name, "type": _spec(t),
                         "kind": "constant" if t.is_constant else "variable" if t.is_variable else "activation"}
    if t.quant is not None and len(t.quant.scale):
        sc, zp = t.quant.scale.astype(float), t.quant.zero_point.astype(int)
        d["quantization"] = ({"scale": float(sc[0]), "zero_point": int(zp[0])} if len(sc) == 1 else
                             {"channels": len(sc), "axis": t.quant.axis, "scale_min": float(sc.min()),
                              "scale_max": float(sc.max()), "zero_points": sorted(set(zp.tolist()))[:4]})
    return d


def _options(op: Any) -> dict[str, Any]:
    if op.custom:
        return {"custom_options_bytes": len(op.custom_options or b"")}
    if dataclasses.is_dataclass(op.options):
        return {k: (v if isinstance(v, (int, float, str, bool, type(None))) else str(v))
                for k, v in dataclasses.asdict(op.options).items()}
    return {}


def _edges(sg: Subgraph) -> list[dict[str, Any]]:
    producer = {t: op.index for op in sg.operators for t in op.outputs}
    out = []
    for op in sg.operators:
        for t in op.inputs:
            if t >= 0 and not sg.tensors[t].is_constant:
                out.append({"from": producer.get(t, "input"), "to": op.index, "tensor": t,
                            "label": _spec(sg.tensors[t])})
    out += [{"from": producer.get(t, "input"), "to": "output", "tensor": t, "label": _spec(sg.tensors[t])}
            for t in sg.outputs]
    return out


def _live(requests: list[Any], span: tuple[int, int]) -> int:
    """The most bytes alive at one time while an operator runs (``span``: its times on the planners' timeline,
    which includes the subgraphs a control-flow operator calls)."""
    return max((sum(r.size for r in requests if r.first <= t <= r.last) for t in range(span[0], span[1] + 1)),
               default=0)


def analyze(model: Model | Source, planner: str = "optimal", target: str | None = None) -> Analysis:
    """Analyse ``model``: per operator and in total. ``target`` (e.g. ``"cortex-m4"``) runs it once on that
    emulated device and fills the instructions and cycles columns with measured counts."""
    name = str(model) if isinstance(model, (str, bytes)) and not isinstance(model, bytes) else "model"
    m = model if isinstance(model, Model) else read(model)
    sg: Subgraph = m.main
    memory: dict[str, Any] = {}
    requests: list[Any] = []
    offsets: dict[int, int] = {}
    scratch: dict[int, int] = {}
    planners.get(planner)  # an unknown planner is the caller's mistake, not the model's
    spans: dict[tuple[int, int], tuple[int, int]] = {}
    report: dict[str, Any] = {}
    try:
        it = Interpreter(m, planner=planner)
        report = it.arena_report()
        spans = op_times(m)
        requests = list(it.base_requests)  # each tensor and scratch buffer on its own, called subgraphs' too
        for b in report["buffers"]:
            if b["subgraph"] == 0 and b["kind"] == "tensor":
                offsets[b["tensor"]] = b["offset"]
            elif b["subgraph"] == 0:
                scratch[b["op"]] = scratch.get(b["op"], 0) + b["size"]
        tflm = Interpreter(m, planner="tflm").arena_report()
        live = [_live(requests, spans.get((sg.index, i), (-1, -1))) for i in range(len(sg.operators))]
        peak = int(np.argmax(live)) if live else 0
        fp = tflm_footprint(m, head=tflm["head_bytes"])
        memory = {"planner": report["planner"], "head_bytes": report["head_bytes"], "tail_bytes": report["tail_bytes"],
                  "total_bytes": report["total_bytes"], "lower_bound_bytes": report["lower_bound_bytes"],
                  "tflm_head_bytes": tflm["head_bytes"], "tflm_tail_bytes": tflm["tail_bytes"],
                  "peak_op": peak, "peak_op_name": sg.operators[peak].op if sg.operators else "-",
                  "tflm_arena_bytes": fp["host"]["total_bytes"],
                  "tflm_arena_cortex_m_bytes": fp["cortex_m"]["total_bytes"]}
    except MicronnError as e:  # the analysis still describes models micronn cannot run
        memory = {"error": f"{type(e).__name__}: {e}"}
    costs: dict[int, dict[str, Any]] = {}
    if target is not None:
        from micronn.micro import run_model

        costs = {o["index"]: o for o in run_model(m, target, profile=True)["ops"]}
    rows = []
    counted: set[Any] = set()
    for op in sg.operators:
        ins = [sg.tensors[i] if i >= 0 else None for i in op.inputs]
        outs = [sg.tensors[i] for i in op.outputs]
        consts = {_buffer_key(sg, t): t.nbytes for t in ins if t is not None and t.is_constant}
        flash = sum(n for k, n in consts.items() if k not in counted)  # a buffer counts at its first reader
        counted.update(consts)
        c = costs.get(op.index, {})
        rows.append({"index": op.index, "op": op.op, "inputs": [_spec(t) for t in ins],
                     "outputs": [_spec(t) for t in outs],
                     "quantization": _quantization([t for t in [*ins, *outs] if t is not None]),
                     "macs": op_macs(sg, op), "weight_bytes": flash,
                     "live_bytes": _live(requests, spans.get((sg.index, op.index), (-1, -1))) if requests else 0,
                     "output_offsets": [offsets.get(t) for t in op.outputs], "scratch_bytes": scratch.get(op.index, 0),
                     "instructions": c.get("instructions"), "cycles": c.get("cycles")})
    totals: dict[str, Any] = {"operators": len(rows), "macs": sum(r["macs"] for r in rows),
                              "weight_bytes": weight_bytes(m), "target": target}
    if target is not None:
        totals["instructions"] = sum(r["instructions"] or 0 for r in rows)
        totals["cycles"] = sum(r["cycles"] or 0 for r in rows)
    details = [{"index": op.index, "op": op.op, "options": _options(op),
                "inputs": [_tensor_detail(sg.tensors[i]) for i in op.inputs if i >= 0],
                "outputs": [_tensor_detail(sg.tensors[i]) for i in op.outputs]} for op in sg.operators]
    return Analysis(name, rows, totals, memory, details, _edges(sg), report if "error" not in memory else None)
