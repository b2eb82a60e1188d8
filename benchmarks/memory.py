"""Arena bytes: the TFLM wheel's figures next to micronn's planners and sharing options, from one run.

    python benchmarks/memory.py [--json] [MODEL.tflite ...]

Columns: TFLM head/tail/total as the wheel reports them; the live-set lower bound; micronn's head with
TFLM's planner (must equal TFLM's), the optimal planner without sharing, and with aliasing/in-place/overlap;
the percent of TFLM's head saved; and planning time of the default configuration. ``fold`` folds explicit PADs
into the convolution they feed; ``all`` is micronn's default (fold, alias, in-place and streaming overlap).
``patched_total`` is micronn's head + tail after patch-based execution (``micronn.patch.search``, at most 20 %
more MACs; the unpatched total where no patching helps; the tail keeps one copy of the per-channel arrays the
stripes repeat; one or more patched stages, ``patched_split`` lists them) and ``extra_macs`` the MACs it adds, in
percent. ``patched_x`` is TFLM's total over it. ``rom_total`` is the same patched model's head + tail when its
per-channel multipliers and shifts stay in flash beside the weights (``Sharing(rom=True)``), which is where
micronn's firmware export keeps them (TFLM computes them into its arena in prepare), and ``rom_x`` TFLM's total over
it; ``tests/patch/test_patch_models.py`` checks that figure against the firmware's measured RAM. And
``peak_x`` TFLM's head over the patched head (the peak activation memory MCUNetV2 compares), beside
``mcunetv2_peak_x``, the paper's own ratio for its model family where it reports one (a printed reference only).
``combined_total`` is every technique together, as ``micronn optimize --patches auto`` writes it (patching, then
TinySeg's spilling, fused fetching and streaming on the better of the patched and unpatched model; head + TFLM's
tail, as TinySeg prices its steps, outputs checked byte for byte), ``combined_pct`` that total in percent of TFLM's
and ``combined_patched`` whether patches were part of it.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import micronn
from micronn import Interpreter, patch
from micronn.planners import Sharing
from micronn.testing import measured_tflm_footprint, tflm_arena
from micronn.tflite.reader import read
from micronn.tflite.writer import write

ROOT = Path(__file__).resolve().parents[1]

# MCUNetV2 (Lin, Chen, Lin, Gan, Han: "MCUNetV2: Memory-Efficient Patch-based Inference for Tiny Deep Learning",
# NeurIPS 2021) reduces MobileNetV2's int8 peak activation memory from 1,372 kB to 172 kB with patch-based inference:
# 8x. Their network and resolution differ from the models here: a reference column, never a target to tune to.
MCUNETV2_PEAK_X = {"mobilenet_v2": 1372 / 172}


def default_models() -> list[Path]:
    bundled = sorted((Path(micronn.__file__).parent / "models").glob("*.tflite"))
    return bundled + sorted((ROOT / "tests" / "models").glob("*.tflite"))


def measure(path: Path) -> dict:
    data = path.read_bytes()
    theirs = tflm_arena(data)
    row = {"model": path.stem, "tflm_head": theirs["head"], "tflm_tail": theirs["tail"], "tflm_total": theirs["total"]}
    configs = {
        "tflm": dict(planner="tflm"),
        "optimal": dict(planner="optimal", sharing=False),
        "fold": dict(planner="optimal", sharing=Sharing(False, False, False, fold_pad=True, compact_scratch=False)),
        "scratch": dict(planner="optimal", sharing=Sharing(False, False, False, False, compact_scratch=True)),
        "alias": dict(planner="optimal", sharing=Sharing(True, False, False, False, compact_scratch=False)),
        "alias+inplace": dict(planner="optimal", sharing=Sharing(True, True, False, False, compact_scratch=False)),
        "all": dict(planner="optimal", sharing=True),
    }
    for name, kw in configs.items():
        t0 = time.perf_counter()
        it = Interpreter(data, **kw)
        it.allocate_tensors()
        row[name] = it.head
        if name == "optimal":  # the model as written: no folding, no sharing
            row["lower_bound"] = it.arena_report()["lower_bound_bytes"]
        if name == "all":
            row["plan_s"] = time.perf_counter() - t0
            row["micronn_tail"] = it.tail
    m_tail = measured_tflm_footprint(data)["cortex_m"]["tail_bytes"]  # TFLM's tail on a 32-bit Cortex-M (upper bound)
    row["m4_tflm_total"], row["m4_micronn_total"] = row["tflm_head"] + m_tail, row["all"] + m_tail
    row["saved_pct"] = 100 * (1 - row["all"] / row["tflm_head"]) if row["tflm_head"] else 0.0
    found = patch.search(data)
    b = found.best
    row["patched_total"], row["patched_head"], row["patched_tail"] = b.total, b.head, b.tail
    row["patched_split"] = "; ".join(
        f"ops {st.start}..{st.end} as {st.split if isinstance(st.split, int) else list(st.split)}"
        for st in b.stages) or "-"
    row["extra_macs"] = 100 * b.extra_macs / found.macs if found.macs else 0.0
    row["patched_x"] = row["tflm_total"] / b.total if b.total else 0.0
    row["peak_x"] = row["tflm_head"] / b.head if b.head else 0.0
    # the firmware export keeps per-channel multipliers and shifts with the weights in flash (Sharing.rom)
    on_device = Interpreter(found.model, sharing=Sharing(rom=True))
    on_device.allocate_tensors()
    row["rom_total"], row["rom_bytes"] = on_device.head + on_device.tail, on_device.rom_bytes
    row["rom_x"] = row["tflm_total"] / row["rom_total"] if row["rom_total"] else 0.0
    row["mcunetv2_peak_x"] = next((x for k, x in MCUNETV2_PEAK_X.items() if path.stem.startswith(k)), None)
    # the same stripes for TFLM, each slice cut just before its stripe (TFLM copies slices, so hoisting them costs)
    if b.n:
        ship = write(patch.patch_stages(read(data), b.stages, slices_first=False))
        row["patched_tflm_total"] = tflm_arena(ship)["total"]
    else:
        row["patched_tflm_total"] = row["tflm_total"]
    try:
        combined = patch.optimize_and_verify(data, patches="auto")
    except micronn.MicronnError as e:  # TinySeg's steps refuse some graphs (e.g. control flow): the column says so
        row["combined_total"], row["combined_pct"], row["combined_patched"] = None, None, f"refused: {e}"
    else:
        if not combined["verified"]:
            raise micronn.MicronnError(f"{path.stem}: the optimized model's outputs differ from the original's")
        row["combined_total"] = combined["after"]["total_bytes"]
        row["combined_pct"] = 100 * row["combined_total"] / row["tflm_total"] if row["tflm_total"] else 0.0
        row["combined_patched"] = combined["patches"]["used"]
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="*", type=Path)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    rows, skipped = [], []
    for p in a.models or default_models():
        try:
            rows.append(measure(p))
        except micronn.MicronnError as e:
            skipped.append((p.stem, str(e)))
    if a.json:
        print(json.dumps({"rows": rows, "skipped": dict(skipped)}, indent=1))
        return
    cols = ["model", "tflm_head", "tflm_total", "lower_bound", "tflm", "optimal", "fold", "scratch", "alias",
            "alias+inplace", "all", "m4_tflm_total", "m4_micronn_total", "patched_head", "patched_tail",
            "patched_total", "patched_tflm_total", "rom_total", "saved_pct", "plan_s", "extra_macs", "patched_x",
            "rom_x", "peak_x", "mcunetv2_peak_x", "combined_total", "combined_pct", "combined_patched", "patched_split"]
    print(" | ".join(cols))
    print(" | ".join("---" for _ in cols))
    for r in rows:
        paper = r["mcunetv2_peak_x"]
        done = r["combined_total"] is not None
        cells = [r["model"]] + [f"{r[c]:,}" for c in cols[1:-11]] + [
            f"{r['saved_pct']:.1f}%", f"{r['plan_s']:.2f}", f"{r['extra_macs']:.1f}%", f"{r['patched_x']:.2f}x",
            f"{r['rom_x']:.2f}x", f"{r['peak_x']:.2f}x", "-" if paper is None else f"{paper:.1f}x",
            f"{r['combined_total']:,}" if done else "-", f"{r['combined_pct']:.1f}%" if done else "-",
            ("yes" if r["combined_patched"] else "no") if done else r["combined_patched"], r["patched_split"]]
        print(" | ".join(cells))
    for name, why in skipped:
        print(f"skipped {name}: {why}")
    print("\nheads in bytes; tflm = micronn with TFLM's planner (equals tflm_head); all = optimal planner with "
          "aliasing, in-place, streaming overlap, PAD folding and compact scratch; "
          "scratch = compact kernel scratch alone; "
          "m4_* = whole arena (kTensorArenaSize) on a 32-bit Cortex-M with TFLM's tail at 32-bit sizes "
          "(micronn.footprint, upper bound); saved_pct = all vs tflm_head; patched_total = micronn head + tail "
          "with patch-based execution (micronn.patch), patched_tflm_total = the TFLM wheel's arena for that model, "
          "extra_macs = the MACs it adds; patched_x = tflm_total / patched_total; rom_total = that patched model's "
          "head + tail with its per-channel multipliers and shifts in flash beside the weights, where micronn's "
          "firmware export keeps them (Sharing.rom), rom_x = tflm_total / rom_total; "
          "peak_x = tflm_head / patched_head; "
          "mcunetv2_peak_x = the MCUNetV2 paper's peak reduction for MobileNetV2 (1,372 kB -> 172 kB int8), a "
          "reference, not a figure measured here; combined_total = every technique together (micronn optimize "
          "--patches auto: patches, spilling, fused fetching, streaming; head + TFLM's tail), combined_pct = its "
          "percent of tflm_total, combined_patched = whether patches are part of it")


if __name__ == "__main__":
    main()
