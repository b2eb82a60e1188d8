"""Invoke time of micronn next to the TFLM wheel (the peer) on the same inputs, from one run, as a ratio.

    python benchmarks/speed.py [--runs N] [--json]

The issue's floor: person_detect no more than 3x slower than the wheel.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from tflite_micro.python.tflite_micro import runtime

from micronn import Interpreter
from micronn.ir import random_inputs
from micronn.models import bundled_model
from micronn.tflite.reader import read

MODELS = ["person_detect", "keyword_scrambled", "micro_speech_quantized", "tiny_unet_static"]


def best_of(fn, runs: int) -> float:
    """Fastest of ``runs`` calls, in seconds: the least disturbed figure on a shared machine."""
    best = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def measure(name: str, runs: int) -> dict:
    data = bundled_model(name)
    xs = random_inputs(read(data), 0)
    theirs = runtime.Interpreter.from_bytes(data, arena_size=4 << 20)
    ours = Interpreter.from_bytes(data)
    for i, x in enumerate(xs):
        theirs.set_input(x, i)
        ours.set_input(x, i)
    ours.invoke()
    theirs.invoke()
    same = all(np.array_equal(ours.get_output(i), theirs.get_output(i)) for i in range(len(ours.subgraph.outputs)))
    t_ours = best_of(ours.invoke, runs)
    t_theirs = best_of(theirs.invoke, runs)
    return {"model": name, "micronn_ms": t_ours * 1e3, "tflm_ms": t_theirs * 1e3, "ratio": t_ours / t_theirs,
            "identical_first_run": same}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("models", nargs="*", default=MODELS)
    a = ap.parse_args()
    rows = [measure(m, a.runs) for m in a.models]
    if a.json:
        print(json.dumps(rows, indent=1))
        return
    print(f"{'model':<24}{'micronn ms':>12}{'TFLM ms':>10}{'micronn/TFLM':>14}")
    for r in rows:
        print(f"{r['model']:<24}{r['micronn_ms']:>12.2f}{r['tflm_ms']:>10.2f}{r['ratio']:>13.2f}x")


if __name__ == "__main__":
    main()
