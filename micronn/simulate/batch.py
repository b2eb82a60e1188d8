"""Many samples through one model: ``simulate`` (outputs byte-identical to one invoke per sample), in chunks,
in-process or as Ray tasks.

Three ways to run a chunk, all exact:

* natively (``backend="native"``, and what ``"auto"`` picks when it can): the model's exported C, the kernels the
  device runs, compiled for the host (``micronn.export.NativeModel``) and called once per chunk, the loop over
  samples in C. ctypes releases the GIL during the call, so chunks run on several threads at once (``workers``),
  each thread with its own copy of the library (its own arena and state); outputs are collected in order, so
  they do not depend on the number of workers. ``tests/simulate`` checks native outputs byte for byte against the
  numpy path and the TFLM wheel;
* one invoke per sample (``Interpreter.invoke_batch``): always right, and the only way for a stream and for state
  the twin cannot split by sample (resource variables, kernels that keep their own state, loops whose trip count
  depends on the sample);
* a *twin* of the model (``micronn.lanes.twin_model``) whose activations carry ``TWIN`` samples along a sample
  axis, run with one invoke for ``TWIN`` samples. micronn's kernels already vectorize over that axis, so the
  per-invoke overhead is paid once per ``TWIN`` samples (SVDF and LSTM state as one row per sample, reset before
  each invoke). Only models whose every operator keeps samples apart qualify (:func:`twin_reason` says why a model
  does not); ``tests/simulate`` checks twin outputs byte for byte against single invokes on every bundled and test
  model that qualifies.
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import os
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from micronn import progress as _progress
from micronn.cluster import ray_session
from micronn.errors import InvokeError, MicronnError
from micronn.interpreter import Interpreter, input_chunks
from micronn.ir import Model, Operator, Subgraph
from micronn.lanes import LOOP_OPS, ROW_OPS, STATE_ROW_OPS, rows_reason, twin_model
from micronn.tflite.reader import Source, read

DEFAULT_BATCH = 256  # samples per chunk: what a Ray task carries and what is held in memory at once
TWIN = 16  # samples per invoke of the twin (the fastest on person_detect: 8 to 32 are within 5%)
BACKENDS = ("auto", "native", "numpy")

# Operators whose reference kernel refuses some run-time values (TFLM fails or aborts the invoke) while the C kernel,
# which cannot raise, writes a defined value instead: "auto" keeps such models on the numpy path, whose error names
# the sample. (A native invoke that reports a non-zero status falls back to the numpy path for that sample too.)
# (GATHER's C kernel reports a position outside its axis as a status, which reruns the sample on numpy)
_REFUSING_OPS = frozenset({"DIV", "FLOOR_DIV", "FLOOR_MOD", "RSQRT", "GATHER_ND", "EMBEDDING_LOOKUP"})
SOFTMAX_SAFE_ROW = 512  # int8 SOFTMAX refuses a row whose sum of exponentials reaches 512: shorter rows never do

def twin_reason(model: Model) -> str | None:
    """Why ``model`` cannot run as a batched twin on the numpy kernels (None: it can)."""
    return rows_reason(model, ROW_OPS | LOOP_OPS | STATE_ROW_OPS)


def native_reason(model: Model) -> str | None:
    """Why ``backend="auto"`` keeps ``model`` on the numpy path although it may have C kernels (None: it does not).

    The C kernels compute the reference's bytes wherever the reference computes at all; they differ only where
    the reference refuses a value (and names it in an ``InvokeError``). Models that can meet such values stay on
    the numpy path, so "auto" never turns an error into an output."""
    for sg in model.subgraphs:
        for op in sg.operators:
            if op.custom:
                if op.op == "SignalFilterBankSquareRoot" and not all(sg.tensors[i].is_constant for i in op.inputs[1:]):
                    return f"operator {op.index} ({op.op}) reads a computed shift, which its reference checks"
                continue
            if op.op in _REFUSING_OPS and not _safe_divisor(sg, op):
                return f"operator {op.index} ({op.op}) refuses some run-time values, which its C kernel accepts"
            if op.op == "SOFTMAX":
                x = sg.tensors[op.inputs[0]]
                if x.dtype == np.int8 and (not x.shape or x.shape[-1] >= SOFTMAX_SAFE_ROW):
                    return (f"operator {op.index} (SOFTMAX) has rows of {SOFTMAX_SAFE_ROW} or more int8 values, "
                            "which its reference can refuse")
            if any(i >= 0 and not sg.tensors[i].is_constant for i in op.inputs[1:]) and op.op in (
                    "MEAN", "SUM", "PAD", "PADV2", "STRIDED_SLICE", "RESHAPE"):
                return f"operator {op.index} ({op.op}) reads computed parameters, which its reference checks"
    return None


def _safe_divisor(sg: Subgraph, op: Operator) -> bool:
    """A division whose divisor is a constant without 0 or -1 (or a float DIV, which never refuses): no sample can
    meet a value its reference refuses."""
    if op.op not in ("DIV", "FLOOR_DIV", "FLOOR_MOD") or len(op.inputs) < 2 or op.inputs[1] < 0:
        return False
    if op.op == "DIV" and sg.tensors[op.outputs[0]].dtype.kind == "f":
        return True
    d = sg.tensors[op.inputs[1]]
    return d.is_constant and d.data is not None and not np.isin(np.asarray(d.data), (0, -1)).any()


class Engine:
    """What runs chunks of one model: the native library when the backend allows it, else a single interpreter,
    and the twin when the model allows it.

    ``backend``: ``"native"`` (raises if the model cannot be compiled for the host), ``"numpy"`` (the reference
    interpreter), or ``"auto"``: native when a host C compiler is found (``cc`` or zig's clang), every operator has
    a C kernel and :func:`native_reason` finds nothing, because it computes the same bytes tens to hundreds of
    times faster; otherwise numpy, the reference, with the reason in ``why_numpy``."""

    def __init__(self, model: Model | Source, twin: bool = True, backend: str = "auto"):
        if backend not in BACKENDS:
            raise MicronnError(f"backend is one of {', '.join(BACKENDS)}, got {backend!r}")
        self.model = model if isinstance(model, Model) else read(model)
        self.inputs = [self.model.main.tensors[t] for t in self.model.main.inputs]
        self.outputs = [self.model.main.tensors[t] for t in self.model.main.outputs]
        self.why_single = twin_reason(self.model) if twin else "the twin was turned off"
        self._stateful = any(t.is_variable for sg in self.model.subgraphs for t in sg.tensors)
        self._single: Interpreter | None = None
        self._twin: Interpreter | None = None
        self._lock = threading.RLock()  # run() holds it around run_single(), which takes it for single
        self.native: Any = None  # a NativeModel
        self.why_numpy: str | None = "the numpy backend was asked for" if backend == "numpy" else None
        if backend == "auto":
            self.why_numpy = native_reason(self.model)
        if self.why_numpy is None:
            from micronn.export.native import NativeModel  # the code generator: imported only when used

            try:
                self.native = NativeModel(self.model)
            except (MicronnError, OSError) as e:
                if backend == "native":
                    raise
                self.why_numpy = f"no native library: {str(e).splitlines()[0]}"

    @property
    def single(self) -> Interpreter:
        with self._lock:
            if self._single is None:
                self._single = Interpreter(self.model)
                self._single.allocate_tensors()
            return self._single

    @property
    def twin(self) -> Interpreter:
        if self._twin is None:
            self._twin = Interpreter(twin_model(self.model, TWIN))
            self._twin.allocate_tensors()
        return self._twin

    def run(self, chunk: list[np.ndarray], stream: bool = False, first: int = 0, native: Any = None
            ) -> list[np.ndarray]:
        """Outputs of one chunk (one array per input, ``(n, *shape)``); ``first``: the chunk's first sample's index,
        for error messages; ``native``: the NativeModel to run it on (a thread's own; default the engine's)."""
        n = len(chunk[0])
        if self.native is not None:
            xs = [np.ascontiguousarray(x, t.dtype) for x, t in zip(chunk, self.inputs)]
            outs, done, status = (native or self.native).run_chunk(xs, reset=not stream)
            if done < n:
                if not stream:  # the reference's own message, if it refuses the sample too
                    with self._lock:
                        self.run_single([x[done:done + 1] for x in chunk], first + done)
                raise InvokeError(f"sample {first + done}: the native invoke failed: "
                                  f"{(native or self.native).failure(status)}")
            return outs
        if stream or self.why_single is not None or n < TWIN // 2:  # a few samples: padding would cost more
            try:
                return self.single.invoke_batch(tuple(chunk), stream=stream)
            except InvokeError as e:
                raise InvokeError(_renumber(str(e), first)) from e
        twin = self.twin
        outs = [np.empty((n, *t.shape), t.dtype) for t in self.outputs]
        views = [twin.input(i) for i in range(len(chunk))]
        twin_views = [twin.output(i) for i in range(len(outs))]
        for s in range(0, n, TWIN):
            m = min(TWIN, n - s)
            for v, x in zip(views, chunk):  # the twin's inputs and outputs hold their samples back to back
                v = v.reshape(TWIN, -1)
                v[:m] = x[s:s + m].reshape(m, -1)
                if m < TWIN:  # a short last group: fill with a copy of its first sample (its outputs are dropped)
                    v[m:] = v[:1]
            try:
                if self._stateful:  # every row from the initial state (SVDF and LSTM state rows)
                    twin.reset()
                twin.invoke()
            except InvokeError:  # a kernel refused a value: find the sample and its own message the exact way
                part = [x[s:s + m] for x in chunk]
                self.run_single(part, first + s)
                raise
            for o, tv in zip(outs, twin_views):
                o[s:s + m] = tv.reshape(TWIN, -1)[:m].reshape((m, *o.shape[1:]))
        return outs

    def natives(self, count: int) -> list[Any]:
        """``count`` NativeModels of this engine's library (its own first), each with its own arena: one per
        thread."""
        return [self.native] + [self.native.clone() for _ in range(count - 1)]

    def run_single(self, chunk: list[np.ndarray], first: int) -> list[np.ndarray]:
        try:
            return self.single.invoke_batch(tuple(chunk))
        except InvokeError as e:
            raise InvokeError(_renumber(str(e), first)) from e


def _renumber(message: str, first: int) -> str:
    """``sample k: ...`` of a chunk as the sample's index in the whole run."""
    if first and message.startswith("sample "):
        head, _, rest = message.partition(":")
        try:
            return f"sample {int(head.split()[1]) + first}:{rest}"
        except (IndexError, ValueError):
            return message
    return message


# -- Ray ---------------------------------------------------------------------------------------------------------

_ENGINES: collections.OrderedDict[str, Engine] = collections.OrderedDict()  # a worker's engines, by model key


def _chunk_task(key: str, model: Any, twin: bool, first: int, *chunk: np.ndarray, backend: str = "auto"
                ) -> list[np.ndarray]:
    """The body of a Ray task: one chunk through the worker's cached engine for ``model``."""
    key = f"{key}/{backend}"
    engine = _ENGINES.get(key)
    if engine is None:
        engine = _ENGINES[key] = Engine(model, twin, backend)
        while len(_ENGINES) > 4:
            _ENGINES.popitem(last=False)
    return engine.run(list(chunk), first=first)


def _model_key(model: Any) -> str:
    if isinstance(model, (bytes, bytearray, memoryview)):
        return hashlib.sha1(model).hexdigest()
    return uuid.uuid4().hex  # a Model object: this run's own


def default_workers() -> int:
    """Threads for native chunks: the CPUs this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def map_chunks(model: Model | Source, chunks: Iterable[list[np.ndarray]], *, ray: Any = None, twin: bool = True,
               stream: bool = False, on_chunk: Callable[[int], None] | None = None, backend: str = "auto",
               workers: int | None = None) -> Iterator[list[np.ndarray]]:
    """Each chunk's outputs, in order: in-process (native chunks on ``workers`` threads, default
    :func:`default_workers`), or as Ray tasks (at most two per worker CPU in flight)."""
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, (int, np.integer))
                                or workers < 1):
        raise MicronnError(f"workers must be a positive number of threads, got {workers!r}")
    mod = ray_session(ray)
    if mod is None:
        engine = Engine(model, twin, backend)
        threads = workers or default_workers()
        if engine.native is not None and not stream and threads > 1:
            yield from _threaded(engine, chunks, threads, on_chunk)
            return
        first = 0
        for chunk in chunks:
            out = engine.run(chunk, stream=stream, first=first)
            first += len(chunk[0])
            if on_chunk:
                on_chunk(len(chunk[0]))
            yield out
        return
    if stream:
        raise MicronnError("stream=True carries state from each sample to the next, so the samples cannot be "
                           "split over Ray workers: run it without ray")
    if isinstance(model, (str, os.PathLike)):
        with open(model, "rb") as f:
            model = f.read()
    elif isinstance(model, (bytearray, memoryview)):
        model = bytes(model)
    if backend not in BACKENDS:
        raise MicronnError(f"backend is one of {', '.join(BACKENDS)}, got {backend!r}")
    key = _model_key(model)
    task = mod.remote(max_retries=0)(_chunk_task)
    ref = mod.put(model)
    window = max(2, 2 * int(mod.cluster_resources().get("CPU", 1)))
    pending: collections.deque[tuple[Any, int]] = collections.deque()

    def collect() -> list[np.ndarray]:
        future, n = pending.popleft()
        try:
            out = mod.get(future)
        except mod.exceptions.RayTaskError as e:
            cause = getattr(e, "cause", None)
            if isinstance(cause, MicronnError):
                raise cause from None
            raise
        if on_chunk:
            on_chunk(n)
        return out

    first = 0
    for chunk in chunks:
        pending.append((task.remote(key, ref, twin, first, *chunk, backend=backend), len(chunk[0])))
        first += len(chunk[0])
        if len(pending) >= window:
            yield collect()
    while pending:
        yield collect()


def _threaded(engine: Engine, chunks: Iterable[list[np.ndarray]], threads: int,
              on_chunk: Callable[[int], None] | None) -> Iterator[list[np.ndarray]]:
    """Native chunks on ``threads`` threads, each with its own library instance; outputs in chunk order, and the
    first failing chunk's error (in order) is the one raised, as in one thread."""
    free: collections.deque[Any] = collections.deque()
    made = 0
    lock = threading.Lock()

    def job(chunk: list[np.ndarray], first: int) -> list[np.ndarray]:
        nonlocal made
        with lock:
            if free:
                native = free.popleft()
            else:
                native = engine.native if made == 0 else engine.native.clone()
                made += 1
        try:
            return engine.run(chunk, first=first, native=native)
        finally:
            with lock:
                free.append(native)

    pending: collections.deque[tuple[Future, int]] = collections.deque()

    def collect() -> list[np.ndarray]:
        future, n = pending.popleft()
        out = future.result()
        if on_chunk:
            on_chunk(n)
        return out

    with ThreadPoolExecutor(threads, thread_name_prefix="micronn-native") as pool:
        try:
            first = 0
            for chunk in chunks:
                pending.append((pool.submit(job, chunk, first), len(chunk[0])))
                first += len(chunk[0])
                if len(pending) >= 2 * threads:
                    yield collect()
            while pending:
                yield collect()
        finally:
            for future, _ in pending:
                future.cancel()


def simulate(model: Model | Source, inputs: Any, *, batch: int = DEFAULT_BATCH, stream: bool = False,
             ray: Any = None, twin: bool = True, progress: bool = False, backend: str = "auto",
             workers: int | None = None) -> list[np.ndarray]:
    """Run every sample of ``inputs``; one array per model output, its leading axis the samples.

    Byte-identical to one ``invoke()`` per sample on a fresh interpreter, each sample from the initial state
    (``stream=True``: the samples are one stream and state carries over, in order). ``inputs`` takes the forms of
    ``Interpreter.invoke_batch``; an iterable is read ``batch`` samples at a time, so only a chunk of inputs is
    held at once. ``ray`` sends the chunks to a Ray cluster as tasks (see :func:`ray_session`), with the same
    outputs; ``twin=False`` forces one invoke per sample (the twin is explained in this module's docstring).
    ``backend``: ``"auto"`` (native C when the model compiles for the host, else numpy; see :class:`Engine`),
    ``"native"`` or ``"numpy"``; ``workers``: threads for native chunks (default: this process's CPUs). Every
    backend and worker count gives the same bytes."""
    if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
        raise MicronnError(f"batch must be a positive number of samples, got {batch!r}")
    m = model if isinstance(model, Model) else read(model)
    tensors = [m.main.tensors[t] for t in m.main.inputs]
    total = len(inputs[0]) if isinstance(inputs, tuple) and inputs and isinstance(inputs[0], np.ndarray) else \
        len(inputs) if isinstance(inputs, np.ndarray) else None
    # Ray workers read the file's bytes themselves; in-process, the model read here serves
    src: Any = model if ray_session(ray) is not None else m
    parts: list[list[np.ndarray]] = []
    with contextlib.ExitStack() as stack:
        bar = stack.enter_context(_progress.bar("simulate", total)) if progress else None
        for out in map_chunks(src, input_chunks(inputs, tensors, batch), ray=ray, twin=twin, stream=stream,
                              on_chunk=bar.update if bar is not None else None, backend=backend, workers=workers):
            parts.append(out)
    outs = [m.main.tensors[t] for t in m.main.outputs]
    if not parts:
        return [np.zeros((0, *t.shape), t.dtype) for t in outs]
    return [np.concatenate([p[j] for p in parts]) for j in range(len(outs))]
