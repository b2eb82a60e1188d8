"""Build small models and check micronn against the real TFLM, byte for byte.

These helpers are public: they are what micronn's own tests use, and what a user runs to convince
themselves that micronn computes exactly what TensorFlow Lite Micro computes on their model.
The reference is the ``tflite-micro`` PyPI wheel (TFLM's reference kernels built for the host).

Build a one-operator model::

    from micronn.testing import T, op_model, assert_same_as_tflm
    model = op_model("ADD", [T((1, 8), "int8", 0.5, -3), T((1, 8), "int8", 0.25, 1)], [T((1, 8), "int8", 0.7, 0)])
    assert_same_as_tflm(model)

``T(shape, dtype, scale, zero_point, ...)`` describes a tensor: a sequence ``scale`` makes it per-channel along
``axis``, ``data`` makes it a constant, ``variable=True`` a variable tensor; dtype ``"int4"`` makes packed int4
weights from one value per element. ``None`` in an operator's inputs marks an omitted optional input. Small
multi-operator graphs are described with :class:`Graph` and :class:`Op` over named tensors and built with
:func:`graph_model`.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from micronn import ir
from micronn.tflite import schema
from micronn.tflite.writer import write

__all__ = [
    "Graph",
    "Op",
    "T",
    "TflmError",
    "assert_identical",
    "assert_same_as_tflm",
    "graph_ir",
    "graph_model",
    "measured_tflm_footprint",
    "op_model",
    "random_inputs",
    "run_micronn",
    "run_tflm",
    "tflm_arena",
    "tflm_min_arena",
]

# Arena for the TFLM reference when the caller gives none: generous, TFLM's outputs do not depend on it.
DEFAULT_TFLM_ARENA = 8 << 20
# The wheel crashes the process (segfault) instead of failing cleanly when the arena cannot even hold its
# allocator (below about 464 bytes); no model fits in so little, so smaller arenas are refused up front.
MIN_TFLM_ARENA = 512


# ---- describing models ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class T:
    """A tensor of a test model.

    ``scale``/``zero_point`` quantize it (a sequence of scales is per-channel along ``axis``; ``zero_point``
    defaults to zeros and a single value is repeated per channel). ``data`` makes it a constant (a scalar
    is broadcast to ``shape``); with ``variable=True`` it is a variable tensor whose ``data``, if any, is its
    initial value. ``name`` overrides the generated name.
    """

    shape: Sequence[int]
    dtype: DTypeLike
    scale: float | Sequence[float] | None = None
    zero_point: int | Sequence[int] | None = None
    axis: int = 0
    data: ArrayLike | None = None
    variable: bool = False
    name: str | None = None
    shape_signature: Sequence[int] | None = None

    @property
    def is_constant(self) -> bool:
        return self.data is not None and not self.variable

    def quantization(self) -> ir.Quantization | None:
        if self.scale is None:
            if self.zero_point is not None:
                raise ValueError("a zero_point needs a scale")
            return None
        scale = np.atleast_1d(np.asarray(self.scale, np.float32)).reshape(-1)
        zp = np.zeros(len(scale), np.int64) if self.zero_point is None else np.asarray(self.zero_point, np.int64)
        zp = np.broadcast_to(np.atleast_1d(zp).reshape(-1), scale.shape).copy()
        return ir.Quantization(scale, zp, self.axis)

    def tensor(self, name: str, index: int) -> ir.Tensor:
        """The IR tensor this spec describes."""
        dtype = ir.INT4 if self.dtype == "int4" else np.dtype(self.dtype)
        shape = tuple(int(d) for d in self.shape)
        data = None
        if self.data is not None:
            arr = np.asarray(self.data, np.int8).view(ir.INT4) if dtype == ir.INT4 else np.asarray(self.data, dtype)
            size = int(np.prod(shape, dtype=np.int64))
            arr = arr.reshape(shape) if arr.size == size else np.broadcast_to(arr, shape)
            data = np.ascontiguousarray(arr)
            data.flags.writeable = False
        signature = tuple(int(d) for d in self.shape_signature) if self.shape_signature is not None else None
        return ir.Tensor(self.name or name, shape, dtype, self.quantization(), data, self.variable, signature,
                         index=index)


@dataclass(frozen=True)
class Op:
    """An operator of a :class:`Graph`, over tensor names (``None`` for an omitted optional input).

    ``op`` is a builtin name (``"CONV_2D"``) or, when it is not one, a custom op's code. ``options`` is a
    typed options object or a dict of its fields; ``None`` gives the schema's defaults.
    """

    op: str
    inputs: Sequence[str | None]
    outputs: Sequence[str]
    options: Any = None
    version: int = 1
    custom_options: bytes | None = None
    intermediates: Sequence[str] = ()


@dataclass(frozen=True)
class Graph:
    """A subgraph: named tensors, operators in execution order, and the names of its inputs and outputs."""

    tensors: Mapping[str, T]
    ops: Sequence[Op]
    inputs: Sequence[str]
    outputs: Sequence[str]
    name: str = ""


def _typed_options(op: str, custom: bool, options: Any) -> Any:
    if custom:
        if options is not None:
            raise ValueError(f"custom op {op!r} takes custom_options, not builtin options")
        return None
    if options is None:
        return schema.options(op)
    if isinstance(options, Mapping):
        return schema.options(op, **options)
    return options


def _subgraph(graph: Graph, index: int) -> ir.Subgraph:
    names = list(graph.tensors)
    position = {name: i for i, name in enumerate(names)}

    def idx(name: str | None) -> int:
        if name is None:
            return -1
        if name not in position:
            raise ValueError(f"graph {graph.name!r}: unknown tensor {name!r}")
        return position[name]

    tensors = [spec.tensor(name, i) for i, (name, spec) in enumerate(graph.tensors.items())]
    ops = []
    for i, o in enumerate(graph.ops):
        custom = o.op not in schema.BUILTIN_CODES
        ops.append(ir.Operator(
            o.op, [idx(n) for n in o.inputs], [idx(n) for n in o.outputs], _typed_options(o.op, custom, o.options),
            o.custom_options, custom, o.version, [idx(n) for n in o.intermediates], index=i,
        ))
    return ir.Subgraph(tensors, ops, [idx(n) for n in graph.inputs], [idx(n) for n in graph.outputs], graph.name,
                       index)


def graph_ir(*graphs: Graph, description: str = "micronn.testing") -> ir.Model:
    """The IR of a model made of ``graphs`` (the first is the main subgraph)."""
    if not graphs:
        raise ValueError("a model needs at least one graph")
    return ir.Model([_subgraph(g, i) for i, g in enumerate(graphs)], description)


def graph_model(*graphs: Graph, description: str = "micronn.testing") -> bytes:
    """The ``.tflite`` bytes of a model made of ``graphs`` (the first is the main subgraph)."""
    return write(graph_ir(*graphs, description=description))


def op_model(
    op: str,
    inputs: Sequence[T | None],
    outputs: Sequence[T],
    options: Any = None,
    *,
    version: int = 1,
    custom_options: bytes | None = None,
    intermediates: Sequence[T] = (),
) -> bytes:
    """The ``.tflite`` bytes of a model holding one operator.

    Non-constant, non-variable inputs become the model's inputs (in order); ``outputs`` its outputs.
    Tensors are named ``input<i>``, ``output<i>`` and ``intermediate<i>`` unless their spec names them.
    """
    tensors: dict[str, T] = {}
    op_inputs: list[str | None] = []
    for i, spec in enumerate(inputs):
        if spec is None:
            op_inputs.append(None)
        else:
            tensors[f"input{i}"] = spec
            op_inputs.append(f"input{i}")
    tensors.update({f"output{i}": spec for i, spec in enumerate(outputs)})
    tensors.update({f"intermediate{i}": spec for i, spec in enumerate(intermediates)})
    graph = Graph(
        tensors,
        [Op(op, op_inputs, [f"output{i}" for i in range(len(outputs))], options, version, custom_options,
            [f"intermediate{i}" for i in range(len(intermediates))])],
        [n for n in op_inputs if n is not None and not tensors[n].is_constant and not tensors[n].variable],
        [f"output{i}" for i in range(len(outputs))],
    )
    return graph_model(graph)


# ---- inputs --------------------------------------------------------------------------------------------------


def _as_ir(model: bytes | bytearray | memoryview | ir.Model) -> ir.Model:
    if isinstance(model, ir.Model):
        return model
    from micronn.tflite.reader import read

    return read(model)


def random_inputs(model: bytes | bytearray | memoryview | ir.Model, seed: int = 0) -> list[np.ndarray]:
    """Random values for every input of the main subgraph: the full range of integer types, [-1, 1) for floats."""
    from micronn.ir import random_inputs as from_ir

    return from_ir(_as_ir(model), seed)


# ---- running TFLM ---------------------------------------------------------------------------------------------


def _flush_c_stdio() -> None:
    with contextlib.suppress(Exception):  # no libc to flush on exotic platforms: nothing is buffered there
        ctypes.CDLL(None).fflush(None)


@contextlib.contextmanager
def _captured_fds(fds: tuple[int, ...] = (1, 2)) -> Iterator[list[str]]:
    """Capture what C++ writes to file descriptors ``fds``; the text is in the yielded list after the block."""
    text: list[str] = []
    sys.stdout.flush()
    sys.stderr.flush()
    _flush_c_stdio()
    with tempfile.TemporaryFile() as tmp:
        saved = [os.dup(fd) for fd in fds]
        try:
            for fd in fds:
                os.dup2(tmp.fileno(), fd)
            yield text
        finally:
            _flush_c_stdio()
            for fd, s in zip(fds, saved, strict=True):
                os.dup2(s, fd)
                os.close(s)
            tmp.seek(0)
            text.append(tmp.read().decode(errors="replace"))


class TflmError(RuntimeError):
    """The TFLM reference failed; the message includes what TFLM logged."""


class _Tflm:
    """A TFLM wheel interpreter that turns failures into TflmError carrying TFLM's own log."""

    def __init__(self, model: bytes, arena_size: int | None = None):
        from tflite_micro.python.tflite_micro import runtime

        self.model = bytes(model)  # the C++ interpreter reads the flatbuffer in place: keep it alive
        self.n_outputs = len(_as_ir(self.model).main.outputs)
        size = arena_size if arena_size is not None else max(DEFAULT_TFLM_ARENA, 10 * len(self.model))
        if size < MIN_TFLM_ARENA:
            raise TflmError(f"arena of {size} bytes refused: the TFLM wheel crashes below {MIN_TFLM_ARENA} bytes")
        self.it = self._call("creating the interpreter", runtime.Interpreter.from_bytes, self.model,
                             arena_size=size)

    @staticmethod
    def _call(what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        with _captured_fds() as log:
            try:
                result, error = fn(*args, **kwargs), None
            except (RuntimeError, ValueError, TypeError, IndexError) as e:  # what the wheel raises
                result, error = None, e
        if error is not None:
            raise TflmError(f"TFLM failed {what}: {error}\n{log[0].strip()}") from error
        return result

    def run(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        for i, x in enumerate(inputs):
            self._call(f"setting input {i}", self.it.set_input, np.require(x, requirements="C"), i)
        self._call("invoking", self.it.invoke)
        return [np.array(self.it.get_output(i), copy=True) for i in range(self.n_outputs)]

    def allocations(self) -> str:
        with _captured_fds() as log:
            self.it.print_allocations()
        return log[0]


def run_tflm(model_bytes: bytes, inputs: Sequence[np.ndarray], arena_size: int | None = None) -> list[np.ndarray]:
    """Run the model once on the TFLM reference; returns copies of all outputs."""
    return _Tflm(model_bytes, arena_size).run(inputs)


_ALLOCATION = re.compile(r"Arena allocation (total|head|tail) (\d+) bytes")


_CATEGORY = re.compile(r"'([^']+)' used (\d+) bytes with alignment overhead \(requested (\d+) bytes for (\d+)")


def tflm_allocations(model_bytes: bytes, arena_size: int | None = None) -> dict[str, Any]:
    """:func:`tflm_arena`'s figures plus TFLM's tail by category: ``{name: (used, requested, count)}``."""
    tflm = _Tflm(model_bytes, arena_size)
    tflm.run(random_inputs(model_bytes))
    text = tflm.allocations()
    found: dict[str, Any] = {k: int(v) for k, v in _ALLOCATION.findall(text)}
    if set(found) != {"total", "head", "tail"}:
        raise TflmError(f"could not parse TFLM's print_allocations() output:\n{text}")
    found["categories"] = {k: (int(u), int(r), int(n)) for k, u, r, n in _CATEGORY.findall(text)}
    return found


def measured_tflm_footprint(model: Any, head: int | None = None) -> dict[str, Any]:
    """``micronn.footprint.tflm_footprint`` with the host tail measured by the wheel (the library only estimates
    it); falls back to the estimate, saying why, for models the wheel refuses (micronn's custom ops)."""
    from micronn.footprint import tflm_footprint
    from micronn.interpreter import Interpreter

    if isinstance(model, bytes | bytearray | memoryview):
        data = bytes(model)
    elif isinstance(model, str | Path):
        data = Path(model).read_bytes()
    else:
        data = write(model.model if isinstance(model, Interpreter) else model)
    try:
        measured = tflm_allocations(data)
    except Exception as e:  # the wheel refused the model: estimate instead, and say why
        measured = {"error": str(e).splitlines()[0]}
    return tflm_footprint(model, head, measured=measured)


def tflm_arena(model_bytes: bytes, arena_size: int | None = None) -> dict[str, int]:
    """TFLM's arena use after one invoke on random inputs, as its ``print_allocations()`` reports it.

    ``head`` is the planned non-persistent section, ``tail`` the persistent one and ``total`` their sum. The
    smallest arena TFLM accepts can be larger than ``total``, because planning makes temporary allocations
    that are gone by the time it reports (hello_world: total 1,504, smallest arena 1,936): see
    :func:`tflm_min_arena` for that figure.
    """
    found = tflm_allocations(model_bytes, arena_size)
    return {k: found[k] for k in ("total", "head", "tail")}


# Runs one TFLM attempt: exit status 0 when the interpreter is created and invoked in the given arena.
_PROBE = """
import sys
import numpy as np
from tflite_micro.python.tflite_micro import runtime
model = open(sys.argv[1], "rb").read()
inputs = np.load(sys.argv[2])
try:
    it = runtime.Interpreter.from_bytes(model, arena_size=int(sys.argv[3]))
    for i in range(len(inputs.files)):
        it.set_input(inputs[f"x{i}"], i)
    it.invoke()
except RuntimeError:
    sys.exit(1)
"""


def tflm_min_arena(model_bytes: bytes, timeout: float = 120.0) -> int:
    """The smallest arena (bytes) in which TFLM creates the interpreter and invokes the model.

    Found by bisection; every attempt runs in a subprocess, because some TFLM kernels crash the process
    instead of failing cleanly when the arena runs out (the LSTM kernel does).
    """
    with tempfile.TemporaryDirectory() as tmp:
        model_path, inputs_path = os.path.join(tmp, "model.tflite"), os.path.join(tmp, "inputs.npz")
        with open(model_path, "wb") as f:
            f.write(model_bytes)
        np.savez(inputs_path, **{f"x{i}": x for i, x in enumerate(random_inputs(model_bytes))})

        def fits(size: int) -> bool:
            probe = [sys.executable, "-c", _PROBE, model_path, inputs_path, str(size)]
            return subprocess.run(probe, capture_output=True, timeout=timeout).returncode == 0

        # start from the reported total (usually within a few bytes), gallop to a bracket, then bisect
        guess = tflm_arena(model_bytes)["total"]
        step = 16
        if fits(guess):
            high, low = guess, max(guess - step, 0)
            while low > 0 and fits(low):
                step *= 2
                high, low = low, max(guess - step, 0)
        else:
            low, high = guess, guess + step
            while not fits(high):
                step *= 2
                low, high = high, guess + step
        while high - low > 1:  # invariant: low does not fit, high fits
            mid = (low + high) // 2
            low, high = (low, mid) if fits(mid) else (mid, high)
        return high


# ---- running micronn and comparing ------------------------------------------------------------------------------


def _micronn(model_bytes: bytes) -> Any:
    from micronn.interpreter import Interpreter

    return Interpreter.from_bytes(model_bytes)


def _run_micronn(it: Any, inputs: Sequence[np.ndarray], n_outputs: int) -> list[np.ndarray]:
    for i, x in enumerate(inputs):
        it.set_input(x, i)
    it.invoke()
    return [np.array(it.get_output(i), copy=True) for i in range(n_outputs)]


def run_micronn(model_bytes: bytes, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Run the model once with micronn; returns copies of all outputs."""
    return _run_micronn(_micronn(model_bytes), inputs, len(_as_ir(model_bytes).main.outputs))


def _difference(actual: np.ndarray, expected: np.ndarray, what: str, limit: int = 5) -> str | None:
    """Why ``actual`` is not byte-identical to ``expected``, or None when it is."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    if actual.dtype != expected.dtype:
        return f"{what}: dtype {actual.dtype}, expected {expected.dtype}"
    if actual.shape != expected.shape:
        return f"{what}: shape {actual.shape}, expected {expected.shape}"
    if actual.tobytes() == expected.tobytes():
        return None
    def elements(x: np.ndarray) -> np.ndarray:  # one row of bytes per element
        return np.ascontiguousarray(x).reshape(-1).view(np.uint8).reshape(x.size, x.dtype.itemsize)

    # compare bytes, so NaN payloads and -0.0 count as differences too
    differs = np.any(elements(actual) != elements(expected), axis=1).reshape(actual.shape)
    where = np.argwhere(differs)
    lines = [f"{what}: {len(where)} of {actual.size} elements differ"]
    if np.issubdtype(actual.dtype, np.number):
        delta = np.abs(actual.astype(np.float64) - expected.astype(np.float64))
        lines[0] += f" (max abs difference {np.nanmax(delta[differs]):g})"
    for pos in where[:limit]:
        p = tuple(int(v) for v in pos)
        lines.append(f"  at {list(p)}: got {actual[p]!r}, expected {expected[p]!r}")
    if len(where) > limit:
        lines.append(f"  ... and {len(where) - limit} more")
    return "\n".join(lines)


def assert_identical(actual: np.ndarray, expected: np.ndarray, what: str = "array") -> None:
    """Assert equal dtype, shape and bytes, with a message listing the first differing elements."""
    message = _difference(actual, expected, what)
    if message is not None:
        raise AssertionError(message)


def assert_same_as_tflm(
    model_bytes: bytes,
    inputs: Sequence[np.ndarray] | None = None,
    seed: int = 0,
    runs: int = 3,
    arena_size: int | None = None,
) -> list[list[np.ndarray]]:
    """Assert micronn's outputs are byte-identical to TFLM's; returns TFLM's outputs of every run.

    With ``inputs`` the model runs once on them; otherwise ``runs`` times on :func:`random_inputs` seeded
    ``seed``, ``seed + 1``, ... Each side keeps one interpreter for all runs, so the state of stateful models
    (variable tensors) is compared too.
    """
    model_bytes = bytes(model_bytes)
    sets = [list(inputs)] if inputs is not None else [random_inputs(model_bytes, seed + r) for r in range(runs)]
    tflm = _Tflm(model_bytes, arena_size)
    mine = _micronn(model_bytes)
    main = _as_ir(model_bytes).main
    names = [main.tensors[i].name for i in main.outputs]
    results = []
    for r, xs in enumerate(sets):
        expected = tflm.run(xs)
        actual = _run_micronn(mine, xs, tflm.n_outputs)
        problems = [
            msg for i, (a, e) in enumerate(zip(actual, expected, strict=True))
            if (msg := _difference(a, e, f"run {r}, output {i} ({names[i]!r})")) is not None
        ]
        if problems:
            raise AssertionError("micronn differs from TFLM:\n" + "\n".join(problems))
        results.append(expected)
    return results
