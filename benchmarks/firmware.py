"""Standalone firmware: flash, RAM and cycles of micronn's exported image beside TFLM's figures, from one run.

    python benchmarks/firmware.py [--json] [--skip-slow] [MODEL.tflite ...]

Per model: micronn's firmware built with zig's clang for the Cortex-M4 and run once on Unicorn (outputs checked
byte for byte against the interpreter): flash (code + constants), RAM (arena + data + measured stack),
instructions and estimated cycles; the host-driven device run of the same kernels (instructions); the TFLM
wheel's whole arena for the same model (head + tail on the 64-bit host; TFLM on a Cortex-M also needs its
interpreter's code and stack, which the wheel does not report); and, where the TFLM paper measured the model
(Table 3: memory on the SparkFun Edge; Table 2a: cycles on its Cortex-M4), the paper's figure. Ratios are
micronn / peer.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import micronn
from micronn import export
from micronn.errors import UnsupportedError
from micronn.micro import run_model
from micronn.testing import tflm_arena

ROOT = Path(__file__).resolve().parents[1]
# TFLM paper (seeds/003): Table 3 total memory (persistent + nonpersistent) and Table 2a cycles, reference kernels
PAPER = {"person_detect": {"model": "VWW", "memory": 81_790, "cycles": 18_990_800},
         "keyword_scrambled": {"model": "Google Hotword", "memory": 12_800, "cycles": 45_100}}
# the goals for this benchmark
GOALS = {"person_detect": 52_000, "keyword_scrambled": 12_000, "tiny_unet --optimize": 120_000}
FLASH_GOALS = {"person_detect": 24_576}  # the flash goal: weights + 24 KiB of code and parameters
OPTIMIZE = {"tiny_unet"}  # also exported with TinySeg's plan (spilled tensors in the project's storage)
SLOW = {"tiny_unet", "tiny_unet_static", "unet_wide_int8"}  # hundreds of millions of emulated instructions


def default_models() -> list[Path]:
    bundled = sorted((Path(micronn.__file__).parent / "models").glob("*.tflite"))
    return bundled + sorted((ROOT / "tests" / "models").glob("*.tflite"))


def weight_bytes(path: Path) -> int:
    m = micronn.tflite.reader.read(path.read_bytes())
    seen, total = set(), 0
    for sg in m.subgraphs:
        for t in sg.tensors:
            if t.data is not None and t.buffer not in seen:
                seen.add(t.buffer)
                total += t.nbytes
    return total


def measure(path: Path, optimize: bool = False) -> dict:
    name = path.stem + (" --optimize" if optimize else "")
    row: dict = {"model": name}
    with tempfile.TemporaryDirectory() as tmp:
        try:
            proj = export.export(path, tmp, optimize=optimize)
        except UnsupportedError as e:
            return dict(row, unsupported=sorted({f"{op} ({t})" for op, t in e.pairs}))
        res = export.run(proj)
    row.update(identical=res.identical, flash=res.flash_bytes, ram=res.ram_bytes, arena=proj.arena_bytes,
               stack=res.stack_bytes, instructions=res.instructions, cycles=res.cycles, weights=weight_bytes(path))
    row["code"] = res.sections.get(".text", {}).get("bytes", 0)
    row["storage"] = proj.storage_bytes
    row["hosted_instructions"] = run_model(path, "cortex-m4")["instructions"]  # the model as given
    wheel = tflm_arena(path.read_bytes())
    row["tflm_arena"] = wheel["total"]
    if path.stem in PAPER:
        row["paper"] = PAPER[path.stem]
    if name in GOALS:
        row["ram_goal"] = GOALS[name]
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="*", type=Path)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--skip-slow", action="store_true", help=f"leave out {', '.join(sorted(SLOW))}")
    a = ap.parse_args()
    paths = a.models or [p for p in default_models() if not (a.skip_slow and p.stem in SLOW)]
    rows = [measure(p) for p in paths] + [measure(p, optimize=True) for p in paths if p.stem in OPTIMIZE]
    if a.json:
        print(json.dumps(rows, indent=1))
        return
    print(f"{'model':<28} {'same':>5} {'flash':>9} {'weights':>9} {'code':>7} {'RAM':>8} {'TFLM arena':>10} "
          f"{'ratio':>6} {'instructions':>13} {'vs hosted':>9} {'cycles':>12}")
    for r in rows:
        if "unsupported" in r:
            print(f"{r['model']:<28} no C kernel for: {', '.join(r['unsupported'])}")
            continue
        print(f"{r['model']:<28} {str(r['identical']):>5} {r['flash']:>9,} {r['weights']:>9,} {r['code']:>7,} "
              f"{r['ram']:>8,} {r['tflm_arena']:>10,} {r['ram'] / r['tflm_arena']:>6.2f} {r['instructions']:>13,} "
              f"{r['instructions'] / r['hosted_instructions']:>9.3f} {r['cycles']:>12,.0f}")
    for r in rows:
        if "ram_goal" in r and "paper" not in r:
            print(f"\n{r['model']}: RAM {r['ram']:,} B (spilled {r['storage']:,} B to storage) vs the wheel's arena "
                  f"{r['tflm_arena']:,} B ({r['ram'] / r['tflm_arena']:.2f}x); goal <= {r['ram_goal']:,} B: "
                  f"{'met' if r['ram'] <= r['ram_goal'] else 'NOT met'}")
        if "paper" in r and "ram" in r:
            p = r["paper"]
            print(f"\n{r['model']} ({p['model']} in the TFLM paper): RAM {r['ram']:,} B vs the paper's "
                  f"{p['memory']:,} B ({r['ram'] / p['memory']:.2f}x) and the wheel's arena {r['tflm_arena']:,} B "
                  f"({r['ram'] / r['tflm_arena']:.2f}x); goal <= {r['ram_goal']:,} B: "
                  f"{'met' if r['ram'] <= r['ram_goal'] else 'NOT met'}")
            print(f"  flash {r['flash']:,} B = weights {r['weights']:,} B + {r['flash'] - r['weights']:,} B of code, "
                  f"per-channel parameters and call tables (.text alone {r['code']:,} B)")
            if r["model"] in FLASH_GOALS:
                goal = FLASH_GOALS[r["model"]]
                print(f"  flash goal <= weights + {goal:,} B: "
                      f"{'met' if r['flash'] - r['weights'] <= goal else 'NOT met'}")
            print(f"  cycles (estimated from instruction classes) {r['cycles']:,.0f} vs the paper's {p['cycles']:,} "
                  f"with reference kernels on its Cortex-M4 ({r['cycles'] / p['cycles']:.2f}x; the paper's model and "
                  "board differ: read as an order of magnitude)")


if __name__ == "__main__":
    main()
