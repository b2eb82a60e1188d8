"""Host-driven model runtime (μTVM's hosted graph runtime): a whole model with every operator on the device.

micronn's interpreter prepares the kernels and plans the arena; the arena then lives in device RAM at the
planner's offsets, constants (weights, per-channel tables) are written once to device rodata, and every operator
becomes tasks whose argument words are packed once. An invoke writes the inputs, queues the tasks, runs them in
one flush and reads the outputs: per op, only task metadata crosses.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from micronn.errors import InvokeError
from micronn.interpreter import Interpreter
from micronn.ir import Model, random_inputs
from micronn.micro import lower, templates
from micronn.micro.session import Session, SessionError
from micronn.micro.target import Target
from micronn.storage.base import StorageError
from micronn.tflite.reader import Source


def _addr(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


class DeviceModel:
    """A model loaded onto ``sess``'s device; ``invoke(inputs)`` runs it there and returns the outputs."""

    def __init__(self, model: Model | Source | Interpreter, sess: Session, *, tuning_log: Any = None):
        self.sess = sess
        it = model if isinstance(model, Interpreter) else Interpreter(model)
        it.allocate_tensors()
        self.interp = it
        tasks = lower.lower_model(it)
        generated: list = []
        self.tuned: list[dict[str, Any]] = []  # the tasks a tuning log swapped for generated kernels
        if tuning_log is not None:  # apply-best: covered layers call their best verified config's kernel
            tasks, generated, self.tuned = templates.apply(tasks, tuning_log, sess.target.name)
        mod = sess.load_module(lower.sources() + generated, [lower.include_dir()])
        buf = it._arena.buf
        self.arena_host, self.arena_size = _addr(buf), len(buf)
        ws = sess.sections["workspace"]
        if self.arena_size > ws.size - ws.used:  # say which device and how much, not just "out of memory"
            raise SessionError(f"the model's arena needs {self.arena_size:,} bytes of RAM; {sess.target.name} has "
                               f"{ws.size - ws.used:,} free for it ({sess.target.ram.size:,} bytes of RAM in all, less "
                               "the runtime, stack and argument sections)")
        self.arena = sess.alloc(self.arena_size, "workspace", 16)
        sess.device.write(self.arena, buf.tobytes())  # planned head (garbage) and the persistent tail, once
        self._consts: dict[Any, int] = {}
        self._module, self._storage_fn = mod, None
        self.ops = [(n.index, n.op.op) for n in it._nodes]
        self.tasks = [(mod[t.symbol].addr, lower.pack(t, self.resolve, sess.word_size), t.symbol, t.op)
                      for t in tasks]
        # kernels that can fail leave their code in mn_status (lower.FALLIBLE): read after a flush
        self._status = mod.symbols.get("mn_status") if any(lower.fallible(t) for t in tasks) else None

    def _in_arena(self, view: np.ndarray) -> int | None:
        off = _addr(view) - self.arena_host
        return self.arena + off if 0 <= off < self.arena_size or (off == self.arena_size and view.nbytes == 0) \
            else None

    def _const(self, key: Any, data: np.ndarray) -> int:
        if key not in self._consts:
            d = np.ascontiguousarray(data)
            ro = self.sess.sections["rodata"]
            if d.nbytes > ro.size - ro.used:
                raise SessionError(f"the model's constants (weights) do not fit {self.sess.target.name}'s flash: "
                                   f"{d.nbytes:,} more bytes wanted, {ro.size - ro.used:,} free")
            self._consts[key] = self.sess.alloc(max(d.nbytes, 1), "rodata", 16)
            self.sess.device.write(self._consts[key], d.tobytes())
        return self._consts[key]

    def _storage(self) -> int:
        """The address of ``mn_storage_memory`` (``kernels/storage.c``), its table filled once: a workspace
        region per Spill victim id, as large as the largest tensor spilled under that id."""
        if self._storage_fn is None:
            sizes: dict[int, int] = {}
            for node, k in zip(self.interp._nodes, self.interp._kernels):
                if node.op.op == "Spill":
                    sizes[k.id] = max(sizes.get(k.id, 0), node.inputs[0].nbytes)
            table = []
            for key, n in sorted(sizes.items()):
                table += [key, self.sess.alloc(max(n, 1), "workspace", 16), n]
            ws, syms = self.sess.word_size, self._module.symbols
            at = self.sess.alloc(max(len(table), 1) * ws, "workspace", 16)
            self.sess.write(at, b"".join(v.to_bytes(ws, "little") for v in table))
            self.sess.write(syms["mn_storage_table"], at.to_bytes(ws, "little"))
            self.sess.write(syms["mn_storage_count"], len(sizes).to_bytes(ws, "little"))
            self._storage_fn = syms["mn_storage_memory"]
        return self._storage_fn

    def resolve(self, ref: Any) -> int:
        """The device address of a TensorRef, ScratchRef, ConstRef or StorageRef."""
        from micronn.micro.lower import ConstRef, ScratchRef, StorageRef, TaskList, TensorRef

        if isinstance(ref, TensorRef):
            view = self.interp._all_views[ref.subgraph][ref.tensor]
            addr = self._in_arena(view)
            return addr if addr is not None else self._const(("t", ref.subgraph, ref.tensor), view)
        if isinstance(ref, ScratchRef):
            addr = self._in_arena(self.interp._all_nodes[ref.subgraph][ref.op].scratch_views[ref.scratch])
            if addr is None:
                raise InvokeError(f"scratch buffer {ref.scratch} of operator {ref.op} is not in the arena")
            return addr
        if isinstance(ref, ConstRef):
            return self._const(("c", id(ref)), ref.data)
        if isinstance(ref, StorageRef):
            return self._storage()
        if isinstance(ref, TaskList):  # n, then (kernel address, address of its argument words) per call
            ws = self.sess.word_size
            words = [len(ref.tasks)]
            for t in ref.tasks:
                packed = np.frombuffer(lower.pack(t, self.resolve, ws), np.uint8)
                words += [self._module[t.symbol].addr, self._const(("a", id(t)), packed)]
            return self._const(("l", id(ref)), np.array(words, f"<u{ws}"))
        raise InvokeError(f"cannot resolve {ref!r} to a device address")

    def _io(self, tensors: list[int]) -> list[tuple[int, np.ndarray]]:
        out = []
        for t in tensors:
            view = self.interp._views[t]
            addr = self._in_arena(view)
            out.append((addr if addr is not None else self._const(("t", 0, t), view), view))
        return out

    def invoke(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
        sg = self.interp.subgraph
        ins = self._io(sg.inputs)
        if len(inputs) != len(ins):
            raise InvokeError(f"the model has {len(ins)} inputs, {len(inputs)} given")
        for i, (x, (addr, view)) in enumerate(zip(inputs, ins)):
            x = np.asarray(x)
            if x.dtype != view.dtype or x.shape != view.shape:
                raise InvokeError(f"input {i} expects {view.dtype.name}{list(view.shape)}, "
                                  f"got {x.dtype.name}{list(x.shape)}")
            self.sess.write(addr, np.ascontiguousarray(x).tobytes())
        self.sess.profile = []
        for fn, args, name, _ in self.tasks:
            self.sess.enqueue(fn, args, name)
        self.sess.sync()
        self.profile = self.sess.profile
        if self._status is not None:
            code = int.from_bytes(self.sess.read(self._status, 4), "little", signed=True)
            if code:
                self.sess.write(self._status, bytes(4))
                if code in lower.KERNEL_FAILURES:
                    raise InvokeError(f"{lower.KERNEL_FAILURES[code]} (TFLM fails the invoke too); the outputs are "
                                      "not valid")
                raise StorageError(f"a Spill or Fetch task's storage call failed on the device with code {code}: "
                                   "a spilled tensor could not be written or read back, so the outputs are not valid")
        return [np.frombuffer(self.sess.read(a, v.nbytes), v.dtype).reshape(v.shape).copy()
                for a, v in self._io(sg.outputs)]

    def op_costs(self) -> list[dict[str, Any]]:
        """Per operator: instructions, estimated cycles and per-class counts of the last invoke (None if the
        device does not count)."""
        per: dict[int, dict[str, Any]] = {i: {"index": i, "op": op, "instructions": None, "cycles": None, "counts": {}}
                                          for i, op in self.ops}
        for (_, _, _, op), c in zip(self.tasks, self.profile):
            if c.instructions is None:
                continue
            d = per[op]
            d["instructions"] = (d["instructions"] or 0) + c.instructions
            d["cycles"] = (d["cycles"] or 0) + c.cycles
            for k, v in c.counts.items():
                d["counts"][k] = d["counts"].get(k, 0) + v
        if any(c.instructions is not None for c in self.profile):  # an operator with no call (a view, a cast
            for op in set(per) - {t[3] for t in self.tasks}:      # that keeps its bits in place) costs nothing
                per[op]["instructions"] = per[op]["cycles"] = 0
        return list(per.values())


def run_model(model: Model | Source, target: str | Target = "cortex-m4", inputs: list[np.ndarray] | None = None,
              *, profile: bool = False, seed: int = 0, tuning_log: Any = None, **session_kw: Any) -> dict[str, Any]:
    """Run a model once on a device (target name or ``"qemu-m4"``/``"host"``); outputs, totals and, with
    ``profile``, per-op instructions and cycles. ``tuning_log`` (a path or records, ``micronn.micro.tune``): layers
    tuned for this target run their best verified generated kernel (listed under ``"tuned"``)."""
    it = Interpreter(model)
    xs = inputs if inputs is not None else random_inputs(it.model, seed)
    with Session(target, **session_kw) as sess:
        dm = DeviceModel(it, sess, tuning_log=tuning_log)
        outputs = dm.invoke(xs)
        ops = dm.op_costs()
        name = sess.target.name if not (isinstance(target, str) and target.startswith("qemu-")) else target
    counted = [o for o in ops if o["instructions"] is not None]
    out: dict[str, Any] = {
        "device": name, "outputs": outputs,
        "instructions": sum(o["instructions"] for o in counted) if counted else None,
        "cycles": sum(o["cycles"] for o in counted) if counted else None,
        "tasks": len(dm.tasks),
    }
    if tuning_log is not None:
        out["tuned"] = dm.tuned
    if profile:
        out["ops"] = ops
    return out


def devices() -> list[dict[str, Any]]:
    """Every target (and its QEMU variant) with its backend and whether it can run here, or why not."""
    import importlib.util

    from micronn.micro.gdb import qemu_available
    from micronn.micro.target import TARGETS
    from micronn.micro.toolchain import ToolchainError, find_toolchain

    out = []
    for t in TARGETS.values():
        try:
            find_toolchain(t)
            tc = None
        except ToolchainError as e:
            tc = str(e)
        q = None if not t.qemu or qemu_available(t) else f"{t.qemu_binary} is not installed"
        if t.backend == "qemu":  # a QEMU-only preset (riscv32-qemu): listed once, under its own name
            out.append({"name": t.name, "cpu": t.cpu, "backend": f"qemu {t.qemu[0]}", "available": not (tc or q),
                        "reason": tc or q})
            continue
        uc = None if t.native or importlib.util.find_spec("unicorn") and importlib.util.find_spec("capstone") \
            else "pip install unicorn capstone"
        out.append({"name": t.name, "cpu": t.cpu, "backend": "host" if t.native else "unicorn",
                    "available": not (tc or uc), "reason": tc or uc})
        if t.qemu:
            out.append({"name": "qemu-" + t.name.removeprefix("cortex-"), "cpu": t.cpu, "backend": f"qemu {t.qemu[0]}",
                        "available": not (tc or q), "reason": tc or q})
    return out
