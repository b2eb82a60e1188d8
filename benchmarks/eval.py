"""Data-set evaluation time: ``micronn eval`` on N random person_detect inputs, in-process and on a local Ray,
beside the target (30 s for 10,000) and the TFLM wheel's time for the same inputs.

    python benchmarks/eval.py [--samples 10000] [--tflm-sample 500] [--workers 2] [--threads N] [--no-ray]
                              [--numpy-sample 500] [--json]

In-process runs use the default backend ("auto": the device's C kernels compiled for this host, chunks on
``--threads`` threads, default every CPU) and, for comparison, one thread; the numpy reference path is timed on
``--numpy-sample`` inputs and scaled (0 skips it).

The wheel is timed on the first ``--tflm-sample`` inputs (one invoke each, as its Python API allows) and scaled
to N: the printed figure says so. The Ray figure includes starting Ray (its workers import micronn once each).
Every run checks that the predictions are the same as the in-process run's, and the wheel's outputs on its sample
the same bytes as micronn's. CPU seconds (this process's) are printed beside the wall time: on cores shared with
other work they stay close to what an idle machine's wall time would be, in-process.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np
from tflite_micro.python.tflite_micro import runtime

from micronn.models import bundled_model
from micronn.simulate import evaluate, simulate

TARGET_S = 30.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--samples", type=int, default=10_000)
    ap.add_argument("--tflm-sample", type=int, default=500)
    ap.add_argument("--workers", type=int, default=2, help="Ray CPUs on this machine")
    ap.add_argument("--threads", type=int, default=None, help="threads of the in-process native run")
    ap.add_argument("--numpy-sample", type=int, default=500)
    ap.add_argument("--no-ray", action="store_true")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    load = os.getloadavg()[0]
    model = bundled_model("person_detect")
    x = np.random.default_rng(0).integers(-128, 128, (a.samples, 96, 96, 1), dtype=np.int8)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "person_detect.tflite"
        path.write_bytes(model)

        evaluate(path, x[:1], ray=False, progress=False)  # builds (or finds cached) the native library
        t0, c0 = time.perf_counter(), time.process_time()
        local = evaluate(path, x, ray=False, progress=False, workers=a.threads)
        rows.append({"run": f"micronn, in-process ({a.threads or 'all'} threads)", "seconds": time.perf_counter() - t0,
                     "cpu_seconds": time.process_time() - c0, "same": True})
        t0, c0 = time.perf_counter(), time.process_time()
        one = evaluate(path, x, ray=False, progress=False, workers=1)
        rows.append({"run": "micronn, in-process (1 thread)", "seconds": time.perf_counter() - t0,
                     "cpu_seconds": time.process_time() - c0,
                     "same": one.scores.tobytes() == local.scores.tobytes()})
        m = min(a.numpy_sample, a.samples)
        if m:
            t0, c0 = time.perf_counter(), time.process_time()
            ref = evaluate(path, x[:m], ray=False, progress=False, backend="numpy")
            rows.append({"run": f"micronn numpy path (timed on {m}, scaled x{a.samples / m:g})",
                         "seconds": (time.perf_counter() - t0) * a.samples / m,
                         "cpu_seconds": (time.process_time() - c0) * a.samples / m,
                         "same": ref.scores.tobytes() == local.scores[:m].tobytes()})

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "person_detect.tflite"
        path.write_bytes(model)
        if not a.no_ray:
            import ray

            t0 = time.perf_counter()
            ray.init(num_cpus=a.workers, include_dashboard=False, logging_level="warning")
            on_ray = evaluate(path, x, ray=None, progress=False)
            rows.append({"run": f"micronn, local Ray ({a.workers} CPUs, start included)",
                         "seconds": time.perf_counter() - t0,
                         "same": on_ray.scores.tobytes() == local.scores.tobytes()})
            ray.shutdown()

    n = min(a.tflm_sample, a.samples)
    wheel = runtime.Interpreter.from_bytes(model, arena_size=1 << 20)
    outs = []
    t0, c0 = time.perf_counter(), time.process_time()
    for k in range(n):
        wheel.set_input(x[k:k + 1], 0)
        wheel.invoke()
        outs.append(np.array(wheel.get_output(0), copy=True))
    t, c = time.perf_counter() - t0, time.process_time() - c0
    ours = simulate(model, x[:n], ray=False)[0]  # the default backend, as the in-process run above
    rows.append({"run": f"TFLM wheel (timed on {n}, scaled x{a.samples / n:g})", "seconds": t * a.samples / n,
                 "cpu_seconds": c * a.samples / n, "same": np.stack(outs).tobytes() == ours.tobytes()})
    if a.json:
        print(json.dumps({"samples": a.samples, "target_seconds": TARGET_S, "load_average": load, "rows": rows},
                         indent=1))
        return
    print(f"person_detect, {a.samples:,} random inputs (target: {TARGET_S:.0f} s for 10,000); the machine's load "
          f"average before: {load:.1f}, after: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (shared cores slow "
          "every figure alike)")
    print(f"  {'run':<48}{'wall':>8}  {'rate':>8}  {'CPU':>8}")
    for r in rows:
        cpu = f"{r['cpu_seconds']:>7.1f}s" if "cpu_seconds" in r else f"{'-':>8}"
        print(f"  {r['run']:<48}{r['seconds']:>7.1f}s  {a.samples / r['seconds']:>6,.0f}/s  {cpu}  "
              f"{'identical' if r['same'] else 'DIFFERENT'}")


if __name__ == "__main__":
    main()
