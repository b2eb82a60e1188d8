"""Instructions and estimated cycles of whole models and two standing convolutions on an emulated Cortex-M.

    python benchmarks/device.py [--target cortex-m4] [--json]

Models: per-op and total figures for person_detect and keyword_scrambled beside the TFLM paper's (reference
kernels on a Cortex-M4: 18,990.8K cycles for person detection, 45.1K for the hotword model). Kernels: the μTVM
thesis's CIFAR-10 convolutions (int8, SAME, stride 1; A: 32x32x3 input, 5x5x3x32 filter; B: 8x8x32 input,
5x5x32x64 filter) as instructions per multiply-accumulate (nominal MACs, padding included).
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from micronn import Interpreter
from micronn.ir import random_inputs
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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--target", default="cortex-m4")
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    report: dict = {"target": a.target, "models": {}, "kernels": {}}
    for name, paper in PAPER_CYCLES.items():
        m = bundled_model(name)
        res = run_model(m, a.target, random_inputs(Interpreter(m).model, 0), profile=True)
        report["models"][name] = {"instructions": res["instructions"], "cycles": res["cycles"],
                                  "paper_cycles": paper, "ratio": res["cycles"] / paper,
                                  "ops": [{k: o[k] for k in ("index", "op", "instructions", "cycles")}
                                          for o in res["ops"]]}
    for name, (h, cin, cout) in {"cifar10_conv_A": (32, 3, 32), "cifar10_conv_B": (8, 32, 64)}.items():
        m = cifar_conv(h, cin, cout)
        res = run_model(m, a.target, random_inputs(Interpreter(m).model, 0))
        macs = h * h * cout * 25 * cin
        report["kernels"][name] = {"macs": macs, "instructions": res["instructions"], "cycles": res["cycles"],
                                   "instructions_per_mac": res["instructions"] / macs,
                                   "cycles_per_mac": res["cycles"] / macs}
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


if __name__ == "__main__":
    main()
