"""The interpreter, in TFLM's phases: load -> resolve ops -> prepare -> plan -> invoke.

Inputs, outputs and every activation are numpy views into one arena; ``invoke()`` only runs
kernels over those views. The API also speaks the ``tflite_micro`` runtime's and LiteRT's
dialects, so scripts port by changing an import.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

import numpy as np

from micronn import planners
from micronn.arena import Arena
from micronn.errors import ArenaTooSmallError, InvokeError, MicronnError, ModelError, PrepareError, UnsupportedError
from micronn.ir import Model, Operator, Subgraph, Tensor
from micronn.kernels import Kernel, Node
from micronn.kernels._control_flow import ResourceVariables
from micronn.resolver import OpResolver
from micronn.tflite.reader import Source, read

# The operators whose TFLM kernels decompress LUT-compressed constants (micronn.ir.Lut), and the inputs they
# decompress (None: all). Each such input costs a scratch buffer of its decompressed size while the operator runs,
# asked for after the kernel's own; any other reader would compute with the packed indices.
DECOMPRESSED_INPUTS: dict[str, tuple[int, ...] | None] = {
    "FULLY_CONNECTED": (1, 2), "CONV_2D": (1, 2), "DEPTHWISE_CONV_2D": (1, 2), "TRANSPOSE_CONV": (1, 3),
    "CONCATENATION": None, "ASSIGN_VARIABLE": (1,),
}


def _check_compressed(model: Model) -> None:
    """Refuse LUT-compressed tensors that something other than a decompressing kernel input reads."""
    for sg in model.subgraphs:
        if not any(t.lut is not None for t in sg.tensors):
            continue
        for op in sg.operators:
            slots = DECOMPRESSED_INPUTS.get(op.op, ()) if not op.custom else ()
            for k, t in enumerate(op.inputs):
                if t >= 0 and sg.tensors[t].lut is not None and slots is not None and k not in slots:
                    raise ModelError(f"subgraph {sg.index} tensor {t} ({sg.tensors[t].name!r}) is LUT-compressed "
                                     f"but operator {op.index} ({op.op}) reads it as input {k}, which TFLM does not "
                                     "decompress")
        for t in sg.outputs:
            if sg.tensors[t].lut is not None:
                raise ModelError(f"subgraph {sg.index} output tensor {t} ({sg.tensors[t].name!r}) is "
                                 "LUT-compressed: TFLM would hand out the packed indices")


class _HeadPlan(NamedTuple):
    """One planning of the arena head: what the kernels asked for, what sharing made of it, and where it all goes."""

    base_requests: list[planners.Request]
    requests: list[planners.Request]
    shared_groups: list[list[int]]
    plan: planners.Plan


class _Node(Node):
    """The interpreter's implementation of the kernel-facing Node."""

    def __init__(self, interp: Interpreter, op: Operator, sg: Subgraph):
        self.interp, self.op, self.index, self.subgraph = interp, op, op.index, sg.index
        self.inputs: list[Tensor | None] = [sg.tensors[i] if i >= 0 else None for i in op.inputs]
        self.outputs: list[Tensor] = [sg.tensors[i] for i in op.outputs]
        self.scratch_sizes: list[int] = []
        self.scratch_views: list[np.ndarray] = []
        self.preparing = True

    def _view(self, t: int, what: str) -> np.ndarray:
        v = self.interp._all_views[self.subgraph][t]
        if v is None:
            raise self.fail(f"{what} tensor {t} has no data during prepare (only constants do)")
        return v

    def input(self, i: int) -> np.ndarray:
        t = self.op.inputs[i]
        if t < 0:
            raise self.fail(f"optional input {i} is omitted")
        return self._view(t, "input")

    def output(self, i: int) -> np.ndarray:
        return self._view(self.op.outputs[i], "output")

    @property
    def compact_scratch(self) -> bool:
        return self.interp.sharing.compact_scratch

    @property
    def storage(self) -> Any:
        return self.interp.storage

    def request_scratch(self, nbytes: int) -> int:
        if not self.preparing:
            raise self.fail("scratch can only be requested in prepare")
        self.scratch_sizes.append(int(nbytes))
        return len(self.scratch_sizes) - 1

    def scratch(self, idx: int, dtype: Any = np.uint8, shape: tuple[int, ...] | None = None) -> np.ndarray:
        v = self.scratch_views[idx]
        dtype = np.dtype(dtype)
        n = len(v) // dtype.itemsize
        out = v[: n * dtype.itemsize].view(dtype)
        return out if shape is None else out[: int(np.prod(shape))].reshape(shape)

    def persistent(self, array: np.ndarray, constant: bool = False) -> np.ndarray:
        if not self.preparing:
            raise self.fail("persistent memory can only be taken in prepare")
        array = np.ascontiguousarray(array)
        if constant and self.interp.sharing.rom:  # kept beside the weights (flash), one copy of identical data
            key = (array.dtype.str, array.shape, array.tobytes())
            rom = self.interp._rom
            if key not in rom:
                rom[key] = array.copy()
                rom[key].flags.writeable = False
            return rom[key]
        key = array.tobytes() if constant and self.interp.sharing.persistent else None
        raw = self.interp._arena.persistent(array.nbytes, f"op {self.index} ({self.op.op})", key)
        if raw is None:  # measuring pass or arena too small: keep going to learn the full size
            out = array.copy()
        else:
            out = raw.view(array.dtype).reshape(array.shape)
            out[...] = array  # for a reused copy: the same bytes again
        if key is not None:
            out.flags.writeable = False  # shared with other operators: nobody may write it
        return out

    def bind_output(self, i: int, view: np.ndarray) -> None:
        """Prepare only: give output ``i`` memory of the kernel's own (taken with ``persistent``).

        Like a TFLM kernel that points a tensor's data at its own persistent data in prepare (VAR_HANDLE),
        the tensor then takes no place in the planned arena head.
        """
        if not self.preparing:
            raise self.fail("outputs can only be bound in prepare")
        t = self.op.outputs[i]
        self.interp._all_views[self.subgraph][t] = view
        self.interp._bound.add((self.subgraph, t))


class Interpreter:
    """Run a TFLite model from one fixed arena, byte-identically to TFLM.

    ``arena_size`` (bytes) or ``arena`` (your own bytearray) fix the memory; with neither,
    the arena is sized to exactly what the model needs. ``planner`` picks the memory planner
    (``"optimal"`` by default, ``"tflm"`` for TFLM's exact plan); ``sharing`` lets outputs alias,
    overwrite or stream over dying inputs (see ``micronn.planners.sharing``; never with ``"tflm"``).

    Call order: ``allocate_tensors()`` may be called explicitly (LiteRT's order) or left out: the first call that
    needs tensors (``invoke``, ``set_input``, ``get_output``, ``tensor``, ``arena_report``, ...) allocates, so code
    written for LiteRT and for the ``tflite_micro`` runtime (which allocates when it loads) both run. Allocating
    again is allowed and prepares into a fresh arena: inputs set and views taken before it are stale. Misuse (wrong
    dtype or shape, an index that is not an in-range integer, ...) raises a ``MicronnError``, never a numpy or
    Python error.
    """

    def __init__(self, model: Model | Source, arena_size: int | None = None, resolver: OpResolver | None = None,
                 *, arena: bytearray | memoryview | np.ndarray | SharedArena | None = None,
                 planner: str | planners.Planner = "optimal", sharing: bool | planners.Sharing = True,
                 storage: Any = None):
        if not isinstance(model, (Model, str, os.PathLike, bytes, bytearray, memoryview)):
            raise ModelError(f"a model is a path, bytes, bytearray, memoryview or micronn Model, not "
                             f"{type(model).__name__}" + (" (wrap an array in memoryview())"
                                                          if isinstance(model, np.ndarray) else ""))
        if arena_size is not None and (isinstance(arena_size, bool) or not isinstance(arena_size, (int, np.integer))
                                       or arena_size < 0):
            raise MicronnError(f"arena_size must be a non-negative number of bytes, got {arena_size!r}")
        if not isinstance(sharing, (bool, planners.Sharing)):
            raise MicronnError(f"sharing must be True, False or a micronn.planners.Sharing, got {sharing!r}")
        self.model = model if isinstance(model, Model) else read(model)
        _check_compressed(self.model)
        self._storage = storage  # where Spill/Fetch kernels keep spilled tensors (micronn.storage)
        self.resolver = resolver or OpResolver.all()
        self.planner = planners.get(planner)
        if sharing is True:
            sharing = planners.Sharing()
        # baselines (TFLM's exact plan, no reuse) share no memory
        self.sharing = sharing if sharing is not False and self.planner.shares else planners.Sharing.none()
        self.folded_pads: list[int] = []  # PAD operators of the file folded into the convolution they feed
        if self.sharing.fold_pad:
            self.model, self.folded_pads = planners.fold_pads(self.model)
        self.subgraph = self.model.main
        if arena is not None and arena_size is not None:
            raise MicronnError("give either arena_size or arena, not both")
        self._memory = arena if arena is not None else None if arena_size is None else int(arena_size)
        self._allocated = False
        self.profiling = False
        self.op_times_ns: list[int] = []
        self._resolve()

    @property
    def storage(self) -> Any:
        """The ``micronn.storage.Storage`` spilled tensors go to: ``storage=`` or host RAM, made when first
        used."""
        if self._storage is None:
            from micronn.storage import MemoryStorage

            self._storage = MemoryStorage()
        return self._storage

    # -- constructors in the tflite_micro runtime's style (they allocate at once) --------------
    @classmethod
    def from_file(cls, model_path: str, arena_size: int | None = None, **kw: Any) -> Interpreter:
        it = cls(model_path, arena_size, **kw)
        it.allocate_tensors()
        return it

    @classmethod
    def from_bytes(cls, model: bytes | bytearray | memoryview, arena_size: int | None = None, **kw: Any) -> Interpreter:
        it = cls(model, arena_size, **kw)
        it.allocate_tensors()
        return it

    # -- phases --------------------------------------------------------------------------------
    def _resolve(self) -> None:
        """Find a kernel for every operator of every subgraph (TFLM prepares them all, called or not);
        report every unsupported (op, dtype) at once."""
        self._all_kernels: list[list[Kernel]] = []
        self._all_nodes: list[list[_Node]] = []
        missing = []
        for sg in self.model.subgraphs:
            kernels, nodes = [], []
            for op in sg.operators:
                node = _Node(self, op, sg)
                cls = self.resolver.find(op.op)
                if cls is None:
                    t = next((x for x in node.inputs if x is not None), node.outputs[0] if node.outputs else None)
                    missing.append((op.op, t.dtype.name if t is not None else "-"))
                    continue
                kernel = cls()
                key = kernel.dtype_key(node)
                if cls.dtypes and key not in cls.dtypes:
                    missing.append((op.op, key))
                kernels.append(kernel)
                nodes.append(node)
            self._all_kernels.append(kernels)
            self._all_nodes.append(nodes)
        if missing:
            raise UnsupportedError(missing)
        self._kernels, self._nodes = self._all_kernels[0], self._all_nodes[0]

    def _build(self, arena: Arena, planned: _HeadPlan | None = None) -> _HeadPlan:
        """Prepare every kernel into ``arena``, plan the head (or reuse ``planned``, made by an earlier prepare of
        this interpreter) and make every tensor view. A measuring arena (no buffer) stops after planning.

        Raises ``ArenaTooSmallError`` before making any view, so a failed build never leaves tensors half placed.
        """
        sg = self.subgraph
        self._arena = arena
        self.resources = ResourceVariables()  # resource variables, shared by all subgraphs
        self._bound: set[tuple[int, int]] = set()  # (subgraph, tensor) a kernel gave memory of its own
        self._rom: dict[tuple, np.ndarray] = {}  # per-operator constants kept out of the arena (Sharing.rom)
        self._all_views: list[list[np.ndarray | None]] = []
        for g in self.model.subgraphs:
            views: list[np.ndarray | None] = [t.data if t.is_constant else None for t in g.tensors]
            where = f"g{g.index}" if g.index else ""
            for t in g.tensors:
                if t.is_variable:
                    raw = arena.persistent(t.nbytes, f"variable {where}t{t.index}")
                    views[t.index] = (raw if raw is not None else np.zeros(t.nbytes, np.uint8)).view(
                        t.dtype).reshape(t.shape)
            self._all_views.append(views)
        self._views = self._all_views[0]
        self._all_kernels = [[type(k)() for k in ks] for ks in self._all_kernels]
        self._kernels = self._all_kernels[0]
        for kernels, nodes in zip(self._all_kernels, self._all_nodes):  # TFLM's order: subgraph by subgraph
            for kernel, node in zip(kernels, nodes):
                node.preparing, node.scratch_sizes, node.scratch_views = True, [], []
                try:
                    kernel.prepare(node)
                except MicronnError:
                    raise
                except Exception as e:  # a kernel tripping over an inconsistent model is still the model's fault
                    raise node.fail(f"prepare failed: {type(e).__name__}: {e}") from e
                for t in node.inputs:  # TFLM decompresses into scratch: one buffer per compressed input
                    if t is not None and t.lut is not None:
                        node.request_scratch(t.nbytes)
                node.preparing = False
        scratch = {(n.subgraph, n.index): n.scratch_sizes for ns in self._all_nodes for n in ns if n.scratch_sizes}
        # one timeline over the main subgraph and those its control flow calls; TFLM also plans tensors nothing
        # touches (at time -1), which only its exact planner reproduces
        base_requests = planners.tensor_requests(
            self.model, scratch, planners.offline_offsets(self.model, every_subgraph=True), bound=self._bound,
            keep_unused=self.planner.name == "tflm")
        if planned is None:
            planned = self._plan_head(sg, base_requests)
        elif base_requests != planned.base_requests:  # the plan would not hold what the kernels now ask for
            raise PrepareError("the kernels asked for different arena memory when prepared a second time "
                               "(a kernel's prepare is not deterministic), so the arena sized for the first "
                               "prepare does not fit")
        self.base_requests, self.requests, self.shared_groups, self.plan = planned
        self.head, self.tail = self.plan.head, arena.tail_used
        self.tail_shared = arena.tail_shared  # tail bytes TFLM would take again (one copy per operator)
        self.rom_bytes = sum(a.nbytes for a in self._rom.values())  # Sharing.rom: in flash, not in the arena
        if arena.buf is None:
            return planned
        needed = self.head + self.tail + arena.tail_base
        if needed > arena.size:
            raise ArenaTooSmallError(needed, arena.size, self.head, self.tail + arena.tail_base)
        for nodes in self._all_nodes:
            for node in nodes:
                node.scratch_views = [None] * len(node.scratch_sizes)
        for off, r in zip(self.plan.offsets, self.requests):
            tensors, views = self.model.subgraphs[r.subgraph].tensors, self._all_views[r.subgraph]
            for m in r.members or [planners.Member(r.tensor, 0, r.size, r.first, r.last)] * (r.tensor is not None):
                t = tensors[m.tensor]
                views[m.tensor] = arena.view(off + m.rel, t.nbytes, t.dtype, t.shape)
            if r.scratch is not None:
                op_index, sid = r.scratch
                node = self._all_nodes[r.subgraph][op_index]
                node.scratch_views[sid] = arena.buf[off:off + node.scratch_sizes[sid]]
        for g, views in zip(self.model.subgraphs, self._all_views):  # zero-byte or unused tensors still get a
            for t in g.tensors:  # (harmless) view
                if views[t.index] is None:
                    views[t.index] = np.zeros(t.shape, t.dtype)
        return planned

    def _plan_head(self, sg: Subgraph, base_requests: list[planners.Request]) -> _HeadPlan:
        """Choose the memory sharing and plan the head: the one planning an ``allocate_tensors()`` does."""
        # sharing pairs tensors of the main subgraph only
        sharing = self.sharing if all(r.subgraph == 0 for r in base_requests) else planners.Sharing.none()
        kernels = {n.index: k for n, k in zip(self._all_nodes[0], self._kernels)}
        requests, groups = planners.share(
            sg, base_requests, sharing, lambda op: getattr(kernels.get(op.index), "reads_input_first", False))
        plan = self.planner.plan(requests)
        if groups:  # sharing is chosen with quick plans; keep it only if the real plan agrees
            unshared = self.planner.plan(base_requests)
            if unshared.head < plan.head or (unshared.head == plan.head and not sharing.ties):
                requests, groups, plan = base_requests, [], unshared
        return _HeadPlan(base_requests, requests, groups, plan)

    def allocate_tensors(self) -> None:
        """Prepare kernels, plan the arena and make every tensor view. The only phase that allocates.

        Without an arena, a measuring prepare sizes it; the kernels are then prepared again into the real arena
        (for their persistent memory) but the head is not planned again: one plan, so the arena always fits it.
        """
        shared = self._memory if isinstance(self._memory, SharedArena) else None
        if shared is not None and self in shared.tenants:
            raise MicronnError("this interpreter already holds its part of the shared arena")
        self._allocated = False  # until every view is made
        if self._memory is None:
            planned = self._build(Arena(None))
            self._build(Arena.of(self.head + self.tail), planned)
        else:
            self._build(Arena(shared.arena.buf, tail_base=shared.tail_used) if shared else Arena.of(self._memory))
            if shared is not None:
                shared.tenants.append(self)
        self.arena_size = self._arena.size
        self._allocated = True
        self.reset()

    def _ensure(self) -> None:
        if not self._allocated:
            self.allocate_tensors()

    _PLANNED = frozenset({"head", "tail", "tail_shared", "rom_bytes", "arena_size", "plan", "requests",
                          "base_requests"})

    def __getattr__(self, name: str) -> Any:
        """The plan's figures exist once the arena is planned: asking for one plans it, as ``invoke()`` and
        ``arena_report()`` do (a failed allocation raises its own error, never an AttributeError)."""
        if name in Interpreter._PLANNED and not self.__dict__.get("_allocating") and "_memory" in self.__dict__:
            self.__dict__["_allocating"] = True
            try:
                self.allocate_tensors()
            finally:
                self.__dict__["_allocating"] = False
            if name in self.__dict__:
                return self.__dict__[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def invoke(self) -> None:
        """Run every operator once over the arena."""
        self._ensure()
        try:
            self._run()
        except MicronnError:
            raise
        except Exception as e:
            failed = self._current
            where = f"operator {failed.index} ({failed.op.op})" if failed else "invoke"
            if failed is not None and failed.subgraph:
                where += f" of subgraph {failed.subgraph}"
            raise InvokeError(f"{where} failed: {type(e).__name__}: {e}") from e

    def _run(self) -> None:
        self._current: _Node | None = None
        if self.profiling:
            times = self.op_times_ns = [0] * len(self._nodes)
            clock = time.perf_counter_ns
            for i, (kernel, node) in enumerate(zip(self._kernels, self._nodes)):
                self._current = node
                t0 = clock()
                kernel.invoke(node)
                times[i] = clock() - t0
        else:
            for kernel, node in zip(self._kernels, self._nodes):
                self._current = node
                kernel.invoke(node)

    def invoke_batch(self, inputs: Any, *, stream: bool = False) -> list[np.ndarray]:
        """Invoke once per sample; returns one array per model output, its leading axis the samples.

        ``outputs[j][k]`` is byte for byte what ``get_output(j)`` holds after the k-th of N single invokes. Variable
        tensors (SVDF, LSTM state) and kernels' own state follow the usual per-sample meaning of a data set: each
        sample starts from the initial state (``reset()`` before it), unless ``stream`` is true, in which case the
        samples are one stream, in order, and state carries over from whatever the interpreter held before the call.
        The interpreter keeps the state the last sample left.

        ``inputs``: a numpy array stacked along a new leading axis (models with one input), a tuple of such arrays
        (one per model input), or any other iterable of samples, each an array (one input) or a sequence of arrays
        (one per input). A sample's shape is the input's, or the input's without its leading 1; dtypes must match
        exactly, as for :meth:`set_input`. A bad sample raises an ``InvokeError`` naming it and the input.
        """
        self._ensure()
        tensors = [self.subgraph.tensors[t] for t in self.subgraph.inputs]
        views = [self._views[t] for t in self.subgraph.inputs]
        outs = [self._views[t] for t in self.subgraph.outputs]
        results: list[list[np.ndarray]] = [[] for _ in outs]
        k = 0
        for chunk in input_chunks(inputs, tensors, 256):
            for r in range(len(chunk[0])):
                if not stream:
                    self.reset()
                for view, arr in zip(views, chunk):
                    view[...] = arr[r]
                try:
                    self.invoke()
                except InvokeError as e:
                    raise InvokeError(f"sample {k}: {e}") from e
                for res, out in zip(results, outs):
                    res.append(out.copy())
                k += 1
        return [np.stack(r) if r else np.zeros((0, *o.shape), o.dtype) for r, o in zip(results, outs)]

    # -- control flow: what IF, WHILE and CALL_ONCE kernels call ---------------------------------
    def invoke_subgraph(self, index: int) -> None:
        """Run every operator of subgraph ``index`` once, over its views (which it shares with the arena)."""
        caller = self._current
        for kernel, node in zip(self._all_kernels[index], self._all_nodes[index]):
            self._current = node
            kernel.invoke(node)
        self._current = caller

    def subgraph_inputs(self, index: int) -> list[np.ndarray]:
        """The live views of subgraph ``index``'s inputs."""
        return [self._all_views[index][t] for t in self.model.subgraphs[index].inputs]

    def subgraph_outputs(self, index: int) -> list[np.ndarray]:
        """The live views of subgraph ``index``'s outputs."""
        return [self._all_views[index][t] for t in self.model.subgraphs[index].outputs]

    def reset(self) -> None:
        """Put variable tensors back to their initial state (TFLM: zero point for int8, else zero), in every
        subgraph, resource variables to their defaults (CALL_ONCE does not run again, as in TFLM) and kernels'
        own state (``Kernel.reset``). Before allocation there is no state yet, so it does nothing."""
        if not self._allocated:
            return
        for g, views in zip(self.model.subgraphs, self._all_views):
            for t in g.tensors:
                if t.is_variable and views[t.index] is not None:
                    views[t.index][...] = t.zero_point if t.dtype == np.int8 else 0
        self.resources.reset()
        for kernels, nodes in zip(self._all_kernels, self._all_nodes):
            for kernel, node in zip(kernels, nodes):
                kernel.reset(node)

    # -- tensors -------------------------------------------------------------------------------
    def _index(self, key: int | str) -> int:
        """A tensor of the main subgraph by name or by index (as in LiteRT: no negative indices)."""
        if isinstance(key, str):
            for t in self.subgraph.tensors:
                if t.name == key:
                    return t.index
            raise MicronnError(f"no tensor named {key!r}")
        key = _integer(key, "tensor")
        if not 0 <= key < len(self.subgraph.tensors):
            raise MicronnError(f"tensor index {key} out of range ({len(self.subgraph.tensors)} tensors)")
        return key

    def view(self, key: int | str) -> np.ndarray:
        """The live numpy view of a tensor (by index or name) in the arena."""
        self._ensure()
        return self._views[self._index(key)]

    def input(self, i: int = 0) -> np.ndarray:
        return self.view(self._io(self.subgraph.inputs, i, "input"))

    def output(self, i: int = 0) -> np.ndarray:
        return self.view(self._io(self.subgraph.outputs, i, "output"))

    @staticmethod
    def _io(lst: list[int], i: int, kind: str) -> int:
        """The tensor index of input or output ``i`` (0 <= i < count; TFLM's indices are unsigned)."""
        i = _integer(i, kind)
        if not 0 <= i < len(lst):
            raise MicronnError(f"{kind} index {i} out of range (model has {len(lst)} {kind}s)")
        return lst[i]

    def set_input(self, data: Any, index: int = 0) -> None:
        """Copy ``data`` into input ``index``.

        Its dtype and shape must match exactly, as in the ``tflite_micro`` runtime and LiteRT: nothing is cast or
        broadcast (a float array into an int8 input is an error, not a silent quantization; a scalar is not an
        array of any shape). Any memory layout is fine (non-contiguous, Fortran order, the other byte order): the
        values are copied."""
        dst = self.input(index)
        t = self.subgraph.tensors[self.subgraph.inputs[index]]
        dst[...] = _checked(data, dst, f"input {index} ({t.name!r})")

    def get_output(self, index: int = 0) -> np.ndarray:
        """A copy of output ``index`` (a view would change on the next invoke)."""
        return self.output(index).copy()

    def get_tensor(self, key: int | str) -> np.ndarray:
        """LiteRT style: a copy of a tensor of the main subgraph, by index or name."""
        return self.view(key).copy()

    def set_tensor(self, key: int | str, value: Any) -> None:
        """LiteRT style: copy ``value`` into a tensor (same dtype and shape rules as :meth:`set_input`). Constants
        of the model cannot be set: their bytes are the model file's."""
        dst = self.view(key)
        if not dst.flags.writeable:
            raise InvokeError(f"tensor {key!r} is a constant of the model and cannot be set")
        dst[...] = _checked(value, dst, f"tensor {key!r}")

    def tensor(self, key: int | str):
        """LiteRT style: a function returning the live view. The key is checked now, not when it is called."""
        index = self._index(key)
        return lambda: self.view(index)

    def _details(self, t: Tensor) -> dict[str, Any]:
        scales = t.quant.scale if t.quant is not None else np.zeros(0, np.float32)
        zps = (t.quant.zero_point if t.quant is not None else np.zeros(0, np.int64)).astype(np.int32)
        return {
            "name": t.name, "index": t.index, "shape": np.array(t.shape, np.int32),
            "shape_signature": np.array(t.shape_signature or t.shape, np.int32), "dtype": t.dtype.type,
            "quantization": (t.scale, t.zero_point),
            "quantization_parameters": {"scales": scales, "zero_points": zps,
                                        "quantized_dimension": t.quant.axis if t.quant is not None else 0},
            "sparsity_parameters": {},
        }

    def get_input_details(self, index: int | None = None) -> Any:
        """tflite_micro style with an index (one dict); LiteRT style without (a list)."""
        sg = self.subgraph
        if index is None:
            return [self._details(sg.tensors[i]) for i in sg.inputs]
        return self._details(sg.tensors[self._io(sg.inputs, index, "input")])

    def get_output_details(self, index: int | None = None) -> Any:
        sg = self.subgraph
        if index is None:
            return [self._details(sg.tensors[i]) for i in sg.outputs]
        return self._details(sg.tensors[self._io(sg.outputs, index, "output")])

    # -- reports -------------------------------------------------------------------------------
    def __repr__(self) -> str:
        main = self.model.main
        state = (f"head {self.head:,} B + tail {self.tail:,} B" if self._allocated else "not allocated")
        return (f"<micronn.Interpreter: {len(main.operators)} ops, inputs "
                f"{', '.join(main.tensors[t].spec for t in main.inputs)}, outputs "
                f"{', '.join(main.tensors[t].spec for t in main.outputs)}; {self.planner.name} planner, {state}>")

    def _repr_html_(self) -> str:
        import html

        main = self.model.main
        rows = "".join(f"<tr><td>{op.index}</td><td>{html.escape(op.op)}</td><td>"
                       f"{html.escape(', '.join(main.tensors[t].spec for t in op.outputs))}</td></tr>"
                       for op in main.operators)
        return (f"<p>{html.escape(repr(self))}</p><table><tr><th>#</th><th>op</th><th>outputs</th></tr>"
                f"{rows}</table>")

    def arena_report(self) -> dict[str, Any]:
        """What the arena holds, like TFLM's recording allocator: head, tail and every buffer's place."""
        self._ensure()
        bufs = []
        for off, r in zip(self.plan.offsets, self.requests):
            if r.scratch is not None:
                bufs.append({"offset": off, "size": r.size, "first": r.first, "last": r.last, "kind": "scratch",
                             "op": r.scratch[0], "scratch": r.scratch[1], "subgraph": r.subgraph})
            for m in r.members or [planners.Member(r.tensor, 0, r.size, r.first, r.last)] * (r.tensor is not None):
                bufs.append({"offset": off + m.rel, "size": m.size, "first": m.first, "last": m.last, "kind": "tensor",
                             "tensor": m.tensor, "name": self.model.subgraphs[r.subgraph].tensors[m.tensor].name,
                             "subgraph": r.subgraph,
                             "shares_with": [o.tensor for o in r.members if o.tensor != m.tensor]})
        return {
            "planner": self.planner.name, "arena_bytes": self.arena_size, "head_bytes": self.head,
            "tail_bytes": self.tail, "total_bytes": self.head + self.tail,
            "lower_bound_bytes": planners.lower_bound(self.base_requests),
            "shared_lower_bound_bytes": planners.lower_bound(self.requests),
            "sharing": {k: getattr(self.sharing, k) for k in ("alias", "inplace", "overlap", "rom")},
            "shared_groups": self.shared_groups, "plan_notes": self.plan.notes, "buffers": bufs,
            "tail": [{"what": e.what, "offset": e.offset, "size": e.size} for e in self._arena.tail],
            # read-only per-operator data that reuses an identical copy above (Sharing.persistent): the bytes
            # TFLM's tail has and this one saves
            "tail_shared_bytes": self.tail_shared,
            "rom_bytes": self.rom_bytes,  # Sharing.rom: per-operator constants kept with the weights
            "tail_reused": [{"what": e.what, "offset": e.offset, "size": e.size} for e in self._arena.reused],
        }


def _integer(i: Any, what: str) -> int:
    """``i`` as an int: Python or numpy integers only; a float, bool or string index is a mistake, not a number."""
    if isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer)):
        raise MicronnError(f"{what} index must be an integer, got {type(i).__name__} {i!r}")
    return int(i)


def _checked(data: Any, dst: np.ndarray, what: str) -> np.ndarray:
    """``data`` as an array of exactly ``dst``'s type and shape (either byte order), or an InvokeError saying what
    was expected and what was given."""
    want = f"{what} expects {dst.dtype.name}{list(dst.shape)}"
    try:
        arr = np.asarray(data)
    except (ValueError, TypeError) as e:  # ragged nested lists and the like
        raise InvokeError(f"{want}, got a {type(data).__name__} that is not an array: {e}") from e
    same = arr.dtype == dst.dtype or (arr.dtype.kind == dst.dtype.kind and not arr.dtype.hasobject
                                      and arr.dtype.newbyteorder("=") == dst.dtype.newbyteorder("="))
    if not same or arr.shape != dst.shape:
        raise InvokeError(f"{want}, got {arr.dtype.name}{list(arr.shape)}")
    return arr


def input_chunks(inputs: Any, tensors: list[Tensor], size: int) -> Iterator[list[np.ndarray]]:
    """``inputs`` (as :meth:`Interpreter.invoke_batch` takes them) as chunks of at most ``size`` samples: one array per
    input tensor, shaped ``(n, *tensor.shape)`` and of its dtype. Stacked arrays are checked once and sliced without
    copying; an iterable of samples is read lazily, ``size`` samples at a time, so memory stays bounded."""
    if size < 1:
        raise MicronnError(f"a chunk holds at least one sample, got {size!r}")
    if isinstance(inputs, np.ndarray) or (isinstance(inputs, tuple) and inputs
                                          and all(isinstance(x, np.ndarray) for x in inputs)):
        stacked = (inputs,) if isinstance(inputs, np.ndarray) else inputs
        if len(stacked) != len(tensors):
            raise InvokeError(f"the model has {len(tensors)} input(s), {len(stacked)} stacked array(s) given")
        arrays = [_stacked(x, t, i) for i, (x, t) in enumerate(zip(stacked, tensors))]
        n = {len(a) for a in arrays}
        if len(n) > 1:
            raise InvokeError(f"the stacked inputs hold different numbers of samples: {[len(a) for a in arrays]}")
        total = n.pop()
        for s in range(0, total, size):
            yield [a[s:s + size] for a in arrays]
        return
    if isinstance(inputs, (str, bytes, dict)) or not isinstance(inputs, Iterable):
        raise InvokeError(f"inputs are a stacked numpy array, a tuple of them (one per input) or an iterable of "
                          f"samples, not {type(inputs).__name__}")
    chunk: list[list[np.ndarray]] = []
    for k, sample in enumerate(inputs):
        chunk.append(_sample(sample, tensors, k))
        if len(chunk) == size:
            yield [np.stack(c) for c in zip(*chunk)]
            chunk = []
    if chunk:
        yield [np.stack(c) for c in zip(*chunk)]


def _spec(t: Tensor) -> str:
    return f"{t.dtype.name}{list(t.shape)}"


def _fits(arr: np.ndarray, t: Tensor) -> bool:
    """Same dtype (either byte order) as the tensor's."""
    return arr.dtype == t.dtype or (arr.dtype.kind == t.dtype.kind and not arr.dtype.hasobject
                                    and arr.dtype.newbyteorder("=") == t.dtype.newbyteorder("="))


def _stacked(x: np.ndarray, t: Tensor, i: int) -> np.ndarray:
    """One input's samples stacked along axis 0, reshaped to ``(n, *t.shape)``."""
    shape = tuple(t.shape)
    ok_shape = x.ndim >= 1 and (x.shape[1:] == shape or (shape[:1] == (1,) and x.shape[1:] == shape[1:]))
    if not (ok_shape and _fits(x, t)):
        raise InvokeError(f"input {i} ({t.name!r}) expects samples of {_spec(t)} stacked along a new first axis, "
                          f"got {x.dtype.name}{list(x.shape)}")
    return x.reshape((len(x), *shape))


def _sample(sample: Any, tensors: list[Tensor], k: int) -> list[np.ndarray]:
    """One sample's arrays, checked and shaped as the inputs."""
    if len(tensors) == 1 and not isinstance(sample, (tuple, list)):
        parts: Any = [sample]
    elif isinstance(sample, (tuple, list)) and not (len(tensors) == 1 and len(sample) != 1):
        parts = sample
    else:
        parts = [sample]
    if len(parts) != len(tensors):
        raise InvokeError(f"sample {k}: the model has {len(tensors)} input(s), the sample gives {len(parts)}")
    out = []
    for i, (x, t) in enumerate(zip(parts, tensors)):
        try:
            arr = np.asarray(x)
        except (ValueError, TypeError) as e:
            raise InvokeError(f"sample {k}, input {i} ({t.name!r}) is not an array: {e}") from e
        shape = tuple(t.shape)
        if not (_fits(arr, t) and (arr.shape == shape or (shape[:1] == (1,) and arr.shape == shape[1:]))):
            raise InvokeError(f"sample {k}, input {i} ({t.name!r}) expects {_spec(t)}, got "
                              f"{arr.dtype.name}{list(arr.shape)}")
        out.append(arr.reshape(shape))
    return out


class SharedArena:
    """One arena for several models (multitenancy, TFLM paper section 4.5).

    Persistent tails stack down from the top, one per interpreter; the non-persistent heads all start at
    offset 0 and overlap, so the arena needs the largest head plus the sum of the tails. Because heads
    overlap, set a model's inputs right before invoking it.

        shared = SharedArena.sized_for(model_a, model_b)
        a = Interpreter(model_a, arena=shared); b = Interpreter(model_b, arena=shared)
    """

    def __init__(self, memory: int | bytearray | memoryview | np.ndarray):
        self.arena = Arena.of(memory)
        self.tenants: list = []  # interpreters, in allocation order

    @classmethod
    def sized_for(cls, *models, **interpreter_kw) -> SharedArena:
        """An arena exactly big enough for ``models`` (each a Model, path or bytes)."""
        sizes = []
        for m in models:
            it = Interpreter(m, **interpreter_kw)
            it.allocate_tensors()
            sizes.append((it.head, it.tail))
        return cls(max(h for h, _ in sizes) + sum(t for _, t in sizes))

    @property
    def size(self) -> int:
        return self.arena.size

    @property
    def tail_used(self) -> int:
        return sum(t.tail for t in self.tenants)

    def report(self) -> dict:
        """Per-tenant head/tail, the shared total, and what separate arenas would have cost."""
        tenants = [{"head_bytes": t.head, "tail_bytes": t.tail} for t in self.tenants]
        shared = max((t.head for t in self.tenants), default=0) + self.tail_used
        separate = sum(t.head + t.tail for t in self.tenants)
        return {"arena_bytes": self.size, "tenants": tenants, "shared_bytes": shared, "separate_bytes": separate,
                "saved_bytes": separate - shared}
