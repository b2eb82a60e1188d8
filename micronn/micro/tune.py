"""Autotuning of generated kernels on a device (the AutoTVM loop of μTVM, on micronn's sessions).

For each layer of a model that a schedule template covers (``micronn.micro.templates``), one per distinct shape
key: enumerate the template's config space, generate candidates in batches (a translation unit per config, as
apply-best compiles them, and one module per batch), run each on the device over the layer's own task words with a
random input, count its instructions, and check its output bytes against micronn's interpreter; a wrong, crashing
or uncompilable candidate is recorded with its error and never chosen. Every measurement is a record of the
tuning log (JSON lines); ``templates.apply`` / ``run_model(..., tuning_log=...)`` use the best verified one per
shape.

The search runs in rounds: each shape still searching proposes one batch, the round's batches are measured
(split over the workers: a local process pool, or Ray tasks), and the records are written in proposal order, so a
run gives the same records whatever the number of workers. What a shape proposes comes from its strategy:

* ``grid``: the space in its order; ``random``: a permutation seeded by the seed and the shape key;
* ``xgb`` (default): the configs a cost model (gradient-boosted trees, xgboost; fitted to every measurement so
  far of the template, shapes pooled, on the knobs and the shape) predicts fastest, one slot kept for a random one;
* ``anneal``: simulated annealing over the knob space (neighbours differ in one knob), its energy the cost model's
  prediction; the batch is the best unmeasured configs the chains visited (AutoTVM's model-based tuner).

Both model-guided strategies sample at random until the template has four verified measurements; a shape whose
whole space fits the budget (and no early stopping) is measured in grid order. ``early_stop=N`` ends a shape's
search after N trials without a new best. The log is append-only and resumable: the configs it already holds for
the same target, template, version and shape are not measured again, but count toward the budget and seed the
cost model and the best.

Instruction counts exist only on emulated devices (Unicorn): the host device runs natively and counts nothing, and
QEMU counts no instructions either, so tuning refuses both.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import importlib
import json
import math
import multiprocessing
import os
import random
import time
import warnings
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from micronn import __version__, progress
from micronn.errors import MicronnError
from micronn.interpreter import Interpreter
from micronn.ir import Model
from micronn.micro import lower, templates
from micronn.micro.device import DeviceFault
from micronn.micro.runtime import DeviceModel
from micronn.micro.session import Session
from micronn.micro.target import get_target
from micronn.micro.toolchain import ToolchainError
from micronn.tflite.reader import Source

BATCH = 8  # candidates a shape proposes per round (compiled and measured together)
STRATEGIES = ("xgb", "random", "grid", "anneal")
MIN_HISTORY = 4  # verified measurements of a template before its cost model guides the search
LOG_FIELDS = ("target", "template", "key", "config", "instructions", "verified")


class TuneError(MicronnError):
    """Tuning cannot proceed: a device without instruction counts, nothing to tune, a bad argument."""


class TuningLogWarning(UserWarning):
    """A tuning log needed repair: its last line was cut short (a killed run) and was dropped."""


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


# ---- measurement -------------------------------------------------------------------------------------------------

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
        # further activation inputs (ADD's, MUL's second operand) random too, written after the poison as well
        self.more: list[tuple[int, bytes]] = []
        for t in dict.fromkeys(node.op.inputs[1:]):
            tensor = interp.model.main.tensors[t] if t >= 0 else None
            if t == self.in_t or tensor is None or tensor.is_constant or tensor.is_variable:
                continue
            v = views[t]
            if v.dtype.kind not in "iu":
                continue
            info = np.iinfo(v.dtype)
            v[...] = rng.integers(max(info.min, -128), min(info.max, 127) + 1, v.shape)
            self.more.append((self.dm.resolve(lower.TensorRef(0, t)), v.tobytes()))
        # variable inputs (SVDF's state) random too, the same bytes on the device, restored before every run
        for t in node.op.inputs:
            if t >= 0 and interp.model.main.tensors[t].is_variable:
                v = views[t]
                info = np.iinfo(v.dtype) if v.dtype.kind in "iu" else None
                v[...] = rng.integers(info.min, info.max + 1, v.shape) if info else rng.standard_normal(v.shape)
                self.sess.write(self.dm.resolve(lower.TensorRef(0, t)), v.tobytes())
        self.arena0 = self.sess.read(self.dm.arena, self.dm.arena_size)
        interp._kernels[op].invoke(node)
        self.want = views[self.out_t].copy()
        arena[...] = before

    def measure(self, fn: int, name: str) -> dict[str, Any]:
        """Instructions, estimated cycles and verdict of kernel ``fn`` on the layer (a device fault propagates)."""
        n = self.want.nbytes
        self.sess.write(self.dm.arena, self.arena0)  # the state a previous run moved on
        self.sess.write(self.out_addr, bytes([0x5A]) * n)  # poison: every output byte must be written
        self.sess.write(self.in_addr, self.x.tobytes())  # after the poison: the output may lie over the input
        for addr, data in self.more:
            self.sess.write(addr, data)
        self.sess.enqueue(fn, self.args, name)
        self.sess.sync()
        cost = self.sess.last_profile[0]
        got = np.frombuffer(self.sess.read(self.out_addr, n), self.want.dtype).reshape(self.want.shape)
        ok = bool(np.array_equal(got, self.want))
        return {"instructions": cost.instructions, "cycles": cost.cycles, "verified": ok,
                "error": None if ok else "output differs from the interpreter"}

    def run(self, fn: int, name: str) -> tuple[int | None, bool]:
        """(instructions, output matches) of kernel ``fn`` on the layer."""
        r = self.measure(fn, name)
        return r["instructions"], r["verified"]

    def close(self) -> None:
        self.sess.close()


def _measure_batch(interp: Interpreter, op: int, template: Any, shape: Any, configs: list[dict[str, int]],
                   target: str, seed: int, baseline: bool = True) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """One result per config (instructions, cycles, verified, error) and the generic kernel's, on a fresh session
    (modules are never unloaded, so a session per batch keeps the code section from filling). Each config is its
    own translation unit, as apply-best compiles it: a count then does not depend on which configs share a batch
    (the compiler inlines a helper with one caller, not one with several), so any split of the work over workers
    counts the same, and the toolchain's object cache serves a config measured before. A candidate that faults
    the device or does not compile is an error; the rest of the batch goes on (after a fault, on a new session).
    ``baseline``: also run the generic kernel (else None in its place)."""
    names, paths = [], []
    for config in configs:
        name, text = template.generate(shape, config)
        names.append(name)
        paths.append(templates.write_source(name, text))
    bench = _Bench(interp, op, target, seed)
    try:
        bad = _compile(bench.sess, paths)
        paths = [p for k, p in enumerate(paths) if k not in bad]
        mod = bench.sess.load_module(paths, [lower.include_dir()]) if paths else None
        base = bench.measure(bench.fn, bench.symbol) if baseline else None
        out: list[dict[str, Any]] = []
        for k, n in enumerate(names):
            if k in bad:
                out.append({"instructions": None, "cycles": None, "verified": False, "error": bad[k]})
                continue
            try:
                out.append(bench.measure(mod[n].addr, n))
            except DeviceFault as e:  # the session rebooted: measure the rest on a fresh one
                out.append({"instructions": None, "cycles": None, "verified": False,
                            "error": " ".join(str(e).split(" [")[0].split())})  # the fault, not the registers
                bench.close()
                bench = _Bench(interp, op, target, seed)
                mod = bench.sess.load_module(paths, [lower.include_dir()])
        return out, base
    finally:
        bench.close()


def _compile(sess: Session, paths: list[Path]) -> dict[int, str]:
    """Which of ``paths`` do not compile (their index, and the compiler's complaint, shortened). All of them are
    compiled at once first (each is cached); only when that fails, one by one, each failure tried once more (a
    compiler that crashed under load, rather than refused the code, may well not crash again)."""
    if sess.target.native:  # the host builds one shared object in load_module
        return {}
    inc = [lower.include_dir()]
    try:
        sess.toolchain.compile(paths, inc)
        return {}
    except ToolchainError:
        pass
    bad = {}
    for k, p in enumerate(paths):
        for attempt in range(2):
            try:
                sess.toolchain.compile([p], inc)
                break
            except ToolchainError as e:
                if attempt:
                    bad[k] = "compile error: " + " ".join(str(e).split())[:400]
    return bad


def measure(interp: Interpreter, op: int, template: Any, shape: Any, configs: list[dict[str, int]], target: str,
            seed: int) -> tuple[list[tuple[int | None, bool]], tuple[int | None, bool]]:
    """Instructions and verdict of each config, and of the generic kernel, on a fresh session."""
    out, base = _measure_batch(interp, op, template, shape, configs, target, seed)
    assert base is not None
    return [(r["instructions"], r["verified"]) for r in out], (base["instructions"], base["verified"])


_WORKER_MODELS: dict[str, Interpreter] = {}  # a worker process's interpreters, by the model bytes' digest


def _measure_task(key: str, data: bytes, op: int, template: str, shape: Any, configs: list[dict[str, int]],
                  target: str, seed: int, baseline: bool) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The body of a pool or Ray task: the worker builds (and keeps) its own interpreter and sessions, so nothing
    but the model's bytes and plain values crosses the process boundary."""
    it = _WORKER_MODELS.get(key)
    if it is None:
        it = Interpreter(data)
        it.allocate_tensors()
        while _WORKER_MODELS:  # one model at a time per worker
            _WORKER_MODELS.popitem()
        _WORKER_MODELS[key] = it
    return _measure_batch(it, op, importlib.import_module(template), shape, configs, target, seed, baseline)


def _model_bytes(model: Model | Source | Interpreter) -> bytes:
    """The model as .tflite bytes for worker processes (which read it themselves)."""
    if isinstance(model, (bytes, bytearray, memoryview)):
        return bytes(model)
    if isinstance(model, (str, os.PathLike)):
        return Path(model).read_bytes()
    from micronn.tflite import writer

    return writer.write(model.model if isinstance(model, Interpreter) else model)


class _Measurer:
    """Measures a round's batches: in this process (one worker), in a local process pool, or as Ray tasks."""

    def __init__(self, it: Interpreter, model: Model | Source | Interpreter, target: str, seed: int,
                 jobs: int | None, ray_address: str | bool | None):
        self.it, self.target, self.seed = it, target, seed
        self.ray = None
        if jobs != 1 or (ray_address is not None and ray_address is not False):
            from micronn.cluster import ray_session

            self.ray = ray_session(ray_address) if ray_address is not False else None
        self.pool: concurrent.futures.ProcessPoolExecutor | None = None
        if self.ray is not None:
            self.workers = jobs or max(1, int(self.ray.cluster_resources().get("CPU", 1)))
            self._task = self.ray.remote(max_retries=0, num_cpus=1)(_measure_task)
        else:
            self.workers = jobs or os.cpu_count() or 1
        self.data = self.key = self.ref = None
        if self.ray is not None or self.workers > 1:
            self.data = _model_bytes(model)
            self.key = hashlib.sha1(self.data).hexdigest()
            self.ref = self.ray.put(self.data) if self.ray is not None else None
        if self.ray is None and self.workers > 1:
            self.pool = concurrent.futures.ProcessPoolExecutor(self.workers, multiprocessing.get_context("spawn"))

    @property
    def kind(self) -> str:
        return "ray" if self.ray is not None else "pool" if self.pool is not None else "in-process"

    def run(self, jobs: list[tuple[int, Any, Any, list[dict[str, int]], bool]],
            done: Callable[[int], None]) -> Iterator[tuple[list[dict[str, Any]], dict[str, Any] | None]]:
        """(results, generic kernel's result) of each (op, template, shape, configs, baseline), in order, each as
        soon as it and those before it are measured; ``done(n)`` as each is yielded."""
        if self.ray is None and self.pool is None:
            for op, t, shape, configs, baseline in jobs:
                got = _measure_batch(self.it, op, t, shape, configs, self.target, self.seed, baseline)
                done(len(configs))
                yield got
            return
        args = [(self.key, self.ref if self.ray is not None else self.data, op, t.__name__, shape, configs,
                 self.target, self.seed, baseline) for op, t, shape, configs, baseline in jobs]
        if self.ray is not None:
            futures = [self._task.remote(*a) for a in args]
            for f, (_, _, _, configs, _) in zip(futures, jobs):
                try:
                    got = self.ray.get(f)
                except self.ray.exceptions.RayTaskError as e:
                    cause = getattr(e, "cause", None)
                    if isinstance(cause, MicronnError):
                        raise cause from None
                    raise
                done(len(configs))
                yield got
            return
        try:
            futures = [self.pool.submit(_measure_task, *a) for a in args]
            for f, (_, _, _, configs, _) in zip(futures, jobs):
                got = f.result()
                done(len(configs))
                yield got
        except concurrent.futures.process.BrokenProcessPool as e:
            raise TuneError("a measuring worker process died. Workers are started afresh (spawn), so a script that "
                            "tunes with jobs other than 1 must keep its own work under if __name__ == '__main__':; "
                            "or pass jobs=1") from e

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)


def _split(items: list[int], pieces: int) -> list[list[int]]:
    """``items`` in ``pieces`` runs of nearly equal length, in order."""
    pieces = max(1, min(pieces, len(items)))
    size, extra = divmod(len(items), pieces)
    out, at = [], 0
    for i in range(pieces):
        n = size + (i < extra)
        out.append(items[at:at + n])
        at += n
    return out


# ---- the tuning log ----------------------------------------------------------------------------------------------

def _config_id(config: dict[str, int]) -> str:
    return json.dumps(config, sort_keys=True)


def read_log(path: str | os.PathLike, *, repair: bool = False) -> list[dict[str, Any]]:
    """The records of a JSON-lines tuning log that ``tune_model`` appends to (none if it does not exist). A last
    line cut short (a run killed mid-write) is dropped with a warning, and with ``repair`` cut from the file so that
    appending goes on after the last whole record; any other malformed line is a TuningLogError."""
    p = Path(path)
    try:
        blob = p.read_bytes()
    except FileNotFoundError:
        return []
    except OSError as e:
        raise templates.TuningLogError(f"cannot read tuning log {p}: {e.strerror or e}") from e
    if blob.lstrip().startswith(b"["):
        raise templates.TuningLogError(f"tuning log {p} is a JSON list, not JSON lines: tune appends records one "
                                       "a line, so give it another file")
    records: list[dict[str, Any]] = []
    lines = blob.split(b"\n")
    last = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    at = 0  # byte offset of the current line
    for i, line in enumerate(lines):
        start, at = at, at + len(line) + 1
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            if i != last:
                raise templates.TuningLogError(f"line {i + 1} of tuning log {p} is not JSON ({e}); only a last "
                                               "line cut short by a killed run is dropped") from e
            warnings.warn(f"tuning log {p}: dropped its last line {i + 1}, cut short (a killed run?)",
                          TuningLogWarning, stacklevel=2)
            if repair:
                with open(p, "r+b") as f:
                    f.truncate(start)
            break
        if not isinstance(rec, dict) or any(k not in rec for k in LOG_FIELDS):
            raise templates.TuningLogError(f"line {i + 1} of tuning log {p} lacks some of {', '.join(LOG_FIELDS)}: "
                                           f"{line[:200].decode(errors='replace')}")
        records.append(rec)
    return records


def _open_log(path: Path) -> Any:
    """The log opened for appending, after a newline if its last record lacks one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    f = open(path, "a+b")  # noqa: SIM115 - the caller closes it
    if f.tell() > 0:
        f.seek(-1, os.SEEK_END)
        if f.read(1) != b"\n":
            f.write(b"\n")
    return f


# ---- the cost model and the search ---------------------------------------------------------------------------------

def _xgboost() -> Any:
    try:
        import xgboost
    except ImportError:
        return None
    return xgboost


class _CostModel:
    """Predicts log(instructions per MAC) of a template's configs from their features (xgboost, one thread, so
    the fit is the same on every run)."""

    def __init__(self, seed: int):
        self.xgb, self.seed = _xgboost(), seed
        self.kind = "xgboost" if self.xgb is not None else \
            "random (xgboost is not installed: pip install micronn[tune])"
        self._fits: dict[str, tuple[int, Any]] = {}  # template -> (history length, predictor)

    def predictor(self, template: str, history: list[tuple[list[float], float]]) \
            -> Callable[[np.ndarray], np.ndarray] | None:
        """A function from feature rows to predictions, or None while the history is too short to learn from."""
        if self.xgb is None or len(history) < MIN_HISTORY:
            return None
        fit = self._fits.get(template)
        if fit is None or fit[0] != len(history):
            x = np.array([h[0] for h in history], np.float32)
            y = np.array([h[1] for h in history], np.float32)
            params = {"max_depth": 4, "eta": 0.3, "seed": self.seed, "nthread": 1, "verbosity": 0}
            booster = self.xgb.train(params, self.xgb.DMatrix(x, label=y, nthread=1), num_boost_round=60)
            fit = self._fits[template] = (len(history), booster)
        booster, xgb = fit[1], self.xgb
        return lambda rows: booster.predict(xgb.DMatrix(np.asarray(rows, np.float32), nthread=1))


@dataclass
class _Shape:
    """One distinct layer shape's search: its space, what is measured, the budget left, the best so far."""

    key: str
    op: int
    template: Any
    shape: Any
    ops: list[int]
    space: list[dict[str, int]]
    strategy: str
    rng: random.Random
    budget: int  # trials left
    early_stop: int | None
    measured: set[int] = field(default_factory=set)
    best: dict[str, Any] | None = None
    since_best: int = 0  # trials since the last new best
    base: int | None = None
    checked: bool = False  # whether this run measured the generic kernel (its count may differ from the log's)
    resumed: int = 0
    records: list[dict[str, Any]] = field(default_factory=list)
    stopped_early: bool = False
    _order: list[int] | None = None
    _feats: np.ndarray | None = None
    _index: dict[tuple, int] | None = None
    _knobs: list[str] = field(default_factory=list)
    _values: dict[str, list[int]] = field(default_factory=dict)
    _neighbours: dict[int, list[int]] = field(default_factory=dict)

    @property
    def left(self) -> int:
        """How many more configs this shape will propose."""
        if self.stopped_early:
            return 0
        return max(0, min(self.budget, len(self.space) - len(self.measured)))

    def feats(self) -> np.ndarray:
        if self._feats is None:
            self._feats = np.array([self.template.features(self.shape, c) for c in self.space], np.float32)
        return self._feats

    def note(self, rec: dict[str, Any]) -> None:
        """Count one trial (measured now or found in the log) toward the budget, the best and early stopping."""
        self.budget -= 1
        n = rec["instructions"]
        if rec["verified"] and n is not None and (self.best is None or n < self.best["instructions"]):
            self.best, self.since_best = rec, 0
        else:
            self.since_best += 1
        if rec.get("baseline_instructions") is not None:
            self.base = rec["baseline_instructions"]
        if self.early_stop is not None and self.since_best >= self.early_stop and self.left > 0:
            self.stopped_early = True

    def propose(self, n: int, predict: Callable[[np.ndarray], np.ndarray] | None) -> list[int]:
        """The next ``n`` unmeasured configs (indices into the space) by the strategy."""
        if self.early_stop is not None:
            n = min(n, self.early_stop - self.since_best)
        n = min(n, self.left)
        if n <= 0:
            return []
        if self.strategy == "grid":
            return [i for i in range(len(self.space)) if i not in self.measured][:n]
        if self.strategy == "random" or predict is None:
            return self._random(n)
        if self.strategy == "xgb":
            rest = [i for i in range(len(self.space)) if i not in self.measured]
            pred = predict(self.feats()[rest])
            ranked = [rest[j] for j in sorted(range(len(rest)), key=lambda j: (float(pred[j]), rest[j]))]
            pick = ranked[:n]
        else:
            pick = self._anneal(n, predict)
            chosen = set(pick)
            ranked = pick + [i for i in range(len(self.space)) if i not in self.measured and i not in chosen]
        if len(pick) > 1 and len(ranked) > len(pick):
            pick[-1] = self.rng.choice(ranked[len(pick):])  # keep exploring outside the model's favourites
        return pick

    def _random(self, n: int) -> list[int]:
        if self._order is None:
            self._order = list(range(len(self.space)))
            self.rng.shuffle(self._order)
        return [i for i in self._order if i not in self.measured][:n]

    def _neighbours_of(self, i: int) -> list[int]:
        """Configs of the space that differ from config ``i`` in exactly one knob."""
        if self._index is None:
            self._knobs = list(self.space[0])
            self._values = {k: sorted({c[k] for c in self.space}) for k in self._knobs}
            self._index = {tuple(c[k] for k in self._knobs): j for j, c in enumerate(self.space)}
        out = self._neighbours.get(i)
        if out is None:
            here = [self.space[i][k] for k in self._knobs]
            out = []
            for pos, k in enumerate(self._knobs):
                for v in self._values[k]:
                    if v != here[pos]:
                        j = self._index.get(tuple(here[:pos] + [v] + here[pos + 1:]))
                        if j is not None:
                            out.append(j)
            self._neighbours[i] = out
        return out

    def _anneal(self, n: int, predict: Callable[[np.ndarray], np.ndarray], steps: int = 120,
                patience: int = 30) -> list[int]:
        """Simulated annealing on the predicted energy: chains start at the best measured configs and at random
        ones, step to a random neighbour (always when it is predicted no worse, else with probability
        exp(-increase / temperature), the temperature falling linearly to zero), and the ``n`` unmeasured configs
        of lowest energy they visit are the batch."""
        energy: dict[int, float] = {}

        def known(idx: list[int]) -> None:
            todo = sorted({i for i in idx if i not in energy})
            if todo:
                for i, e in zip(todo, predict(self.feats()[todo])):
                    energy[i] = float(e)

        chains = min(len(self.space), max(16, 2 * n))
        good = sorted((r for r in self.records if r["verified"] and r["instructions"] is not None),
                      key=lambda r: r["instructions"])
        ids = {_config_id(c): i for i, c in enumerate(self.space)}
        starts = [ids[_config_id(r["config"])] for r in good[:chains // 2] if _config_id(r["config"]) in ids]
        starts += [self.rng.randrange(len(self.space)) for _ in range(chains - len(starts))]
        known(starts)
        spread = float(np.std([energy[i] for i in starts])) or 0.1
        pool: dict[int, float] = {i: energy[i] for i in starts if i not in self.measured}
        quiet, floor = 0, None
        for step in range(steps):
            temp = spread * (1 - step / steps)
            moves = []
            for i in starts:
                nb = self._neighbours_of(i)
                moves.append(self.rng.choice(nb) if nb else i)
            known(moves)
            for c, (i, j) in enumerate(zip(starts, moves)):
                rise = energy[j] - energy[i]
                if rise <= 0 or (temp > 0 and self.rng.random() < math.exp(-rise / temp)):
                    starts[c] = j
                    if j not in self.measured:
                        pool[j] = energy[j]
            top = sorted(pool.items(), key=lambda kv: (kv[1], kv[0]))[:n]
            mark = tuple(i for i, _ in top)
            quiet = quiet + 1 if mark == floor else 0
            floor = mark
            if quiet >= patience and len(top) >= n:
                break
        pick = [i for i, _ in sorted(pool.items(), key=lambda kv: (kv[1], kv[0]))[:n]]
        if len(pick) < n:  # the chains saw too few unmeasured configs: fill at random
            chosen = set(pick)
            pick += [i for i in self._random(len(self.space)) if i not in chosen][:n - len(pick)]
        return pick


def _resolve_jobs(jobs: int | None) -> int | None:
    if jobs is None:
        return None
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise TuneError(f"jobs must be a whole number >= 1 (or None: one per CPU), got {jobs!r}")
    return jobs


def tune_model(model: Model | Source | Interpreter, target: str = "cortex-m4", *, trials: int | None = None,
               log: str | os.PathLike | None = None, seed: int = 0, batch: int = BATCH, search: str = "xgb",
               early_stop: int | None = None, jobs: int | None = None, ray_address: str | bool | None = None,
               only: Collection[str] | None = None) -> dict[str, Any]:
    """Tune every template-covered layer of ``model`` on ``target``: at most ``trials`` configs per distinct shape
    (None: the whole space), proposed ``batch`` at a time by ``search`` (xgb, random, grid or anneal), a shape
    stopping after ``early_stop`` trials without a new best. Appends to the tuning log ``log`` (JSON lines) as it
    goes, skipping the configs it already holds. ``jobs`` workers measure (None: one per CPU; 1: in this
    process); ``ray_address`` measures on a Ray cluster instead (an address, ``"local"``, or None to use Ray only
    if ``ray.init()`` was called; False never). Workers build the model afresh from its bytes, so an Interpreter
    passed in is measured as ``Interpreter(model)`` plans it. ``only``: tune just the layer shapes with these
    keys. Returns the new records, and per shape the generic kernel's and the best verified config's
    instructions (the log's records counted)."""
    t0 = time.perf_counter()
    name = _check_target(target)
    if search not in STRATEGIES:
        raise TuneError(f"search is one of {', '.join(STRATEGIES)}, got {search!r}")
    for what, v in (("trials", trials), ("early_stop", early_stop)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise TuneError(f"{what} must be a whole number >= 1, got {v!r}")
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise TuneError(f"batch must be a whole number >= 1, got {batch!r}")
    jobs = _resolve_jobs(jobs)
    it = model if isinstance(model, Interpreter) else Interpreter(model)
    it.allocate_tensors()
    found = layers(it)
    if only is not None:
        wanted = {only} if isinstance(only, str) else set(only)
        missing = wanted - {shape.key for _, _, shape in found}
        if missing:
            raise TuneError(f"the model has no layer of shape {', '.join(sorted(missing))}")
        found = [x for x in found if x[2].key in wanted]
    if not found:
        raise TuneError("the model has no layer a template covers (" +
                        ", ".join(sorted({t.OP for t in templates.TEMPLATES.values()})) + " in the shapes the "
                        "templates take)")
    prior = read_log(log, repair=True) if log is not None else []
    done: dict[tuple, list[dict[str, Any]]] = {}  # (template, version, key) -> the log's records for this target
    for r in prior:
        if r["target"] == name:
            done.setdefault((r["template"], r.get("version"), r["key"]), []).append(r)
    cost = _CostModel(seed)
    histories: dict[str, list[tuple[list[float], float]]] = {}  # per template: (features, log instructions/MAC)
    shapes: dict[str, _Shape] = {}
    for op, t, shape in found:
        if shape.key in shapes:
            shapes[shape.key].ops.append(op)
            continue
        space = t.space(shape)
        exhaustive = trials is None or trials >= len(space)
        strategy = "grid" if search in ("xgb", "anneal") and exhaustive and early_stop is None else search
        s = shapes[shape.key] = _Shape(shape.key, op, t, shape, [op], space, strategy,
                                       random.Random(f"{seed}:{shape.key}"), len(space) if trials is None else trials,
                                       early_stop)
        ids = {_config_id(c): i for i, c in enumerate(space)}
        history = histories.setdefault(t.NAME, [])
        for r in done.get((t.NAME, t.VERSION, shape.key), []):
            i = ids.get(_config_id(r["config"]))
            if i is None or i in s.measured:  # another space's config, or a repeat
                continue
            s.measured.add(i)
            s.resumed += 1
            s.records.append(r)
            s.note(r)
            if r["verified"] and r["instructions"] is not None:
                history.append((t.features(shape, space[i]), float(np.log(r["instructions"] / max(shape.macs, 1)))))
    guided = {s.strategy for s in shapes.values()} & {"xgb", "anneal"}
    label = {"xgb": cost.kind, "anneal": f"anneal ({cost.kind})", "random": "random", "grid": "grid"}[search] \
        if guided or search in ("random", "grid") else "exhaustive"
    measurer = _Measurer(it, model, name, seed, jobs, ray_address)
    out_file = _open_log(Path(log)) if log is not None else None
    new: list[dict[str, Any]] = []
    try:
        with progress.bar(f"tuning on {name}", sum(s.left for s in shapes.values())) as bar:
            while True:
                plans = []
                for s in shapes.values():
                    t = s.template
                    predict = cost.predictor(t.NAME, histories[t.NAME]) if s.strategy in ("xgb", "anneal") else None
                    pick = s.propose(batch, predict)
                    if pick:
                        plans.append((s, pick))
                if not plans:
                    break
                # split the round's batches so that every worker has one (the same configs, whatever the split)
                pieces = max(1, math.ceil(measurer.workers / len(plans)))
                # the generic kernel runs once per shape and run, beside its first batch
                parts = [(s, part, not s.checked and k == 0) for s, pick in plans
                         for k, part in enumerate(_split(pick, pieces))]
                jobs_ = [(s.op, s.template, s.shape, [s.space[i] for i in part], check) for s, part, check in parts]
                for (s, part, _), (results, base) in zip(parts, measurer.run(jobs_, bar.update)):
                    t, shape = s.template, s.shape
                    if base is not None:
                        if not base["verified"]:
                            raise TuneError(f"the generic kernel's output differs from the interpreter on operator "
                                            f"{s.op}: the device setup is broken, not the template")
                        s.base, s.checked = base["instructions"], True
                    for i, r in zip(part, results):
                        n = r["instructions"]
                        rec = {"target": name, "op": t.OP, "template": t.NAME, "version": t.VERSION, "key": s.key,
                               "config": s.space[i], "instructions": n,
                               "instructions_per_mac": None if n is None or not shape.macs else n / shape.macs,
                               "cycles": r["cycles"], "baseline_instructions": s.base,
                               "verified": r["verified"], "error": r["error"], "layers": s.ops,
                               "micronn_version": __version__}
                        s.measured.add(i)
                        s.records.append(rec)
                        new.append(rec)
                        s.note(rec)
                        if rec["verified"] and n is not None:
                            logged = float(np.log(n / max(shape.macs, 1)))  # per MAC (per call without MACs)
                            histories[t.NAME].append((t.features(shape, s.space[i]), logged))
                        if out_file is not None:
                            out_file.write((json.dumps(rec, sort_keys=True) + "\n").encode())
                    if out_file is not None:
                        out_file.flush()
    finally:
        measurer.close()
        if out_file is not None:
            out_file.close()
    summary = []
    for s in shapes.values():
        fresh = s.records[s.resumed:]
        summary.append({"key": s.key, "layers": s.ops, "macs": s.shape.macs, "baseline_instructions": s.base,
                        "best_instructions": s.best["instructions"] if s.best else None,
                        "best_config": s.best["config"] if s.best else None, "measured": len(fresh),
                        "resumed": s.resumed, "failed": sum(1 for r in fresh if not r["verified"]),
                        "stopped_early": s.stopped_early, "space": len(s.space)})
    return {"target": name, "search": label, "seed": seed, "measured_by": measurer.kind,
            "workers": measurer.workers, "layers": summary, "records": new,
            "log": str(log) if log is not None else None, "seconds": round(time.perf_counter() - t0, 3)}
