"""``micronn run`` and ``micronn demo``: one invoke on the host interpreter."""

from __future__ import annotations

import os
import time
from importlib import resources
from typing import Any

import numpy as np

from micronn.errors import MicronnError, check_writable, writing
from micronn.interpreter import Interpreter
from micronn.ir import Model, random_inputs
from micronn.models import bundled_model
from micronn.tflite.reader import Source, read

NPY_MAGIC = b"\x93NUMPY"


def load_inputs(paths: list[str | os.PathLike[str]]) -> list[np.ndarray]:
    """One array per ``.npy`` file, never unpickling: a file of Python objects could run code when loaded."""
    out = []
    for p in paths:
        name = os.fspath(p)
        try:
            with open(p, "rb") as f:
                if f.read(len(NPY_MAGIC)) != NPY_MAGIC:
                    raise MicronnError(f"input {name!r} is not a .npy file (save arrays with numpy.save)")
                f.seek(0)
                x = np.load(f, allow_pickle=False)
        except OSError as e:
            raise MicronnError(f"cannot read input {name!r}: {e.strerror or e}") from e
        except (ValueError, EOFError) as e:
            why = "it holds Python objects, which micronn never unpickles" if "allow_pickle" in str(e) else str(e)
            raise MicronnError(f"input {name!r} is not a valid .npy file: {why}") from e
        out.append(x)
    return out


def output_path(path: str | os.PathLike[str]) -> str:
    """Where :func:`save_outputs` writes: ``path`` with ``.npz`` appended unless it has it (numpy's rule)."""
    p = os.fspath(path)
    return p if p.endswith(".npz") else p + ".npz"


def check_output(path: str | os.PathLike[str]) -> None:
    """Refuse an output path :func:`save_outputs` could not write, before the run that produces the outputs."""
    check_writable(output_path(path))


def save_outputs(path: str | os.PathLike[str], outputs: list[np.ndarray]) -> str:
    """Write ``outputs`` as ``arr_0``, ``arr_1``, ... of an .npz file; returns the path written."""
    p = output_path(path)
    with writing(p), open(p, "wb") as f:
        np.savez(f, *outputs)
    return p


def run(model: Model | Source, inputs: list[np.ndarray] | None = None, *, seed: int = 0,
        arena_size: int | None = None, profile: bool = False, output: str | os.PathLike[str] | None = None,
        ) -> dict[str, Any]:
    """Invoke once; returns outputs, the arena used and, with ``profile``, per-op times (TFLM paper, Table 2).

    ``inputs`` must give every input of the model (none: random ones from ``seed``); ``output`` saves the outputs
    with :func:`save_outputs`, its folder checked before any work."""
    if output is not None:
        check_output(output)
    m = model if isinstance(model, Model) else read(model)
    if inputs is not None and len(inputs) != len(m.main.inputs):
        raise MicronnError(f"the model has {len(m.main.inputs)} input(s), {len(inputs)} given")
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
    if output is not None:
        out["path"] = save_outputs(output, out["outputs"])
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
