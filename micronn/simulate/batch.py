"""Many samples through one model: ``simulate`` (outputs byte-identical to one invoke per sample), in chunks,
in-process or as Ray tasks.

Two ways to run a chunk, both exact:

* one invoke per sample (``Interpreter.invoke_batch``): always right, and the only way for models with state
  (variable tensors, resource variables, kernels that keep state, control flow), whose samples must not mix;
* a *twin* of the model whose activations carry ``TWIN`` samples along their leading axis, run with one invoke for
  ``TWIN`` samples. micronn's kernels already vectorize over that axis, so the per-invoke overhead is paid once per
  ``TWIN`` samples. Only models whose every operator keeps samples apart along axis 0 qualify (:func:`twin_reason`
  says why a model does not); ``tests/simulate`` checks twin outputs byte for byte against single invokes on every
  bundled and test model that qualifies.
"""

from __future__ import annotations

import collections
import contextlib
import copy
import dataclasses
import hashlib
import logging
import os
import socket
import sys
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from micronn import progress as _progress
from micronn.errors import InvokeError, MicronnError
from micronn.interpreter import Interpreter, input_chunks
from micronn.ir import Model, Operator, Subgraph
from micronn.tflite.reader import Source, read

DEFAULT_BATCH = 256  # samples per chunk: what a Ray task carries and what is held in memory at once
TWIN = 16  # samples per invoke of the twin (the fastest on person_detect: 8 to 32 are within 5%)

# Operators that keep samples apart along axis 0 when every activation's leading dimension is the batch, with the
# conditions under which micronn's kernels also compute them sample by sample (checked in _op_reason).
_ROW_OPS = frozenset({"CONV_2D", "DEPTHWISE_CONV_2D", "AVERAGE_POOL_2D", "MAX_POOL_2D", "RESHAPE", "SOFTMAX",
                      "FULLY_CONNECTED", "ADD", "MEAN", "PAD", "CONCATENATION", "RELU", "RELU6", "LOGISTIC",
                      "QUANTIZE", "DEQUANTIZE"})
_CONSTANT_INPUTS = {  # inputs that must be constants of the model (weights, paddings, axes)
    "CONV_2D": (1, 2), "DEPTHWISE_CONV_2D": (1, 2), "FULLY_CONNECTED": (1, 2), "MEAN": (1,), "PAD": (1, 2),
    "RESHAPE": (1,),
}


def twin_reason(model: Model) -> str | None:
    """Why ``model`` cannot run as a batched twin (None: it can)."""
    if len(model.subgraphs) != 1:
        return "it has several subgraphs (control flow)"
    if "OfflineMemoryAllocation" in model.metadata:
        return "it carries an offline memory plan, whose offsets hold for one sample only"
    sg = model.main
    for t in sg.tensors:
        if t.is_variable:
            return f"tensor {t.index} ({t.name!r}) is a variable: samples would share state"
        if not t.is_constant and (len(t.shape) < 1 or t.shape[0] != 1):
            return f"tensor {t.index} ({t.name!r}) of shape {list(t.shape)} has no leading batch dimension of 1"
    for op in sg.operators:
        why = _op_reason(sg, op)
        if why:
            return f"operator {op.index} ({op.op}) {why}"
    return None


def _op_reason(sg: Subgraph, op: Operator) -> str | None:
    if op.custom or op.op not in _ROW_OPS:
        return "is not known to keep samples apart"
    ins = [sg.tensors[i] if i >= 0 else None for i in op.inputs]
    for k in _CONSTANT_INPUTS.get(op.op, ()):
        if k < len(ins) and ins[k] is not None and not ins[k].is_constant:
            return f"reads a computed input {k} (weights, paddings and axes must be constants)"
    if op.op not in _CONSTANT_INPUTS and any(t is not None and t.is_constant for t in ins):
        return "reads a constant operand, which would broadcast across samples"
    if op.op == "PAD" and np.asarray(ins[1].data).reshape(-1, 2)[0].any():
        return "pads the batch axis"
    if op.op == "MEAN" and 0 in {int(a) % len(ins[0].shape) for a in np.asarray(ins[1].data).ravel()}:
        return "reduces the batch axis"
    if op.op == "CONCATENATION" and op.options.axis % len(sg.tensors[op.outputs[0]].shape) == 0:
        return "concatenates along the batch axis"
    if op.op == "SOFTMAX" and len(ins[0].shape) < 2:
        return "normalizes along the batch axis"
    if op.op == "FULLY_CONNECTED" and sg.tensors[op.outputs[0]].shape[0] != 1:
        return "has no batch of 1 in its output"
    return None


def twin_model(model: Model, n: int) -> Model:
    """``model`` with every activation's leading dimension ``n``: ``n`` samples per invoke. Constants are shared,
    not copied."""
    sg = model.main
    tensors = [t if t.is_constant else dataclasses.replace(t, shape=(n, *t.shape[1:]), shape_signature=None)
               for t in sg.tensors]
    twin = copy.copy(model)
    twin.subgraphs = [dataclasses.replace(sg, tensors=tensors)]
    return twin


class Engine:
    """What runs chunks of one model: a single interpreter, and the twin when the model allows it."""

    def __init__(self, model: Model | Source, twin: bool = True):
        self.model = model if isinstance(model, Model) else read(model)
        self.single = Interpreter(self.model)
        self.single.allocate_tensors()
        self.inputs = [self.model.main.tensors[t] for t in self.model.main.inputs]
        self.outputs = [self.model.main.tensors[t] for t in self.model.main.outputs]
        self.why_single = twin_reason(self.model) if twin else "the twin was turned off"
        self._twin: Interpreter | None = None

    @property
    def twin(self) -> Interpreter:
        if self._twin is None:
            self._twin = Interpreter(twin_model(self.model, TWIN))
            self._twin.allocate_tensors()
        return self._twin

    def run(self, chunk: list[np.ndarray], stream: bool = False, first: int = 0) -> list[np.ndarray]:
        """Outputs of one chunk (one array per input, ``(n, *shape)``); ``first``: the chunk's first sample's index,
        for error messages."""
        n = len(chunk[0])
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
            for v, x in zip(views, chunk):
                v[:m] = x[s:s + m].reshape((m, *v.shape[1:]))
                if m < TWIN:  # a short last group: fill with a copy of its first sample (its outputs are dropped)
                    v[m:] = v[:1]
            try:
                twin.invoke()
            except InvokeError:  # a kernel refused a value: find the sample and its own message the exact way
                part = [x[s:s + m] for x in chunk]
                self.run_single(part, first + s)
                raise
            for o, tv in zip(outs, twin_views):
                o[s:s + m] = tv[:m].reshape((m, *o.shape[1:]))
        return outs

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


def _chunk_task(key: str, model: Any, twin: bool, first: int, *chunk: np.ndarray) -> list[np.ndarray]:
    """The body of a Ray task: one chunk through the worker's cached engine for ``model``."""
    engine = _ENGINES.get(key)
    if engine is None:
        engine = _ENGINES[key] = Engine(model, twin)
        while len(_ENGINES) > 4:
            _ENGINES.popitem(last=False)
    return engine.run(list(chunk), first=first)


def ray_session(ray: Any) -> Any:
    """The ``ray`` module to send tasks with, or None for in-process runs.

    ``ray``: None uses Ray only if this process already called ``ray.init()``; False never; ``"local"`` starts a
    Ray on this machine (if none is running here yet); any other string is an address for ``ray.init`` (a cluster's
    ``host:port``, ``ray://host:10001`` or ``"auto"``). A Ray micronn starts stays up for later calls
    (``ray.shutdown()`` ends it)."""
    if ray is False:
        return None
    if ray is None:
        mod = sys.modules.get("ray")
        return mod if mod is not None and getattr(mod, "is_initialized", lambda: False)() else None
    if not isinstance(ray, str) or not ray:
        raise MicronnError(f"ray is an address, 'local', None or False, got {ray!r}")
    running = sys.modules.get("ray")
    if running is None or not running.is_initialized():
        _reachable(ray)  # before importing Ray, so an unreachable address reads the same with or without it
    try:
        import ray as mod
    except ImportError as e:
        raise MicronnError("running on Ray needs the ray package: pip install 'micronn[eval]'") from e
    if not mod.is_initialized():
        try:
            mod.init(address=None if ray == "local" else ray, include_dashboard=False, logging_level=logging.WARNING,
                     **({"num_cpus": os.cpu_count()} if ray == "local" else {}))
        except (ConnectionError, RuntimeError, ValueError) as e:
            raise MicronnError(f"cannot reach a Ray cluster at {ray!r}: {e}") from e
    return mod


def _reachable(address: str) -> None:
    """Refuse a ``host:port`` (or ``ray://host:port``) nothing answers on at once: Ray itself retries for minutes."""
    hostport = address.removeprefix("ray://")
    host, sep, port = hostport.rpartition(":")
    if address in ("local", "auto") or not sep or not port.isdigit():
        return
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as e:
        raise MicronnError(f"cannot reach a Ray cluster at {address!r}: {e.strerror or e}") from e


def _model_key(model: Any) -> str:
    if isinstance(model, (bytes, bytearray, memoryview)):
        return hashlib.sha1(model).hexdigest()
    return uuid.uuid4().hex  # a Model object: this run's own


def map_chunks(model: Model | Source, chunks: Iterable[list[np.ndarray]], *, ray: Any = None, twin: bool = True,
               stream: bool = False, on_chunk: Callable[[int], None] | None = None) -> Iterator[list[np.ndarray]]:
    """Each chunk's outputs, in order: in-process, or as Ray tasks (at most two per worker CPU in flight)."""
    mod = ray_session(ray)
    if mod is None:
        engine = Engine(model, twin)
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
        pending.append((task.remote(key, ref, twin, first, *chunk), len(chunk[0])))
        first += len(chunk[0])
        if len(pending) >= window:
            yield collect()
    while pending:
        yield collect()


def simulate(model: Model | Source, inputs: Any, *, batch: int = DEFAULT_BATCH, stream: bool = False,
             ray: Any = None, twin: bool = True, progress: bool = False) -> list[np.ndarray]:
    """Run every sample of ``inputs``; one array per model output, its leading axis the samples.

    Byte-identical to one ``invoke()`` per sample on a fresh interpreter, each sample from the initial state
    (``stream=True``: the samples are one stream and state carries over, in order). ``inputs`` takes the forms of
    ``Interpreter.invoke_batch``; an iterable is read ``batch`` samples at a time, so only a chunk of inputs is
    held at once. ``ray`` sends the chunks to a Ray cluster as tasks (see :func:`ray_session`), with the same
    outputs; ``twin=False`` forces one invoke per sample (the twin is explained in this module's docstring)."""
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
                              on_chunk=bar.update if bar is not None else None):
            parts.append(out)
    outs = [m.main.tensors[t] for t in m.main.outputs]
    if not parts:
        return [np.zeros((0, *t.shape), t.dtype) for t in outs]
    return [np.concatenate([p[j] for p in parts]) for j in range(len(outs))]
