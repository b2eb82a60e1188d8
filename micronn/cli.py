"""``micronn`` command line: parses, calls one public function of the feature a command belongs to, prints.
Every command has ``--json``.

Failures never show a traceback. Each prints one line on stderr starting ``micronn: error:`` (and, with ``--json``,
a JSON object ``{"error": kind, "message": ..., "exit_code": n}`` on stdout) and exits with:

* 1: a ``MicronnError`` (bad model, input, output path, option value, device fault, ...) or an operating-system
  error (``OSError``) no library function turned into one;
* 2: a usage error (argparse's convention: unknown command or option, missing or malformed argument), or an
  unexpected exception: a bug in micronn, named by its type; ``MICRONN_DEBUG=1`` shows its traceback;
* 130: interrupted (Ctrl-C); 141, silently: the reader of stdout went away (``| head``), as with SIGPIPE.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from typing import Any, NoReturn

import numpy as np

from micronn import __version__, analyze, compress, export, micro, patch, progress, simulate, tinyseg
from micronn.errors import MicronnError, check_writable, writing
from micronn.planners import Sharing


def _jsonable(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    return x


def _table(rows: list[list[Any]], header: list[str]) -> str:
    cells = [header] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    return "\n".join("  ".join(c.rjust(w) if c.replace(",", "").replace(".", "").isdigit() else c.ljust(w)
                               for c, w in zip(r, widths)).rstrip() for r in cells)


def _memory_lines(mem: dict[str, Any]) -> str:
    if "error" in mem:
        return f"memory: cannot plan: {mem['error']}"
    line = (f"arena ({mem.get('planner', 'tflm')} planner): head {mem['head_bytes']:,} B + tail {mem['tail_bytes']:,} B"
            f" = {mem['total_bytes']:,} B; live-set lower bound {mem['lower_bound_bytes']:,} B")
    if mem.get("rom_bytes"):
        line += f"; {mem['rom_bytes']:,} B of per-channel constants in flash (--rom)"
    if "tflm_head_bytes" in mem:
        line += f"; TFLM's planner: head {mem['tflm_head_bytes']:,} B"
    return line


def cmd_demo(a: argparse.Namespace) -> Any:
    if a.audio is not None:
        res = simulate.keyword(a.audio)
        out = {"audio": res["audio"], "keyword": res["keyword"], "scores": res["scores"]}
        if a.json:
            return out
        scores = ", ".join(f"{k} {v:.3f}" for k, v in out["scores"].items())
        print(f"micro_speech on '{out['audio']}' (49 frames through audio_preprocessor_int8): "
              f"\"{out['keyword']}\" ({scores})")
        return None
    res = simulate.demo(a.image)
    if a.json:
        return res
    verdict = "a person" if res["person"] else "no person"
    print(f"person_detect on the bundled '{res['image']}' image: {verdict} "
          f"(person {res['person_score']:.3f}, no person {res['no_person_score']:.3f})")
    print(_memory_lines(res["arena"]))
    return None


def cmd_analyze(a: argparse.Namespace) -> Any:
    if a.html:
        check_writable(a.html)
    res = analyze.analyze(a.model, planner=a.planner, target=a.target)
    if a.html:
        analyze.write_report(res, a.html)
        if not a.json:
            print(f"wrote {a.html}")
            return None
    if a.json:
        return res.to_dict()
    print(res.csv() if a.csv else res.text(), end="" if a.csv else "\n")
    return None


def cmd_info(a: argparse.Namespace) -> Any:
    res = analyze.info(a.model, cold_ranges=a.cold_ranges)
    if a.json:
        return res
    print(f"{a.model}: {res['operators']} operators, {len(res['tensors'])} tensors, "
          f"{res['weight_bytes']:,} B of weights, {res['activation_bytes']:,} B of activations")
    print("ops: " + ", ".join(f"{k} x{v}" for k, v in res["op_counts"].items()))
    for kind in ("inputs", "outputs"):
        for t in res[kind]:
            print(f"{kind[:-1]}: {t['name']!r} {t['dtype']}{t['shape']}")
    print(_memory_lines(res["memory"]))
    if a.cold_ranges:
        rows = [[c["tensor"], c["start"], c["end"], c["length"], f"{c['bytes']:,}", c["name"][:60]]
                for c in sorted(res["cold_ranges"], key=lambda c: -c["length"] * c["bytes"]) if c["length"] > 1]
        print(_table(rows, ["tensor", "idle after op", "until op", "ops", "bytes", "name"]))
    return None


def cmd_compress(a: argparse.Namespace) -> Any:
    check_writable(a.output)
    data, rep = compress.compress(a.model, bits=a.bits, tolerance=a.tolerance, format=a.format)
    with writing(a.output):
        with open(a.output, "wb") as f:
            f.write(data)
    if a.json:
        return {"path": a.output, "format": rep.format, "file_before": rep.file_before, "file_after": rep.file_after,
                "ratio": rep.ratio, "flash_saved": rep.flash_saved, "lossless": rep.lossless,
                "head_before": rep.head_before, "head_after": rep.head_after, "output_change": rep.output_change,
                "tensors": [vars(t) for t in rep.tensors], "notes": rep.notes}
    print(rep)
    print(f"wrote {a.output}")
    return None


def cmd_export(a: argparse.Namespace) -> Any:
    if not a.run and (a.device or a.input or a.output or a.report):
        raise _UsageError("--device, --input, --output and --report need --run")
    inputs = simulate.load_inputs(a.input) if a.input else None
    if a.output is not None:
        simulate.check_output(a.output)
    if a.report is not None:
        check_writable(a.report)
    if a.format == "tflm":
        if a.run or a.optimize:
            raise _UsageError("--run and --optimize apply to the C project; --format tflm writes a model for TFLM "
                              "to run with its own kernels")
        tp = export.export_tflm(a.model, a.dir, prefix=a.prefix)
        if a.json:
            return tp.to_dict()
        print(tp)
        return None
    if a.target_bytes is not None and not a.optimize:
        raise _UsageError("--target-bytes needs --optimize")
    proj = export.export(a.model, a.dir, a.target, prefix=a.prefix, optimize=a.optimize, target_bytes=a.target_bytes,
                         tuning_log=a.tuning_log)
    res = export.run(proj, inputs, a.device, toolchain=a.toolchain, seed=a.seed) if a.run else None
    if res is not None and a.output is not None:
        simulate.save_outputs(a.output, res.outputs)
    if res is not None and a.report is not None:
        with writing(a.report), open(a.report, "w") as f:
            f.write(export.report_html(proj, res))
    if a.json:
        out = proj.to_dict()
        if res is not None:
            out.update(res.to_dict())
        return out
    print(proj)
    if res is not None:
        print(res)
        if res.ops:
            rows = [[i, o["op"], o["name"], o["kernel"], f"{o['instructions']:,}", f"{o['cycles']:,.0f}"]
                    for i, o in enumerate(res.ops)]
            print(_table(rows, ["call", "op", "name", "kernel", "instructions", "cycles"]))
        for path in (a.output, a.report):
            if path:
                print(f"wrote {path}")
        if not res.identical:
            raise MicronnError("the firmware's outputs differ from micronn's interpreter")
    return None


def cmd_optimize(a: argparse.Namespace) -> Any:
    if a.patches == "off":
        res = tinyseg.optimize_and_verify(a.model, a.output, a.target_bytes, a.storage, report=a.report, seed=a.seed)
    else:
        res = patch.optimize_and_verify(a.model, a.output, a.target_bytes, a.storage, report=a.report, seed=a.seed,
                                        patches=a.patches, max_extra_macs=a.max_extra_macs)
    if a.json:
        return res
    rows = [[s["name"], f"{s['head_bytes']:,}", f"{s['tail_bytes']:,}", f"{s['total_bytes']:,}", s["change"][:80]]
            for s in res["steps"]]
    print(_table(rows, ["step", "head", "tail", "total", "what changed"]))
    b, f = res["before"]["total_bytes"], res["after"]["total_bytes"]
    print(f"total arena {b:,} B -> {f:,} B (-{100 * (1 - f / b):.1f}%); outputs byte-identical on random inputs: "
          f"{res['verified']}")
    if "patches" in res:
        p = res["patches"]
        stages = "; ".join(f"operators {st['ops'][0]}..{st['ops'][1]} in "
                           f"{st['split'] if isinstance(st['split'], int) else len(st['split'])} stripes"
                           for st in p["after"]["stages"])
        what = f"{stages}, +{p['extra_macs_pct']}% MACs" if p["used"] else "none used"
        print(f"patches ({p['tried']} tried): {what}")
    for key in ("path", "report"):
        if res.get(key):
            print(f"wrote {res[key]}")
    return None


def cmd_run(a: argparse.Namespace) -> Any:
    inputs = simulate.load_inputs(a.input) if a.input else None
    if a.tuning_log is not None and a.device is None:
        raise _UsageError("--tuning-log applies to device runs (--device)")
    if a.device is not None:
        if a.arena_size is not None:
            raise _UsageError("--arena-size applies to host runs; a device run places the arena itself")
        if a.output is not None:
            simulate.check_output(a.output)
        log = {None: "auto", "none": None}.get(a.tuning_log, a.tuning_log)  # the shipped logs unless told
        res = micro.run_model(a.model, a.device, inputs, profile=a.profile, seed=a.seed, tuning_log=log)
        if a.output is not None:
            res["path"] = simulate.save_outputs(a.output, res["outputs"])
    else:
        res = simulate.run(a.model, inputs, seed=a.seed, arena_size=a.arena_size, profile=a.profile, output=a.output)
    if a.json:
        return res
    if a.device:
        return _device_run(res, a.profile)
    for i, y in enumerate(res["outputs"]):
        print(f"output {i}: {y.dtype.name}{list(y.shape)} {np.array2string(y.ravel()[:16], separator=', ')}"
              + (" ..." if y.size > 16 else ""))
    print(_memory_lines(res["arena"]))
    if a.profile:
        p = res["profile"]
        rows = [[o["index"], o["op"], f"{o['ns'] / 1e3:,.1f}"] for o in p["ops"]]
        print(_table(rows, ["#", "op", "us"]))
        print(f"kernels {p['kernel_ns'] / 1e3:,.1f} us, total {p['total_ns'] / 1e3:,.1f} us, "
              f"interpreter overhead {p['overhead_ns'] / 1e3:,.1f} us "
              f"({100 * p['overhead_ns'] / max(p['total_ns'], 1):.1f}%)")
    if res.get("path"):
        print(f"wrote {res['path']}")
    return None


def cmd_eval(a: argparse.Namespace) -> Any:
    if a.report:
        check_writable(a.report)
    classes = [c.strip() for c in a.classes.split(",")] if a.classes else None
    res = simulate.evaluate(a.model, a.data, a.labels, float_model=a.float, top_k=(1, a.top_k), batch=a.batch,
                            ray=a.ray if a.ray else False, progress=True, classes=classes, backend=a.backend,
                            workers=a.workers)
    if a.report:
        simulate.write_eval_report(res, a.report)
    if a.json:
        return {**res.to_dict(), **({"report": a.report} if a.report else {})}
    print(res)
    if a.report:
        print(f"wrote {a.report}")
    return None


def _device_run(res: dict[str, Any], profile: bool) -> None:
    for i, y in enumerate(res["outputs"]):
        print(f"output {i}: {y.dtype.name}{list(y.shape)} {np.array2string(y.ravel()[:16], separator=', ')}"
              + (" ..." if y.size > 16 else ""))
    n = res["instructions"]
    print(f"{res['device']}: {res['tasks']} tasks, " + (f"{n:,} instructions, ~{res['cycles']:,.0f} cycles"
                                                        if n is not None else "instructions not counted"))
    if profile:
        fmt = lambda v, f: "-" if v is None else format(v, f)  # noqa: E731
        print(_table([[o["index"], o["op"], fmt(o["instructions"], ","), fmt(o["cycles"], ",.0f")]
                      for o in res["ops"]], ["#", "op", "instructions", "cycles"]))


def cmd_tune(a: argparse.Namespace) -> Any:
    from micronn.micro import tune

    check_writable(a.output)
    res = tune.tune_model(a.model, a.target, trials=a.trials, log=a.output, seed=a.seed, search=a.search,
                          early_stop=a.early_stop, jobs=a.jobs, ray_address=a.ray)
    if a.json:
        return {k: v for k, v in res.items() if k != "records"}
    rows = [[lay["key"].split(":", 1)[1], ",".join(map(str, lay["layers"])), f"{lay['macs']:,}",
             "-" if lay["baseline_instructions"] is None else f"{lay['baseline_instructions'] / lay['macs']:.2f}",
             "-" if lay["best_instructions"] is None else f"{lay['best_instructions'] / lay['macs']:.2f}",
             f"{lay['measured']}" + (f" (+{lay['resumed']} logged)" if lay["resumed"] else "")
             + (" stopped early" if lay["stopped_early"] else ""),
             json.dumps(lay["best_config"]) if lay["best_config"] else "-"]
            for lay in res["layers"]]
    print(_table(rows, ["shape", "ops", "MACs", "generic instr/MAC", "tuned instr/MAC", "measured", "best config"]))
    workers = f"{res['workers']} worker" + ("s" if res["workers"] != 1 else "")
    print(f"{res['target']}: search {res['search']}, measured {res['measured_by']} ({workers}) in "
          f"{res['seconds']:.1f} s; appended to {res['log']}")
    return None


def cmd_devices(a: argparse.Namespace) -> Any:
    res = micro.devices()
    if a.json:
        return res
    print(_table([[d["name"], d["cpu"] or "-", d["backend"], "yes" if d["available"] else f"no: {d['reason']}"]
                  for d in res], ["device", "cpu", "backend", "available"]))
    return None


def cmd_plan(a: argparse.Namespace) -> Any:
    sharing = Sharing(alias=not a.no_alias, inplace=not a.no_inplace, overlap=not a.no_overlap,
                      fold_pad=not a.no_fold_pad, compact_scratch=not a.no_compact_scratch, rom=a.rom)
    res = analyze.plan_report(a.model, a.planner, False if a.no_sharing else sharing, offline_out=a.offline_out,
                     plot=a.plot, compare=a.compare, patches=a.patches, max_extra_macs=a.max_extra_macs)
    if a.json:
        return res
    rows = [[b["offset"], b["size"], b["first"], b["last"], b.get("name", f"scratch of op {b.get('op')}")]
            for b in sorted(res["buffers"], key=lambda b: (b["offset"], b["first"]))]
    print(_table(rows, ["offset", "size", "first", "last", "buffer"]))
    print(_memory_lines(res))
    t = res["target"]
    print(f"TFLM with this head: host (64-bit) tail {t['host']['tail_bytes']:,} B ({t['host']['how']}), total "
          f"{t['host']['total_bytes']:,} B; 32-bit Cortex-M tail at most {t['cortex_m']['tail_bytes']:,} B, "
          f"kTensorArenaSize {t['cortex_m']['total_bytes']:,} B")
    for g in res["shared_groups"]:
        print("share memory: " + ", ".join(f"t{t}" for t in g))
    if "offline" in res:
        o = res["offline"]
        print(f"wrote {o['path']}: TFLM plans head {o['tflm_head_bytes']:,} B for it "
              f"(original model: {o['tflm_original_head_bytes']:,} B)")
    for s, st in enumerate(res.get("patches", {}).get("stages", [])):
        parts = ", ".join(f"rows {p['rows'][0]}..{p['rows'][1]} (peak {p['peak_live_bytes']:,} B)"
                          for p in st["patches"])
        print(f"patched stage {s}: {st['name']} in {len(st['patches'])} patches: {parts}")
    if "patch_search" in res and not res.get("patches"):
        print("patches: none makes the arena smaller")
    if "plot" in res:
        print(f"drew {res['plot']}")
    return None


def cmd_reorder(a: argparse.Namespace) -> Any:
    res = analyze.reorder_report(a.model, a.output)
    if a.json:
        return res
    how = "exact search" if res["exact"] else "greedy (search space too large)"
    print(f"peak live set {res['peak_before_bytes']:,} B -> {res['peak_after_bytes']:,} B by {how}; "
          f"TFLM head {res['tflm_head_before_bytes']:,} B -> {res['tflm_head_after_bytes']:,} B")
    if res.get("path"):
        print(f"wrote {res['path']}" + ("" if res["changed"] else " (order unchanged)"))
    return None


class _UsageError(Exception):
    """A command line argparse cannot use; reported by :func:`main` like every other error."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one ``micronn: error:`` line (no usage dump) that ``main`` prints."""

    def error(self, message: str) -> NoReturn:
        raise _UsageError(message)


def _non_negative(s: str) -> int:
    """An argparse type: a whole number >= 0 (bytes, seeds), so ``--arena-size -5`` is a usage error."""
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {s!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {v}")
    return v


def _fraction(s: str) -> float:
    """An argparse type: a finite number >= 0 (``--max-extra-macs 0.2`` is 20 %)."""
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {s!r}") from None
    if not 0 <= v < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0, got {s}")
    return v


def _positive(s: str) -> int:
    """An argparse type: a whole number >= 1 (batch sizes, k)."""
    v = _non_negative(s)
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {v}")
    return v


def _fail(kind: str, message: str, code: int, as_json: bool) -> int:
    """Report one failure: one line on stderr, and the JSON error object on stdout with ``--json``."""
    message = " ".join(str(message).split()) or kind  # one line, whatever the message held
    print(f"micronn: error: {message}", file=sys.stderr)
    if as_json:
        print(json.dumps({"error": kind, "message": message, "exit_code": code}))
    return code


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so Python's final flush of a broken pipe prints no second error."""
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, sys.stdout.fileno())
        os.close(fd)
    except (OSError, ValueError, AttributeError):  # no real stdout (captured in tests): nothing to silence
        pass


def main(argv: list[str] | None = None) -> int:
    """Run one command; returns the exit status (see the module docstring), never raises."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        a = _parser().parse_args(argv)
    except _UsageError as e:
        return _fail("UsageError", str(e), 2, "--json" in argv)
    except SystemExit as e:  # --help (or --version) printed what was asked
        return e.code if isinstance(e.code, int) else 0
    as_json = getattr(a, "json", False)
    progress.show(False if as_json or a.quiet else None)  # bars only on a terminal, never in JSON or --quiet runs
    try:
        res = a.fn(a)
        if res is not None:
            print(json.dumps(_jsonable(res), indent=1))
    except _UsageError as e:
        return _fail("UsageError", str(e), 2, as_json)
    except MicronnError as e:
        return _fail(type(e).__name__, str(e), 1, as_json)
    except KeyboardInterrupt:
        return _fail("KeyboardInterrupt", "interrupted", 130, as_json)
    except BrokenPipeError:  # the reader left (| head): it asked for no more, so no error either
        _silence_stdout()
        return 141
    except OSError as e:  # the environment, not micronn: a full disk, a vanished file
        where = f" ({e.filename})" if getattr(e, "filename", None) else ""
        return _fail(type(e).__name__, f"{e.strerror or e}{where}", 1, as_json)
    except Exception as e:  # a bug: say which, never silently; the traceback on request
        if os.environ.get("MICRONN_DEBUG"):
            traceback.print_exc()
        return _fail(type(e).__name__, f"internal error: {type(e).__name__}: {e} (a bug in micronn; "
                     "MICRONN_DEBUG=1 shows the traceback)", 2, as_json)
    finally:
        progress.show(None)
    return 0


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="micronn", description="Run TFLite models byte-identically to TFLM.")
    p.add_argument("--version", action="version", version=f"micronn {__version__}")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bars (they show only on a terminal)")
    sub = p.add_subparsers(dest="cmd", required=True)

    def add(name: str, fn: Any, help_: str) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, help=help_, description=help_)
        sp.add_argument("--json", action="store_true", help="print machine-readable JSON")
        sp.set_defaults(fn=fn)
        return sp

    sp = add("demo", cmd_demo, "person detection on a bundled image (or a keyword in audio), with the arena it needs")
    sp.add_argument("--image", default="person", choices=["person", "no_person"])
    sp.add_argument("--audio", metavar="yes|no|silence|noise|PATH.wav",
                    help="run micro_speech on a bundled recording or a 16 kHz 16-bit mono .wav file instead")
    sp = add("analyze", cmd_analyze, "one row per operator (shapes, quantization, MACs, flash, live memory, scratch, "
             "cycles) and the model's totals")
    sp.add_argument("model")
    sp.add_argument("--planner", default="optimal", help="micronn's planner for the offsets (default optimal)")
    sp.add_argument("--target", help="measure instructions and cycles per operator on this device (e.g. cortex-m4)")
    sp.add_argument("--csv", action="store_true", help="print the per-operator table as CSV")
    sp.add_argument("--html", metavar="PATH", help="write a self-contained report: graph, table, plan, costs")
    sp = add("info", cmd_info, "ops, tensors, sizes and memory summary of a model")
    sp.add_argument("model")
    sp.add_argument("--cold-ranges", action="store_true", help="each tensor's longest idle stretch (TinySeg)")
    sp = add("run", cmd_run, "invoke a model once (random inputs unless --input is given)")
    sp.add_argument("model")
    sp.add_argument("--input", action="append", help="a .npy file per model input, in order")
    sp.add_argument("--output", help="write the outputs to this .npz")
    sp.add_argument("--seed", type=_non_negative, default=0)
    sp.add_argument("--arena-size", type=_non_negative, help="arena bytes (default: exactly what the model needs)")
    sp.add_argument("--profile", action="store_true", help="per-op times and interpreter overhead")
    sp.add_argument("--device", help="run every op on a device: cortex-m4|cortex-m7|cortex-m33|cortex-m0|qemu-m4|"
                    "riscv32|riscv32-qemu|host (micronn devices lists them)")
    sp.add_argument("--tuning-log", help="with --device: a micronn tune log whose best kernels replace the generic "
                    "ones; auto (the default): the logs micronn ships; none: the generic kernels only")
    sp = add("eval", cmd_eval, "score a classifier over a data set: accuracy, confusion matrix, per-class "
             "precision/recall, disagreements with the float model")
    sp.add_argument("model")
    sp.add_argument("--data", required=True, help=".npy (N x input), .npz (x/y or one array per input), or a folder "
                    "of images, .wav or .npy files (sub-folders: classes)")
    sp.add_argument("--labels", help="class labels: .npy, .txt, .csv (file,label rows match a folder's files) or an "
                    "inline list such as 0,1,1")
    sp.add_argument("--classes", help="class names in the model's output order, comma-separated")
    sp.add_argument("--float", metavar="FLOAT_MODEL", help="the float model: list the samples whose top-1 differs")
    sp.add_argument("--batch", type=_positive, default=simulate.batch.DEFAULT_BATCH,
                    help="samples read and run at a time (a Ray task's size)")
    sp.add_argument("--top-k", type=_positive, default=5, metavar="K", help="report top-1 and top-K accuracy")
    sp.add_argument("--ray", metavar="ADDRESS", help="run the chunks on Ray: 'local', 'auto' or a cluster address")
    sp.add_argument("--backend", choices=simulate.batch.BACKENDS, default="auto",
                    help="native: the device's C kernels compiled for this host; numpy: the reference interpreter; "
                    "auto (default): native where the model compiles, else numpy (the same bytes either way)")
    sp.add_argument("--workers", type=_positive, help="threads for native chunks (default: this machine's CPUs)")
    sp.add_argument("--report", metavar="PATH", help="write an HTML report with the confusion matrix and per-class "
                    "bars")
    sp = add("plan", cmd_plan, "the arena plan: every buffer's offset, size and lifetime")
    sp.add_argument("model")
    sp.add_argument("--planner", default="optimal", help="optimal (default), tflm, linear")
    sp.add_argument("--no-sharing", action="store_true", help="none of the options below")
    sp.add_argument("--no-alias", action="store_true")
    sp.add_argument("--no-inplace", action="store_true")
    sp.add_argument("--no-overlap", action="store_true")
    sp.add_argument("--no-fold-pad", action="store_true", help="keep explicit PAD ops")
    sp.add_argument("--no-compact-scratch", action="store_true", help="TFLM's scratch sizes (e.g. TRANSPOSE_CONV)")
    sp.add_argument("--rom", action="store_true", help="per-channel multipliers and shifts with the weights in flash, "
                    "as micronn's firmware export keeps them, instead of in the arena's tail (TFLM's place)")
    sp.add_argument("--offline-out", help="write the model with this plan as TFLM offline-plan metadata")
    sp.add_argument("--plot", help="draw the plan to a .png, .svg or .html file")
    sp.add_argument("--compare", help="draw this planner's plan beside it (e.g. tflm)")
    sp.add_argument("--patches", default="off", choices=patch.PATCH_MODES,
                    help="auto: plan the best patch-based execution (micronn.patch); off (default): the model as it "
                    "is (a model micronn optimize --patches auto wrote shows its patches either way)")
    sp.add_argument("--max-extra-macs", type=_fraction, default=0.2, metavar="X",
                    help="with --patches auto: recompute at most this fraction of the model's MACs (default 0.2)")

    sp = add("tune", cmd_tune, "autotune generated kernels for a model's layers on an emulated device (instruction "
             "counts) and write the tuning log that micronn.micro.run_model(..., tuning_log=LOG) applies")
    sp.add_argument("model")
    sp.add_argument("--target", default="cortex-m4", help="an emulated target: cortex-m4|cortex-m7|cortex-m33|"
                    "cortex-m3|cortex-m0|riscv32")
    sp.add_argument("--trials", type=_positive, help="configs measured per layer shape (default: all of them)")
    sp.add_argument("--log", "-o", "--output", dest="output", default="tune.jsonl", metavar="FILE",
                    help="the tuning log (JSON lines, default tune.jsonl): appended to, and the configs it already "
                         "holds are not measured again")
    sp.add_argument("--search", default="xgb", choices=["xgb", "random", "grid", "anneal"],
                    help="xgb: the cost model's picks (default); random; grid: the space in order; anneal: "
                         "simulated annealing on the cost model")
    sp.add_argument("--early-stop", type=_positive, metavar="N",
                    help="end a shape's search after N trials without a new best")
    sp.add_argument("--jobs", type=_positive, help="worker processes measuring (default: one per CPU; 1: none)")
    sp.add_argument("--ray", metavar="ADDRESS", help="measure on a Ray cluster (host:port, ray://host:10001, auto, "
                    "or local); needs pip install 'micronn[eval]'")
    sp.add_argument("--seed", type=_non_negative, default=0)
    add("devices", cmd_devices, "device targets for run --device and whether each is available here")
    sp = add("reorder", cmd_reorder, "run operators in the order with the smallest peak memory")
    sp.add_argument("model")
    sp.add_argument("-o", "--output", help="write the reordered model here")

    sp = add("compress", cmd_compress, "TFLM's look-up-table weight compression: smaller flash, same kernels")
    sp.add_argument("model")
    sp.add_argument("-o", "--output", required=True, help="write the compressed model here")
    sp.add_argument("--bits", type=int, choices=range(1, 8), metavar="1-7",
                    help="index width (default: the narrowest lossless one per tensor)")
    sp.add_argument("--tolerance", type=float, default=float("inf"),
                    help="largest change of a weight (in stored steps) clustering may make; 0 = lossless only")
    sp.add_argument("--format", default="metadata", choices=["metadata", "decode"],
                    help="COMPRESSION_METADATA (default) or TFLM's DECODE operator")
    sp = add("export", cmd_export, "standalone firmware: a C project (weights, static arena, kernel calls) that runs "
             "without micronn")
    sp.add_argument("model")
    sp.add_argument("-o", "--output-dir", dest="dir", required=True, help="write the project into this directory")
    sp.add_argument("--target", default="cortex-m4",
                    help="cortex-m0|cortex-m3|cortex-m4|cortex-m7|cortex-m33|riscv32|riscv32-qemu")
    sp.add_argument("--prefix", default="model", help="C prefix of the generated symbols (model_init, ...)")
    sp.add_argument("--format", default="c", choices=["c", "tflm"],
                    help="c: standalone C project (default); tflm: the .tflite with micronn's offline plan, as a C "
                         "array, and an op resolver for TFLM")
    sp.add_argument("--optimize", action="store_true",
                    help="TinySeg: spill idle tensors to the project's storage function for a smaller arena")
    sp.add_argument("--target-bytes", type=_non_negative, help="with --optimize: stop once the arena is this small")
    sp.add_argument("--tuning-log", help="a log of micronn tune (or auto: the logs micronn ships): tuned layers get "
                    "their best generated kernel")
    sp.add_argument("--run", action="store_true", help="build the image, run it once and check every output byte")
    sp.add_argument("--device", help="where --run runs it: the target on Unicorn (default), qemu-m4 (etc.), host")
    sp.add_argument("--toolchain", choices=["zig", "gcc"], help="cross compiler (default: zig, else gcc)")
    sp.add_argument("--input", nargs="+", help="one .npy per model input (default: random from --seed)")
    sp.add_argument("--output", help="with --run: save the firmware's outputs to this .npz")
    sp.add_argument("--report", help="with --run: an HTML page of flash, RAM and per-call cost")
    sp.add_argument("--seed", type=_non_negative, default=0)
    sp = add("optimize", cmd_optimize, "TinySeg: spill idle tensors and fuse their fetching to shrink the arena")
    sp.add_argument("model")
    sp.add_argument("-o", "--output", help="write the optimized model here")
    sp.add_argument("--target-bytes", type=_non_negative,
                    help="stop once head + tail is at most this (default: as low as it goes)")
    sp.add_argument("--storage", default="memory", choices=["memory", "flash", "qspi", "file", "remote"],
                    help="where spilled tensors go when checking the result (and whose latency breaks ties)")
    sp.add_argument("--report", help="write an HTML report: steps, plans before/after, latency breakdown")
    sp.add_argument("--seed", type=_non_negative, default=0)
    sp.add_argument("--patches", default="off", choices=patch.PATCH_MODES,
                    help="auto: also run the first layers stripe by stripe (patch-based execution) and keep it if the "
                         "total is smaller; off (default): TinySeg alone")
    sp.add_argument("--max-extra-macs", type=_fraction, default=0.2, metavar="X",
                    help="with --patches auto: recompute at most this fraction of the model's MACs (default 0.2)")
    return p


if __name__ == "__main__":
    sys.exit(main())
