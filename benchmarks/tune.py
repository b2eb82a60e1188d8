"""Tuning progress: the best instructions/MAC found against trials, per search strategy, for one workload.

    python benchmarks/tune.py [--target cortex-m4] [--trials 64] [--seed 0] [--searches xgb,random,grid,anneal]
                              [--jobs N] [--plot out.png] [--json]
    python benchmarks/tune.py --model person_detect [--trials 200] [--log tune.jsonl] [--jobs N]

The workload is person_detect's largest 1x1 convolution (most MACs; the first in model order among equals), tuned
alone (``tune_model(..., only=key)``) from the same seed by each strategy, beside the generic kernel's figure. Each
strategy starts from an empty log, so every trial is measured (the toolchain's object cache may still serve
compiles from an earlier run: trial counts, not seconds, are the figure of record here).

``--model`` tunes every template-covered layer of a bundled model instead, ``--trials`` per distinct shape, and
prints the wall time against the 30-minute goal of the autotuning work (issue 13), with the machine's load.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from micronn import Interpreter
from micronn.micro import tune
from micronn.models import bundled_model

GOAL_S = 30 * 60  # tuning one model for 200 trials per workload, on a 2-core machine


def workload(model: str) -> tuple[Any, str, int]:
    """(model path, shape key, MACs) of the model's largest 1x1 convolution."""
    path = bundled_model(model)
    it = Interpreter(path)
    it.allocate_tensors()
    pointwise = [s for _, t, s in tune.layers(it) if t.NAME == "conv_2d_1x1"]
    if not pointwise:
        raise SystemExit(f"{model} has no 1x1 convolution a template covers")
    shape = max(pointwise, key=lambda s: s.macs)
    return path, shape.key, shape.macs


def best_so_far(records: list[dict[str, Any]], macs: int) -> list[float | None]:
    """Instructions/MAC of the best verified config after each trial."""
    out, best = [], None
    for r in records:
        if r["verified"] and r["instructions"] is not None and (best is None or r["instructions"] < best):
            best = r["instructions"]
        out.append(None if best is None else best / macs)
    return out


def progress_table(a: argparse.Namespace) -> dict[str, Any]:
    path, key, macs = workload(a.workload_model)
    curves, seconds, base = {}, {}, None
    for search in a.searches:
        t0 = time.perf_counter()
        res = tune.tune_model(path, a.target, trials=a.trials, seed=a.seed, search=search, jobs=a.jobs, only=[key])
        seconds[search] = time.perf_counter() - t0
        curves[search] = best_so_far(res["records"], macs)
        base = res["layers"][0]["baseline_instructions"]
    marks = sorted({n for n in (1, 4, 8, 16, 24, 32, 48, 64, 96, 128, 160, 200, 256) if n <= a.trials}
                   | {max(len(c) for c in curves.values())})
    out = {"target": a.target, "workload": key, "macs": macs, "seed": a.seed, "trials": a.trials,
           "generic_instructions_per_mac": None if base is None else base / macs, "curves": curves,
           "seconds": seconds}
    if a.json:
        print(json.dumps(out, indent=1))
    else:
        print(f"{key} on {a.target} ({macs:,} MACs), seed {a.seed}: best instructions/MAC after N trials")
        head = ["trials", *a.searches]
        rows = [[str(n)] + ["-" if n > len(c) or c[n - 1] is None else f"{c[n - 1]:.3f}"
                            for c in curves.values()] for n in marks]
        rows.append(["generic kernel"] + ["-" if base is None else f"{base / macs:.3f}"] * len(a.searches))
        rows.append(["wall s"] + [f"{seconds[s]:.0f}" for s in a.searches])
        widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
        for r in [head, *rows]:
            print("  ".join(c.rjust(w) for c, w in zip(r, widths)))
    if a.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 4))
        for search, c in curves.items():
            ax.plot(range(1, len(c) + 1), c, label=search)
        if base is not None:
            ax.axhline(base / macs, color="grey", linestyle="--", label="generic kernel")
        ax.set_xlabel("trials")
        ax.set_ylabel("best instructions / MAC")
        ax.set_title(f"{key} on {a.target}")
        ax.legend()
        fig.tight_layout()
        fig.savefig(a.plot)
        print(f"wrote {a.plot}")
    return out


def whole_model(a: argparse.Namespace) -> dict[str, Any]:
    path = bundled_model(a.model)
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(a.log) if a.log else Path(tmp) / "tune.jsonl"
        t0 = time.perf_counter()
        res = tune.tune_model(path, a.target, trials=a.trials, seed=a.seed, search=a.searches[0], jobs=a.jobs,
                              log=log)
        wall = time.perf_counter() - t0
    load1 = os.getloadavg()
    weight = {lay["key"]: len(lay["layers"]) for lay in res["layers"]}
    base = sum(lay["baseline_instructions"] * weight[lay["key"]] for lay in res["layers"])
    best = sum(min(lay["best_instructions"] or lay["baseline_instructions"], lay["baseline_instructions"])
               * weight[lay["key"]] for lay in res["layers"])
    out = {"model": a.model, "target": a.target, "trials": a.trials, "search": res["search"],
           "measured_by": res["measured_by"], "workers": res["workers"], "shapes": len(res["layers"]),
           "measured": sum(lay["measured"] for lay in res["layers"]), "wall_s": wall, "goal_s": GOAL_S,
           "cpus": os.cpu_count(), "load_before": load0, "load_after": load1,
           "tuned_layers_instructions": {"generic": base, "tuned": best}}
    if a.json:
        print(json.dumps(out, indent=1))
    else:
        print(f"{a.model} on {a.target}: {out['shapes']} shapes, {out['measured']} configs measured "
              f"({a.trials} trials per shape at most, search {res['search']}), {res['workers']} workers "
              f"({res['measured_by']})")
        print(f"wall time {wall:,.0f} s against the goal of {GOAL_S:,} s: {'met' if wall <= GOAL_S else 'missed'} "
              f"({wall / GOAL_S:.0%} of it)")
        print(f"load average (1, 5, 15 min) before {load0[0]:.1f} {load0[1]:.1f} {load0[2]:.1f}, after "
              f"{load1[0]:.1f} {load1[1]:.1f} {load1[2]:.1f} on {os.cpu_count()} CPUs")
        print(f"tuned layers: {base:,} instructions with the generic kernels, {best:,} with the best configs "
              f"({best / base:.2f}x)")
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--target", default="cortex-m4")
    p.add_argument("--trials", type=int, help="trials per strategy (default 64), or per shape with --model (200)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--searches", default="xgb,random,grid,anneal",
                   help="comma-separated strategies (with --model, the first is used)")
    p.add_argument("--jobs", type=int, help="measuring workers (default: one per CPU)")
    p.add_argument("--workload-model", default="person_detect", help="the model whose largest 1x1 conv is tuned")
    p.add_argument("--model", help="tune this bundled model's every layer and report the wall time")
    p.add_argument("--log", help="with --model: keep the tuning log here (appended to, so a rerun resumes)")
    p.add_argument("--plot", help="draw best-so-far curves to this .png (needs matplotlib)")
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    a.searches = [s for s in a.searches.split(",") if s]
    if bad := [s for s in a.searches if s not in tune.STRATEGIES]:
        p.error(f"unknown search {', '.join(bad)}: choose from {', '.join(tune.STRATEGIES)}")
    if a.model:
        a.trials = a.trials or 200
        whole_model(a)
    else:
        a.trials = a.trials or 64
        progress_table(a)


if __name__ == "__main__":
    main()
