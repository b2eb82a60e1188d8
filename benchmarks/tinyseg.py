"""TinySeg (issue 5): the paper's figures for tiny_unet beside micronn's, from one run, and other hourglass models.

    python benchmarks/tinyseg.py [--json] [--latency] [MODEL.tflite ...]

For each model: the TFLM wheel's measured arena for the original (head + tail), then micronn's steps (head planned
by micronn + persistent tail as micronn's model of TFLM predicts it, ``micronn.footprint.tflm_tail``: the wheel
cannot run the custom ops), each step's reduction against the wheel, and whether the optimized model's outputs equal
the wheel's on random inputs. For tiny_unet the paper's Figure 11 figures are printed alongside. ``--latency`` adds
the Table-5-style breakdown (modeled ms).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import micronn
from micronn import Interpreter
from micronn.ir import random_inputs
from micronn.testing import run_tflm, tflm_arena
from micronn.tflite.reader import read
from micronn.tinyseg import optimize
from micronn.tinyseg.latency import breakdown

ROOT = Path(__file__).resolve().parents[1]
# TinySeg (paper) §6.2.1 / Table 3 / Figure 11 for its Tiny U-Net: base 318.4 KB, -24.1% after temporary tensor
# quantization, -36.2% after spilling, 193.4 KB (-39.3%) after fused fetching; Table 5 base latency 1190 ms.
PAPER = {"base_kb": 318.4, "temp_tensor": -0.241, "spilling": -0.362, "fused_kb": 193.4, "fused": -0.393}


def default_models() -> list[Path]:
    return [Path(micronn.__file__).parent / "models" / "tiny_unet.tflite",
            ROOT / "tests" / "models" / "unet_wide_int8.tflite", ROOT / "tests" / "models" / "vnet_like_int8.tflite"]


def measure(path: Path, latency: bool = False) -> dict:
    data = path.read_bytes()
    m = read(data)
    wheel = tflm_arena(data)
    res = optimize(m, latency=False)
    xs = random_inputs(m, 11)
    it = Interpreter(res.model)
    for i, x in enumerate(xs):
        it.set_input(x, i)
    it.invoke()
    same = all(a.tobytes() == it.get_output(i).tobytes() for i, a in enumerate(run_tflm(data, xs)))
    steps = [{**s.as_dict(), "vs_wheel": round(s.total / wheel["total"] - 1, 3)} for s in res.steps]
    row = {"model": path.stem, "wheel": wheel, "steps": steps, "final_total": res.after.total,
           "reduction_vs_wheel": round(1 - res.after.total / wheel["total"], 3), "identical_to_wheel": same}
    if latency:
        models = {"base": m, "+ temporary tensor reduction": m,
                  "+ spilling": optimize(m, latency=False, fuse=False).model, "+ fused fetching": res.model}
        row["latency_ms"] = breakdown(models)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", type=Path)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--latency", action="store_true", help="also the Table-5-style latency breakdown (slower)")
    a = ap.parse_args()
    rows = [measure(p, a.latency) for p in a.models or default_models()]
    if a.json:
        print(json.dumps(rows, indent=1))
        return
    for r in rows:
        w = r["wheel"]
        print(f"\n{r['model']}: TFLM wheel arena {w['total']:,} B (head {w['head']:,} + tail {w['tail']:,})")
        for s in r["steps"]:
            print(f"  {s['name']:<34} {s['head_bytes']:>9,} + {s['tail_bytes']:>6,} = {s['total_bytes']:>9,} B "
                  f"({100 * s['vs_wheel']:+.1f}% vs wheel)")
        print(f"  final {r['final_total']:,} B: -{100 * r['reduction_vs_wheel']:.1f}% vs the wheel; outputs equal "
              f"the wheel's: {r['identical_to_wheel']}")
        if r["model"] == "tiny_unet":
            p = PAPER
            print(f"  paper (TinySeg, TFLM prototype): base {p['base_kb']} KB, temp. tensor quant. "
                  f"{100 * p['temp_tensor']:.1f}%, + spilling {100 * p['spilling']:.1f}%, + fused fetching "
                  f"{p['fused_kb']} KB ({100 * p['fused']:.1f}%); micronn/paper final ratio "
                  f"{r['final_total'] / (p['fused_kb'] * 1000):.2f}")
        for lat in r.get("latency_ms", []):
            print("  latency " + ", ".join(f"{k}: {v}" for k, v in lat.items()))


if __name__ == "__main__":
    main()
