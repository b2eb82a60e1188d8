"""Instructions and estimated cycles of whole models and two standing convolutions on an emulated Cortex-M and RV32.

    python benchmarks/device.py [--target cortex-m4] [--vs riscv32] [--tuning-log LOG|auto|none] [--json]

Models: per-op and total figures for person_detect and keyword_scrambled beside the TFLM paper's (reference
kernels on a Cortex-M4: 18,990.8K cycles for person detection, 45.1K for the hotword model). Kernels: the μTVM
thesis's CIFAR-10 convolutions (int8, SAME, stride 1; A: 32x32x3 input, 5x5x3x32 filter; B: 8x8x32 input,
5x5x32x64 filter) as instructions per multiply-accumulate (nominal MACs, padding included).

Then the same runs on ``--vs`` (default riscv32, an RV32IMC costed as a SiFive E31; ``--vs ''`` skips it) side by
side with ``--target``, per layer type over both models and per CIFAR kernel: instructions, instructions per MAC
and estimated cycles (each core's own cost table, see micronn/micro/target.py).

With ``--tuning-log`` (``micronn tune``; ``auto``, the default: every log micronn ships; ``none``: skip), both
models run again on ``--target`` and on ``--vs`` with the log applied (each target's own records), outputs checked
byte for byte against micronn's interpreter, and instructions/MAC per layer type (1x1 convolutions apart from the
other CONV_2Ds) print untuned beside tuned, with the goal figures of the autotuning work: CMSIS-NN's
instructions/MAC on the emulated Cortex-M4 as the project states them (not measured here: no CMSIS-NN build runs in
this benchmark) and the whole-model goals. The CIFAR-10 kernels run again too, with the log applied by layer shape
(``--tuning-log auto`` includes micronn/micro/tuned/cifar10_convs_cortex-m4.json).
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from micronn import Interpreter
from micronn.ir import op_macs, random_inputs
from micronn.micro import tune
from micronn.micro.runtime import run_model
from micronn.models import bundled_model
from micronn.testing import T, op_model
from micronn.tflite import schema

PAPER_CYCLES = {"person_detect": 18_990_800, "keyword_scrambled": 45_100}


def cifar_conv(h: int, cin: int, cout: int, k: int = 5) -> bytes:
    rng = np.random.default_rng(h)
    return op_model("CONV_2D", [T((1, h, h, cin), "int8", 0.05, -3),
                                T((cout, k, k, cin), "int8", list(rng.uniform(0.002, 0.02, cout)), 0,
                                  data=rng.integers(-127, 128, (cout, k, k, cin))),
                                T((cout,), "int32", data=rng.integers(-3000, 3000, cout))],
                    [T((1, h, h, cout), "int8", 0.3, 4)],
                    schema.options("CONV_2D", padding=0, stride_h=1, stride_w=1))


CIFAR = {"cifar10_conv_A": (32, 3, 32), "cifar10_conv_B": (8, 32, 64)}
# per CIFAR kernel, instructions/MAC on the emulated Cortex-M4: CMSIS-NN's as the project states them, and the goal
CIFAR_GOALS = {"cifar10_conv_A": (3.18, 2.9), "cifar10_conv_B": (2.00, 1.8)}
# CMSIS-NN on the emulated Cortex-M4, instructions per MAC, as the project's autotuning goal states them
CMSIS_NN = {"CONV_2D 1x1": 2.83, "DEPTHWISE_CONV_2D": 9.75, "person_detect": 3.77}
# the autotuning work's goals for whole models on the emulated Cortex-M4, in instructions (keyword_scrambled's from
# the TFLM paper's 36.4K cycles with optimized kernels, Table 2a)
MODEL_GOALS = {"person_detect": 25_000_000, "keyword_scrambled": 36_000}
POINTWISE = "CONV_2D 1x1"


def measure(target: str) -> dict:
    """Per-op figures (with MACs) of both models and the CIFAR kernels' totals on one target."""
    out: dict = {"models": {}, "kernels": {}}
    for name, paper in PAPER_CYCLES.items():
        m = bundled_model(name)
        it = Interpreter(m)
        macs = {op.index: op_macs(it.model.main, op) for op in it.model.main.operators}
        res = run_model(m, target, random_inputs(it.model, 0), profile=True)
        out["models"][name] = {"instructions": res["instructions"], "cycles": res["cycles"],
                               "paper_cycles": paper, "ratio": res["cycles"] / paper,
                               "ops": [{k: o[k] for k in ("index", "op", "instructions", "cycles")}
                                       | {"macs": macs.get(o["index"], 0)} for o in res["ops"]]}
    for name, (h, cin, cout) in CIFAR.items():
        m = cifar_conv(h, cin, cout)
        res = run_model(m, target, random_inputs(Interpreter(m).model, 0))
        macs = h * h * cout * 25 * cin
        out["kernels"][name] = {"macs": macs, "instructions": res["instructions"], "cycles": res["cycles"],
                                "instructions_per_mac": res["instructions"] / macs,
                                "cycles_per_mac": res["cycles"] / macs}
    return out


def by_layer_type(measured: dict) -> dict[str, dict]:
    """Instructions, cycles and MACs summed per op type over both models."""
    out: dict[str, dict] = {}
    for r in measured["models"].values():
        for o in r["ops"]:
            d = out.setdefault(o["op"], {"ops": 0, "macs": 0, "instructions": 0, "cycles": 0.0})
            d["ops"] += 1
            d["macs"] += o["macs"]
            d["instructions"] += o["instructions"]
            d["cycles"] += o["cycles"]
    return dict(sorted(out.items(), key=lambda kv: -kv[1]["instructions"]))


def side_by_side(targets: list[str], layers: dict[str, dict], kernels: dict[str, dict]) -> list[str]:
    """One line per layer type (then per CIFAR kernel): instructions, instructions/MAC and cycles per target."""
    head = f"{'layer type':<22} {'ops':>4} {'MACs':>12}" + "".join(
        f" | {t + ' instr':>20} {'instr/MAC':>9} {'est. cycles':>13}" for t in targets)
    lines = [head, "-" * len(head)]
    rows = [(op, layers[targets[0]][op]["ops"], layers[targets[0]][op]["macs"], [layers[t][op] for t in targets])
            for op in layers[targets[0]]]
    rows += [(name, 1, kernels[targets[0]][name]["macs"], [kernels[t][name] for t in targets])
             for name in kernels[targets[0]]]
    for op, n, macs, per in rows:
        cells = "".join(f" | {d['instructions']:>20,} {format(d['instructions'] / macs, '.2f') if macs else '-':>9} "
                        f"{d['cycles']:>13,.0f}" for d in per)
        lines.append(f"{op:<22} {n:>4} {macs:>12,}" + cells)
    return lines


def tuned_cifar(target: str, log: str, untuned: dict) -> dict:
    """The CIFAR-10 kernels with the tuning log applied (by layer shape, e.g. the shipped
    micronn/micro/tuned/cifar10_convs_cortex-m4.json): instructions untuned and tuned, and whether the output bytes
    match micronn's interpreter."""
    out: dict[str, dict] = {}
    for name, (h, cin, cout) in CIFAR.items():
        m = cifar_conv(h, cin, cout)
        xs = random_inputs(Interpreter(m).model, 0)
        res = run_model(m, target, xs, tuning_log=log)
        ref = Interpreter(m)
        ref.allocate_tensors()
        ref.set_input(xs[0])
        ref.invoke()
        before = untuned["kernels"][name]
        out[name] = {"macs": before["macs"], "untuned": before["instructions"], "tuned": res["instructions"],
                     "identical": bool(np.array_equal(res["outputs"][0], ref.get_output(0))),
                     "config": res["tuned"][0]["config"] if res["tuned"] else None}
    return out


def cifar_tuned_lines(kernels: dict) -> list[str]:
    """One line per CIFAR kernel: untuned and tuned instructions beside CMSIS-NN's figure and the goal."""
    lines = []
    for name, d in kernels.items():
        cmsis, goal = CIFAR_GOALS[name]
        lines.append(f"  {name}: {d['untuned']:,} -> {d['tuned']:,} instructions, {d['untuned'] / d['macs']:.2f} -> "
                     f"{d['tuned'] / d['macs']:.2f} instr/MAC (CMSIS-NN {cmsis:.2f}, goal <= {goal}); "
                     + (f"config {json.dumps(d['config'], sort_keys=True)}" if d["config"] else "not tuned")
                     + "; outputs identical to the interpreter: " + ("yes" if d["identical"] else "NO"))
    return lines


def tuned_figures(target: str, log: str, untuned: dict) -> dict:
    """Both models with the tuning log applied: per layer type (1x1 convolutions apart) untuned and tuned
    instructions and MACs, per-model totals, and whether every output byte matches the interpreter."""
    rows: dict[str, dict] = {}
    models: dict[str, dict] = {}
    for name in PAPER_CYCLES:
        m = bundled_model(name)
        it = Interpreter(m)
        it.allocate_tensors()
        xs = random_inputs(it.model, 0)
        pointwise = {op for op, t, _ in tune.layers(it) if t.NAME == "conv_2d_1x1"}
        res = run_model(m, target, xs, profile=True, tuning_log=log)
        ref = Interpreter(m)
        ref.allocate_tensors()
        for i, x in enumerate(xs):
            ref.set_input(x, i)
        ref.invoke()
        same = all(np.array_equal(y, ref.get_output(i)) for i, y in enumerate(res["outputs"]))
        before = {o["index"]: o for o in untuned["models"][name]["ops"]}
        macs = 0
        for o in res["ops"]:
            kind = POINTWISE if o["index"] in pointwise else o["op"]
            d = rows.setdefault(kind, {"ops": 0, "macs": 0, "untuned": 0, "tuned": 0})
            d["ops"] += 1
            d["macs"] += before[o["index"]]["macs"]
            d["untuned"] += before[o["index"]]["instructions"]
            d["tuned"] += o["instructions"]
            macs += before[o["index"]]["macs"]
        models[name] = {"macs": macs, "untuned": untuned["models"][name]["instructions"],
                        "tuned": res["instructions"], "identical": same, "tuned_layers": len(res["tuned"])}
    return {"log": log, "layer_types": dict(sorted(rows.items(), key=lambda kv: -kv[1]["untuned"])),
            "models": models}


def tuned_lines(target: str, t: dict) -> list[str]:
    per = lambda n, macs: format(n / macs, ".2f") if macs else "-"  # noqa: E731
    head = (f"{'layer type':<22} {'ops':>4} {'MACs':>12} | {'untuned instr':>14} {'instr/MAC':>9} | "
            f"{'tuned instr':>14} {'instr/MAC':>9} | {'CMSIS-NN instr/MAC':>18}")
    lines = [f"\n{target} (emulated) with tuning log {t['log']}, per layer type over {' and '.join(PAPER_CYCLES)}:",
             head, "-" * len(head)]
    for kind, d in t["layer_types"].items():
        goal = CMSIS_NN.get(kind)
        lines.append(f"{kind:<22} {d['ops']:>4} {d['macs']:>12,} | {d['untuned']:>14,} "
                     f"{per(d['untuned'], d['macs']):>9} | {d['tuned']:>14,} {per(d['tuned'], d['macs']):>9} | "
                     f"{goal if goal else '-':>18}")
    for name, d in t["models"].items():
        goal = CMSIS_NN.get(name)
        lines.append(f"  {name}: {d['untuned']:,} -> {d['tuned']:,} instructions, {per(d['untuned'], d['macs'])} -> "
                     f"{per(d['tuned'], d['macs'])} instr/MAC" + (f" (CMSIS-NN {goal})" if goal else "")
                     + (f", goal <= {MODEL_GOALS[name]:,} instructions" if name in MODEL_GOALS and
                        target == "cortex-m4" else "")
                     + f"; {d['tuned_layers']} layers tuned; outputs identical to the interpreter: "
                     + ("yes" if d["identical"] else "NO"))
    return lines


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--target", default="cortex-m4")
    p.add_argument("--vs", default="riscv32", help="a second target to compare per layer type ('' for none)")
    p.add_argument("--tuning-log", default="auto", help="also run with this tuning log applied (micronn tune) and "
                   "compare; auto (the default): the logs micronn ships; none: untuned only")
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    first = measure(a.target)
    report: dict = {"target": a.target, **first}
    targets = [a.target] + ([a.vs] if a.vs and a.vs != a.target else [])
    measured = {a.target: first} | {t: measure(t) for t in targets[1:]}
    if a.tuning_log == "none":
        a.tuning_log = None
    if a.tuning_log:
        report["tuned"] = tuned_figures(a.target, a.tuning_log, first)
        report["tuned"]["kernels"] = tuned_cifar(a.target, a.tuning_log, first)
        # the second target tuned too (its own records of the log): untuned vs tuned on both, side by side
        report["tuned_vs"] = {t: tuned_figures(t, a.tuning_log, measured[t]) for t in targets[1:]}
    layers = {t: by_layer_type(m) for t, m in measured.items()}
    kernels = {t: m["kernels"] for t, m in measured.items()}
    if len(targets) > 1:
        report["compare"] = {t: {"layer_types": layers[t], "models": {k: {x: v[x] for x in ("instructions", "cycles")}
                                                                      for k, v in measured[t]["models"].items()},
                                 "kernels": kernels[t]} for t in targets}
    if a.json:
        print(json.dumps(report, indent=1))
        return
    for name, r in report["models"].items():
        print(f"\n{name} on {a.target} (emulated):")
        for o in r["ops"]:
            print(f"  {o['index']:3d} {o['op']:<22} {o['instructions']:>12,} instr {o['cycles']:>14,.0f} cycles")
        print(f"  total {r['instructions']:,} instructions, ~{r['cycles']:,.0f} cycles; TFLM paper (reference "
              f"kernels, Cortex-M4) {r['paper_cycles']:,} cycles: ratio {r['ratio']:.2f}x")
    print()
    for name, r in report["kernels"].items():
        print(f"{name}: {r['macs']:,} MACs, {r['instructions']:,} instructions = {r['instructions_per_mac']:.2f} "
              f"instr/MAC, {r['cycles_per_mac']:.2f} cycles/MAC")
    if len(targets) > 1:
        print(f"\n{' vs '.join(targets)} (emulated), per layer type over {' and '.join(PAPER_CYCLES)}, then per "
              "CIFAR-10 kernel:")
        print("\n".join(side_by_side(targets, layers, kernels)))
        for t in targets:
            tot = measured[t]["models"]
            print(f"  {t}: " + ", ".join(f"{k} {v['instructions']:,} instr / ~{v['cycles']:,.0f} cycles"
                                         for k, v in tot.items()))
    if a.tuning_log:
        print("\n".join(tuned_lines(a.target, report["tuned"]) + cifar_tuned_lines(report["tuned"]["kernels"])))
        for t, tf in report["tuned_vs"].items():
            print("\n".join(tuned_lines(t, tf)))
            for name, d in tf["models"].items():
                base = report["tuned"]["models"][name]["tuned"]
                print(f"  {name}: tuned on {t} / untuned on {t} = 1 / {d['untuned'] / d['tuned']:.2f}; tuned on {t} "
                      f"/ tuned on {a.target} = {d['tuned'] / base:.2f}")


if __name__ == "__main__":
    main()
