"""Autotuning of generated kernels on a device (the AutoTVM loop of μTVM, on micronn's sessions).

For each layer of a model that a schedule template covers (``micronn.micro.templates``), one per distinct shape
key: enumerate the template's config space, generate candidates in batches (one translation unit, one compile,
one module per batch), run each on the device over the layer's own task words with a random input, count its
instructions, and check its output bytes against micronn's interpreter. Which configs to measure next comes from a
cost model (gradient-boosted trees, xgboost) fitted to every measurement so far, layers pooled, on the knobs and
the layer's shape; a space no larger than the trial budget is measured exhaustively. Every measurement is a record
of the tuning log (JSON lines); ``templates.apply`` / ``run_model(..., tuning_log=...)`` use the best verified one
per shape.

Instruction counts exist only on emulated devices (Unicorn): the host device runs natively and counts nothing, and
QEMU counts no instructions either, so tuning refuses both.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from pathlib import Path
from typing import Any

import numpy as np

from micronn import progress
from micronn.errors import MicronnError
from micronn.interpreter import Interpreter
from micronn.ir import Model
from micronn.micro import lower, templates
from micronn.micro.runtime import DeviceModel
from micronn.micro.session import Session
from micronn.micro.target import get_target
from micronn.tflite.reader import Source

BATCH = 8  # candidates compiled and measured together


class TuneError(MicronnError):
    """Tuning cannot proceed: a device without instruction counts, nothing to tune, a bad budget."""


def _check_target(target: str) -> str:
    if not isinstance(target, str):
        raise TuneError(f"tune takes a target name, got {type(target).__name__}")
    if target.startswith("qemu-"):
        raise TuneError(f"{target} runs on QEMU, which counts no instructions: tune on the emulated target "
                        f"({get_target(target[5:]).name}) instead")
    t = get_target(target)
    if t.native:
        raise TuneError("the host device runs kernels natively and counts no instructions, so there is nothing to "
                        "measure a config by: tune on an emulated target such as cortex-m4")
    if t.backend != "unicorn":
        raise TuneError(f"{t.name} has no Unicorn emulator, so no instruction counts: tune on a Unicorn target")
    return t.name


def layers(interp: Interpreter) -> list[tuple[int, Any, Any]]:
    """(op index, template module, shape) of every task a template covers, in model order."""
    out = []
    for task in lower.lower_model(interp):
        hit = templates.covered(task)
        if hit is not None:
            out.append((task.op, *hit))
    return out


class _Bench:
    """One layer of a model loaded on a fresh session: runs kernels over the layer's task words on a random input
    and checks their output against the interpreter's kernel on the same input."""

    def __init__(self, interp: Interpreter, op: int, target: str, seed: int):
        self.sess = Session(target)
        try:
            self.dm = DeviceModel(interp, self.sess)
        except BaseException:
            self.sess.close()
            raise
        self.interp, self.op = interp, op
        self.fn, self.args, self.symbol, _ = next(t for t in self.dm.tasks if t[3] == op)
        node = interp._nodes[op]
        self.in_t, self.out_t = node.op.inputs[0], node.op.outputs[0]
        views = interp._all_views[0]
        self.in_addr = self.dm.resolve(lower.TensorRef(0, self.in_t))
        self.out_addr = self.dm.resolve(lower.TensorRef(0, self.out_t))
        rng = np.random.default_rng(seed)
        self.x = rng.integers(-128, 128, views[self.in_t].shape).astype(views[self.in_t].dtype)
        # the reference: the interpreter's own kernel over its arena, as micronn runs the layer
        arena = interp._arena.buf
        before = arena.copy()
        views[self.in_t][...] = self.x
        interp._kernels[op].invoke(node)
        self.want = views[self.out_t].copy()
        arena[...] = before

    def run(self, fn: int, name: str) -> tuple[int | None, bool]:
        """(instructions, output matches) of kernel ``fn`` on the layer."""
        n = self.want.nbytes
        self.sess.write(self.out_addr, bytes([0x5A]) * n)  # poison: every output byte must be written
        self.sess.write(self.in_addr, self.x.tobytes())  # after the poison: the output may lie over the input
        self.sess.enqueue(fn, self.args, name)
        self.sess.sync()
        cost = self.sess.last_profile[0].instructions
        got = np.frombuffer(self.sess.read(self.out_addr, n), self.want.dtype).reshape(self.want.shape)
        return cost, bool(np.array_equal(got, self.want))

    def close(self) -> None:
        self.sess.close()


def measure(interp: Interpreter, op: int, template: Any, shape: Any, configs: list[dict[str, int]], target: str,
             seed: int) -> tuple[list[tuple[int | None, bool]], tuple[int | None, bool]]:
    """Instructions and verdict of each config, and of the generic kernel, on a fresh session (modules are never
    unloaded, so a session per batch keeps the code section from filling)."""
    names, text = template.source(shape, configs)
    digest = hashlib.sha1(" ".join(names).encode()).hexdigest()[:10]
    path = templates.write_source(f"{template.NAME}_batch_{digest}", text)
    bench = _Bench(interp, op, target, seed)
    try:
        mod = bench.sess.load_module([path], [lower.include_dir()])
        base = bench.run(bench.fn, bench.symbol)
        return [bench.run(mod[n].addr, n) for n in names], base
    finally:
        bench.close()


class _CostModel:
    """Predicts log(instructions per MAC) of a config from its features; xgboost when installed, else none (the
    search then samples at random)."""

    def __init__(self, seed: int):
        try:
            import xgboost
        except ImportError:
            self.xgb = None
        else:
            self.xgb = xgboost
        self.seed = seed
        self.kind = "xgboost" if self.xgb is not None else \
            "random (xgboost is not installed: pip install micronn[tune])"

    def rank(self, history: list[tuple[list[float], float]], candidates: list[list[float]]) -> list[int]:
        """Candidate indices, most promising first."""
        order = list(range(len(candidates)))
        if self.xgb is None or len(history) < 4:
            random.Random(self.seed + len(history)).shuffle(order)
            return order
        x = np.array([h[0] for h in history], np.float32)
        y = np.array([h[1] for h in history], np.float32)
        params = {"max_depth": 4, "eta": 0.3, "seed": self.seed, "nthread": 1, "verbosity": 0}
        booster = self.xgb.train(params, self.xgb.DMatrix(x, label=y), num_boost_round=60)
        pred = booster.predict(self.xgb.DMatrix(np.array(candidates, np.float32)))
        return sorted(order, key=lambda i: float(pred[i]))


def tune_model(model: Model | Source | Interpreter, target: str = "cortex-m4", *, trials: int | None = None,
               log: str | os.PathLike | None = None, seed: int = 0, batch: int = BATCH) -> dict[str, Any]:
    """Tune every template-covered layer of ``model`` on ``target``: at most ``trials`` configs per distinct shape
    (None: the whole space), ``batch`` at a time. Writes the tuning log (JSON lines) to ``log`` as it goes; returns
    the records, and per shape the generic kernel's and the best verified config's instructions."""
    name = _check_target(target)
    if trials is not None and trials < 1:
        raise TuneError(f"trials must be at least 1, got {trials}")
    if batch < 1:
        raise TuneError(f"batch must be at least 1, got {batch}")
    it = model if isinstance(model, Interpreter) else Interpreter(model)
    it.allocate_tensors()
    found = layers(it)
    if not found:
        raise TuneError("the model has no layer a template covers (int8 CONV_2D with a 1x1 filter, stride 1, no "
                        "padding)")
    shapes: dict[str, tuple[int, Any, Any, list[int]]] = {}
    for op, t, shape in found:
        shapes.setdefault(shape.key, (op, t, shape, []))[3].append(op)
    out_file = None
    if log is not None:
        Path(log).parent.mkdir(parents=True, exist_ok=True)
        out_file = open(log, "w")  # noqa: SIM115 - closed below; records are appended as they are measured
    cost = _CostModel(seed)
    # measured (features, log instructions/MAC) per template: each template has its own features
    histories: dict[str, list[tuple[list[float], float]]] = {}
    records: list[dict[str, Any]] = []
    summary: list[dict[str, Any]] = []
    searched = False  # whether any shape's space was larger than the budget (else every search was exhaustive)
    try:
        total = sum(min(len(t.space(s)), trials or len(t.space(s))) for _, t, s, _ in shapes.values())
        with progress.bar(f"tuning on {name}", total) as bar:
            for key, (op, t, shape, ops) in shapes.items():
                space = t.space(shape)
                history = histories.setdefault(t.NAME, [])
                budget = len(space) if trials is None else min(trials, len(space))
                exhaustive = budget == len(space)
                searched |= not exhaustive
                left = list(range(len(space)))
                base: int | None = None
                best: dict[str, Any] | None = None
                while budget > 0 and left:
                    feats = [t.features(shape, space[i]) for i in left]
                    ranked = [left[i] for i in (range(len(left)) if exhaustive else cost.rank(history, feats))]
                    pick = ranked[:min(batch, budget)]
                    if not exhaustive and len(history) >= 4 and len(pick) > 1 and len(ranked) > len(pick):
                        pick[-1] = random.Random(seed + len(records)).choice(ranked[len(pick):])  # keep exploring
                    configs = [space[i] for i in pick]
                    results, (base_n, base_ok) = measure(it, op, t, shape, configs, name, seed)
                    if not base_ok:
                        raise TuneError(f"the generic kernel's output differs from the interpreter on operator {op}: "
                                        "the device setup is broken, not the template")
                    base = base_n
                    for cfg, (n, ok) in zip(configs, results):
                        rec = {"target": name, "op": t.OP, "template": t.NAME, "version": t.VERSION, "key": key,
                               "config": cfg, "instructions": n, "instructions_per_mac": n / shape.macs,
                               "baseline_instructions": base, "verified": ok, "layers": ops}
                        records.append(rec)
                        if out_file is not None:
                            out_file.write(json.dumps(rec, sort_keys=True) + "\n")
                            out_file.flush()
                        if ok:
                            history.append((t.features(shape, cfg), float(np.log(n / shape.macs))))
                            if best is None or n < best["instructions"]:
                                best = rec
                    left = [i for i in left if i not in pick]
                    budget -= len(pick)
                    bar.update(len(pick))
                summary.append({"key": key, "layers": ops, "macs": shape.macs, "baseline_instructions": base,
                                "best_instructions": best["instructions"] if best else None,
                                "best_config": best["config"] if best else None,
                                "measured": sum(1 for r in records if r["key"] == key),
                                "failed": sum(1 for r in records if r["key"] == key and not r["verified"])})
    finally:
        if out_file is not None:
            out_file.close()
    return {"target": name, "search": cost.kind if searched else "exhaustive", "layers": summary,
            "records": records, "log": str(log) if log is not None else None}
