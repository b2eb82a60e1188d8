"""Batch-1 invoke time of micronn beside the TFLM wheel and LiteRT, same inputs, same run, as ratios.

    python benchmarks/speed.py [--runs N] [--json] [MODEL.tflite ...]

Per model (every bundled model and every model in ``tests/models/`` by default): the fastest of ``--runs``
invokes of micronn's interpreter (the numpy reference), of ``NativeModel`` (the exported C compiled for the host,
one native call per invoke; only where every operator has a C kernel), of the TFLM wheel (the peer whose bytes
micronn must give) and of LiteRT with one thread (not exact: its optimized kernels round differently). Inputs are
set once; only ``invoke`` is timed. ``same`` says whether micronn's outputs equal the wheel's byte for byte. The
issue's goal: micronn at most the wheel's time on every model (``native/TFLM <= 1``).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
from tflite_micro.python.tflite_micro import runtime

import micronn
from micronn import Interpreter
from micronn.errors import MicronnError
from micronn.export import NativeModel
from micronn.ir import random_inputs
from micronn.tflite.reader import read

ROOT = Path(__file__).resolve().parents[1]


def default_models() -> list[Path]:
    bundled = sorted((Path(micronn.__file__).parent / "models").glob("*.tflite"))
    return bundled + sorted((ROOT / "tests" / "models").glob("*.tflite"))


def best_of(fn, runs: int, budget_s: float = 2.0) -> float:
    """Fastest of ``runs`` calls (fewer if they exceed ``budget_s``), in seconds: the least disturbed figure."""
    best, start = float("inf"), time.perf_counter()
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
        if t0 - start > budget_s:
            break
    return best


def _litert(data: bytes, xs: list[np.ndarray]):
    try:
        from ai_edge_litert.interpreter import Interpreter as Lite
    except ImportError:
        return None, "not installed"
    try:
        lite = Lite(model_content=data, num_threads=1)
        lite.allocate_tensors()
        for d, x in zip(lite.get_input_details(), xs):
            lite.set_tensor(d["index"], x)
        lite.invoke()
    except Exception as e:  # LiteRT refuses some TFLM models (e.g. person_detect's old schema)
        return None, f"refuses: {str(e).splitlines()[0][:60]}"
    return lite.invoke, ""


def measure(path: Path, runs: int) -> dict:
    data = path.read_bytes()
    xs = random_inputs(read(data), 0)
    row: dict = {"model": path.stem}
    wheel = runtime.Interpreter.from_bytes(data, arena_size=max(4 << 20, 10 * len(data)))
    ours = Interpreter(data)
    for i, x in enumerate(xs):
        wheel.set_input(x, i)
        ours.set_input(x, i)
    wheel.invoke()
    ours.invoke()
    n_out = len(ours.subgraph.outputs)
    want = [np.array(wheel.get_output(i)).tobytes() for i in range(n_out)]
    row["same_interpreter"] = [ours.get_output(i).tobytes() for i in range(n_out)] == want
    row["tflm_ms"] = best_of(wheel.invoke, runs) * 1e3
    row["interpreter_ms"] = best_of(ours.invoke, runs) * 1e3
    try:
        native = NativeModel(data)
    except MicronnError as e:
        row["native_ms"], row["native_note"] = None, str(e).splitlines()[0][:80]
    else:
        for i, x in enumerate(xs):
            native.set_input(x, i)
        native.invoke()
        row["same_native"] = [native.get_output(i).tobytes() for i in range(n_out)] == want
        row["native_ms"] = best_of(native.invoke, runs) * 1e3
    invoke, note = _litert(data, xs)
    row["litert_ms"] = best_of(invoke, runs) * 1e3 if invoke else None
    row["litert_note"] = note
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("models", nargs="*", type=Path)
    a = ap.parse_args()
    rows = [measure(p, a.runs) for p in (a.models or default_models())]
    if a.json:
        print(json.dumps(rows, indent=1))
        return
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (timings on a busy machine are noisy)")
    print(f"{'model':<28}{'interp ms':>11}{'native ms':>11}{'TFLM ms':>10}{'LiteRT ms':>11}{'interp/TFLM':>12}"
          f"{'native/TFLM':>12}{'same':>6}")
    for r in rows:
        nat = f"{r['native_ms']:>11.4f}" if r["native_ms"] is not None else f"{'-':>11}"
        lite = f"{r['litert_ms']:>11.4f}" if r["litert_ms"] is not None else f"{'-':>11}"
        ratio = f"{r['native_ms'] / r['tflm_ms']:>11.2f}x" if r["native_ms"] is not None else f"{'-':>12}"
        same = r.get("same_native", r["same_interpreter"])
        print(f"{r['model']:<28}{r['interpreter_ms']:>11.4f}{nat}{r['tflm_ms']:>10.4f}{lite}"
              f"{r['interpreter_ms'] / r['tflm_ms']:>11.2f}x{ratio}{str(same):>6}")
    for r in rows:
        notes = [f"native: {r['native_note']}" for _ in [0] if r.get("native_note")]
        notes += [f"LiteRT {r['litert_note']}" for _ in [0] if r["litert_note"]]
        if notes:
            print(f"  {r['model']}: " + "; ".join(notes))


if __name__ == "__main__":
    main()
