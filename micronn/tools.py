"""The public functions behind the CLI: each returns plain data (JSON-ready) that the CLI prints."""

from __future__ import annotations

import time
from collections import Counter
from importlib import resources
from typing import Any

import numpy as np

from micronn.footprint import tflm_footprint
from micronn.interpreter import Interpreter
from micronn.ir import Model
from micronn.planners import Sharing
from micronn.planners.offline import with_offline_plan
from micronn.tflite.reader import Source, read
from micronn.tflite.writer import save


def bundled_model(name: str) -> bytes:
    """A model shipped inside the package, e.g. ``"person_detect"``."""
    return resources.files("micronn.models").joinpath(f"{name}.tflite").read_bytes()


def _model(model: Model | Source) -> Model:
    return model if isinstance(model, Model) else read(model)


def random_inputs(model: Model, seed: int = 0) -> list[np.ndarray]:
    """Random inputs covering each input's full integer range (floats in [-1, 1))."""
    rng = np.random.default_rng(seed)
    out = []
    for i in model.main.inputs:
        t = model.main.tensors[i]
        if t.dtype.kind in "iu":
            info = np.iinfo(t.dtype)
            out.append(rng.integers(info.min, info.max, t.shape, dtype=t.dtype, endpoint=True))
        elif t.dtype == np.bool_:
            out.append(rng.integers(0, 2, t.shape).astype(np.bool_))
        else:
            out.append(rng.uniform(-1, 1, t.shape).astype(t.dtype))
    return out


def info(model: Model | Source, cold_ranges: bool = False) -> dict[str, Any]:
    """Ops, tensors, sizes and a memory summary (TFLM plan and the live-set lower bound); with ``cold_ranges``, each
    activation's longest idle stretch (TinySeg's Algorithm 2)."""
    m = _model(model)
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
    except Exception as e:  # info must still describe models micronn cannot run
        out["memory"] = {"error": f"{type(e).__name__}: {e}"}
    if cold_ranges:
        from micronn.tinyseg.cold import cold_ranges as analyze

        out["cold_ranges"] = [{"tensor": c.tensor, "name": sg.tensors[c.tensor].name, "start": c.start, "end": c.end,
                               "last": c.last, "length": c.length, "bytes": c.nbytes} for c in analyze(m)]
    return out


def plan(model: Model | Source, planner: str = "optimal", sharing: bool | Sharing = True, *,
         offline_out: str | None = None, plot: str | None = None, compare: str | None = None) -> dict[str, Any]:
    """The arena plan of ``planner``: head/tail/total, lower bound and every buffer's offset and lifetime,
    and (``target``) the whole arena TFLM needs with this head on the host and on a 32-bit Cortex-M.

    ``offline_out`` writes the model with the plan as TFLM offline-plan metadata (plans without memory
    sharing only: TFLM places each tensor at its own offset) and reports the head TFLM will plan for it;
    ``plot`` draws the plan (png/svg/html), beside the ``compare`` planner's if given.
    """
    m = _model(model)
    it = Interpreter(m, planner=planner, sharing=sharing)
    report = it.arena_report()
    # the arena to give TFLM running this plan (offline), on the host wheel and on a 32-bit Cortex-M
    report["target"] = tflm_footprint(m, head=report["head_bytes"])
    if offline_out is not None:
        if it.sharing != Sharing.none():  # TFLM runs its own kernels on the file as written
            it = Interpreter(m, planner=planner, sharing=False)
            it.allocate_tensors()
            report["offline_plan_note"] = ("TFLM runs the model as written with its own kernels' scratch: wrote the "
                                           "plan without memory sharing, PAD folding or compact scratch")
        out = with_offline_plan(m, it.plan)
        save(out, offline_out)
        tflm = Interpreter(out, planner="tflm")
        tflm.allocate_tensors()
        report["offline"] = {"path": offline_out, "head_bytes": it.head, "tflm_head_bytes": tflm.head,
                             "tflm_original_head_bytes": Interpreter(m, planner="tflm").arena_report()["head_bytes"]}
    if plot is not None:
        from micronn.plot import plot_plan

        other = Interpreter(m, planner=compare).arena_report() if compare else None
        report["plot"] = str(plot_plan(report, plot, other))
    return report


def run(model: Model | Source, inputs: list[np.ndarray] | None = None, *, seed: int = 0,
        arena_size: int | None = None, profile: bool = False, device: str | None = None) -> dict[str, Any]:
    """Invoke once; returns outputs, the arena used and, with ``profile``, per-op times. With ``device``
    (e.g. ``"cortex-m4"``, ``"qemu-m4"``, ``"host"``) every op runs there: instructions and cycles instead."""
    m = _model(model)
    if device is not None:
        from micronn.micro.runtime import run_model

        return run_model(m, device, inputs if inputs is not None else random_inputs(m, seed), profile=profile)
    it = Interpreter(m, arena_size)
    it.allocate_tensors()
    for i, x in enumerate(inputs if inputs is not None else random_inputs(m, seed)):
        it.set_input(x, i)
    it.profiling = profile
    t0 = time.perf_counter_ns()
    it.invoke()
    total = time.perf_counter_ns() - t0
    report = it.arena_report()
    out: dict[str, Any] = {"outputs": [it.get_output(i) for i in range(len(m.main.outputs))],
                           "arena": {k: v for k, v in report.items() if k.endswith("bytes") or k == "planner"},
                           "invoke_ns": total}
    if profile:
        kernel = sum(it.op_times_ns)
        out["profile"] = {
            "ops": [{"index": n.index, "op": n.op.op, "ns": t} for n, t in zip(it._nodes, it.op_times_ns)],
            "kernel_ns": kernel, "total_ns": total, "overhead_ns": total - kernel,
        }
    return out


def devices() -> list[dict[str, Any]]:
    """Every device target and whether it can run here (toolchain, emulator, QEMU)."""
    from micronn.micro.runtime import devices as _devices

    return _devices()


def demo(image: str = "person") -> dict[str, Any]:
    """micronn's main job on bundled data: person detection on a bundled 96x96 photo."""
    pixels = np.load(resources.files("micronn.data").joinpath(f"{image}.npy").open("rb"))
    x = (pixels.astype(np.int16) - 128).astype(np.int8).reshape(1, 96, 96, 1)
    res = run(bundled_model("person_detect"), [x])
    tflm = Interpreter(bundled_model("person_detect"), planner="tflm")
    tflm.allocate_tensors()
    res["arena"]["tflm_head_bytes"] = tflm.head
    scores = (res["outputs"][0].astype(np.float64).ravel() + 128) / 256  # output scale 1/256, zero point -128
    return {"image": image, "person_score": float(scores[1]), "no_person_score": float(scores[0]),
            "person": bool(scores[1] > scores[0]), "arena": res["arena"]}


def reorder(model: Model | Source, output: str | None = None, max_states: int = 200_000) -> dict[str, Any]:
    """Find the operator order with the smallest peak live set; write it as .tflite to ``output``."""
    from micronn.planners.reorder import best_order, peak_of_order
    from micronn.planners.reorder import reorder as apply_order

    m = _model(model)
    it = Interpreter(m, planner="tflm")
    it.allocate_tensors()
    scratch = {r.scratch[0]: r.size for r in it.requests if r.scratch is not None and r.subgraph == 0}
    n = len(m.main.operators)
    order, exact = best_order(m.main, scratch, max_states)
    out = apply_order(m, order)
    res: dict[str, Any] = {"order": order, "exact": exact, "changed": order != list(range(n)),
                           "peak_before_bytes": peak_of_order(m.main, list(range(n)), scratch),
                           "peak_after_bytes": peak_of_order(m.main, order, scratch)}
    tflm_after = Interpreter(out, planner="tflm")
    tflm_after.allocate_tensors()
    res["tflm_head_before_bytes"], res["tflm_head_after_bytes"] = it.head, tflm_after.head
    if output is not None:
        save(out, output)
        res["path"] = output
    return res


def optimize(model: Model | Source, output: str | None = None, target_bytes: int | None = None,
             storage: str = "memory", *, report: str | None = None, seed: int = 0) -> dict[str, Any]:
    """TinySeg: spill idle tensors and fuse their fetching (``micronn.tinyseg.optimize``), write the result to
    ``output``, and check that the written model, run with ``storage``, gives the original's outputs on random
    inputs. ``report`` writes an HTML page with the steps, the plans before and after and the latency breakdown."""
    from micronn.tflite.writer import write
    from micronn.tinyseg import optimize as tinyseg_optimize
    from micronn.tinyseg.storage import open_storage

    m = _model(model)
    res = tinyseg_optimize(m, target_bytes, storage)
    out = res.as_dict()
    data = write(res.model)
    if output is not None:
        with open(output, "wb") as f:
            f.write(data)
        out["path"] = output
    inputs = random_inputs(m, seed)
    want = run(m, inputs)["outputs"]
    with open_storage(storage) as st:
        it = Interpreter(data, storage=st)
        for i, x in enumerate(inputs):
            it.set_input(x, i)
        it.invoke()
        got = [it.get_output(i) for i in range(len(want))]
    out["verified"] = all(a.dtype == b.dtype and a.tobytes() == b.tobytes() for a, b in zip(want, got))
    if report is not None:
        from micronn.tinyseg.latency import breakdown
        from micronn.tinyseg.report import write_report

        models = {"base": res.steps[0].model, "+ temporary tensor reduction": res.steps[0].model,
                  "+ spilling": tinyseg_optimize(m, target_bytes, storage, fuse=False).model,
                  "+ fused fetching": res.model}
        out["report"] = str(write_report(report, m, res, breakdown(models), out["verified"]))
    return out
