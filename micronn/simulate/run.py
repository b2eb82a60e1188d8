"""``micronn run`` and ``micronn demo``: one invoke on the host interpreter."""

from __future__ import annotations

import time
from importlib import resources
from typing import Any

import numpy as np

from micronn.interpreter import Interpreter
from micronn.ir import Model, random_inputs
from micronn.models import bundled_model
from micronn.tflite.reader import Source, read


def run(model: Model | Source, inputs: list[np.ndarray] | None = None, *, seed: int = 0,
        arena_size: int | None = None, profile: bool = False) -> dict[str, Any]:
    """Invoke once; returns outputs, the arena used and, with ``profile``, per-op times (TFLM paper, Table 2)."""
    m = model if isinstance(model, Model) else read(model)
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
