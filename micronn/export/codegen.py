"""C source for one model: the constants, a static arena at the planner's offsets, and one kernel call per task.

The tasks come from ``micronn.micro.lower`` (the same lowering the host-driven runtime uses): each is a kernel
symbol and its argument words. Here the words become a ``static const`` array per call whose pointers are
address constants (``arena + offset`` or a constant array), so the program computes nothing at start-up and
holds no tables beyond what the kernels read. The arena keeps the plan's head as planned; of the tail only the
variable tensors and kernel buffers some task reads are kept, packed after the head (TFLM's bookkeeping lives in
its tail, and this program has none).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from micronn.errors import MicronnError
from micronn.interpreter import Interpreter
from micronn.micro import lower, templates
from micronn.planners import align

# the element types the generated header names (TfLiteType's order is not needed: these are micronn's own)
TYPES = {"int8": 0, "uint8": 1, "int16": 2, "int32": 3, "float32": 4, "int64": 5, "bool": 6, "uint16": 7,
         "uint32": 8, "float16": 9, "float64": 10}
_KERNEL = re.compile(r"^void\s+(mn_\w+)\s*\(\s*const\s+mn_word\s*\*\s*\w+\s*\)", re.M)


class ExportError(MicronnError):
    """A model cannot be written as a standalone program (see the message for what and why)."""


def kernel_files() -> dict[str, Path]:
    """Kernel symbol -> the C file that defines it."""
    out = {}
    for path in lower.sources():
        for sym in _KERNEL.findall(path.read_text()):
            out[sym] = path
    return out


@dataclass
class IoInfo:
    """A model input or output as the generated program exposes it."""

    name: str
    dtype: str
    shape: list[int]
    scale: float
    zero_point: int
    nbytes: int
    arena_offset: int | None  # None: a constant (its data is in the program)

    def to_dict(self) -> dict[str, Any]:
        return dict(vars(self))


@dataclass
class Program:
    """What ``generate`` made: file name -> C text, and the facts the project's metadata records."""

    prefix: str
    files: dict[str, str]
    arena_bytes: int
    const_bytes: int
    kernels: list[str]
    inputs: list[IoInfo]
    outputs: list[IoInfo]
    calls: int
    ops: list[tuple[int, str, str]] = field(default_factory=list)  # per kernel call: (operator, op name, kernel)
    storage: dict[int, int] = field(default_factory=dict)  # spilled tensors: storage id -> bytes
    # what init sets: (arena offset, bytes, fill byte or the constant copied in)
    variables: list[tuple[int, int, int | str]] = field(default_factory=list)
    tuned: list[dict[str, Any]] = field(default_factory=list)  # calls a tuning log gave a generated kernel
    fallible: bool = False  # some call can fail (lower.fallible): model_invoke then returns its code
    # inputs whose readers' address words {prefix}_bind_input can point elsewhere (generate's bind_inputs)
    bound_inputs: list[int] = field(default_factory=list)


def _c_bytes(data: bytes) -> str:
    rows = [", ".join(f"0x{b:02x}" for b in data[i:i + 16]) for i in range(0, len(data), 16)]
    return "{\n    " + ",\n    ".join(rows) + "\n}" if rows else "{0}"


def _c_string(s: str) -> str:
    return '"' + "".join(c if c.isprintable() and c not in '"\\' else f"\\{ord(c):03o}" for c in s) + '"'


def _float(x: float) -> str:
    return repr(float(x)) + "f" if np.isfinite(x) else "0.0f"


class _Generator:
    def __init__(self, it: Interpreter, prefix: str, tuning: tuple[Any, str] | None = None, fuse: bool = False,
                 bind_inputs: bool = False):
        self.it, self.p, self.tuning, self.fuse, self.bind_inputs = it, prefix, tuning, fuse, bind_inputs
        self.buf = it._arena.buf
        self.base = self.buf.ctypes.data
        self.head = it.head
        self.tail = sorted(it._arena.tail, key=lambda e: e.offset)
        self.kept: dict[int, int] = {}  # tail entry offset -> its offset in the program's arena
        self.consts: dict[bytes, str] = {}  # content -> symbol
        self.const_order: list[tuple[str, bytes]] = []
        self.lists: list[str] = []  # the argument arrays of calls other kernels make (TaskList), in C

    # -- addresses --------------------------------------------------------------------------------------------
    def _arena_offset(self, view: np.ndarray) -> int | None:
        off = view.ctypes.data - self.base
        inside = 0 <= off < len(self.buf) or (off == len(self.buf) and view.nbytes == 0)
        if not inside:
            return None
        if off < self.head or view.nbytes == 0 and off <= self.head:
            return off
        entry = next((e for e in self.tail if e.offset <= off < e.offset + max(e.size, 1)), None)
        if entry is None:
            raise ExportError(f"a buffer at arena offset {off} is neither planned nor in the tail")
        if entry.offset not in self.kept:
            used = max([self.head] + [o + e.size for e in self.tail if (o := self.kept.get(e.offset)) is not None])
            self.kept[entry.offset] = align(used)
        return self.kept[entry.offset] + off - entry.offset

    def _const(self, data: np.ndarray, hint: str) -> str:
        blob = np.ascontiguousarray(data).tobytes()
        if blob not in self.consts:
            sym = f"{self.p}_{hint}{len(self.consts)}"
            self.consts[blob] = sym
            self.const_order.append((sym, blob))
        return self.consts[blob]

    def expr(self, arg: Any) -> str:
        """A C address constant or integer for one argument word."""
        if isinstance(arg, int | np.integer):
            v = int(arg)
            return str(v) if v >= 0 else f"(mn_word)({v})"
        if isinstance(arg, lower.ConstRef):
            return f"(mn_word){self._const(arg.data, 'c')}"
        if isinstance(arg, lower.StorageRef):
            return f"(mn_word){self.p}_storage"
        if isinstance(arg, lower.TaskList):  # n, then (kernel, its argument words) per call
            words = [str(len(arg.tasks))]
            for t in arg.tasks:
                name = f"{self.p}_sub{len(self.lists)}"
                self.lists.append(f"static const mn_word {name}[] = {{" +
                                  ", ".join([self.expr(a) for a in lower.read_args(t)] or ["0"]) + "};")
                words += [f"(mn_word){t.symbol}", f"(mn_word){name}"]
            name = f"{self.p}_list{len(self.lists)}"
            self.lists.append(f"static const mn_word {name}[] = {{" + ", ".join(words) + "};")
            return f"(mn_word){name}"
        if isinstance(arg, lower.TensorRef):
            view = self.it._all_views[arg.subgraph][arg.tensor]
            where = f"tensor {arg.tensor}"
        elif isinstance(arg, lower.ScratchRef):
            view = self.it._all_nodes[arg.subgraph][arg.op].scratch_views[arg.scratch]
            where = f"scratch {arg.scratch} of operator {arg.op}"
            if view is None:
                raise ExportError(f"{where} has no memory")
        else:
            raise ExportError(f"cannot place argument {arg!r}")
        off = self._arena_offset(view)
        if off is not None:
            return f"(mn_word)({self.p}_arena + {off})"
        if isinstance(arg, lower.ScratchRef):
            raise ExportError(f"{where} is not in the arena")
        return f"(mn_word){self._const(view, 't')}"

    # -- the program ------------------------------------------------------------------------------------------
    def io(self, tensors: list[int]) -> list[IoInfo]:
        out = []
        for t in tensors:
            tensor, view = self.it.subgraph.tensors[t], self.it._views[t]
            q = tensor.quant
            scale = float(q.scale[0]) if q is not None and len(q.scale) else 0.0
            zp = int(q.zero_point[0]) if q is not None and len(q.zero_point) else 0
            if view.dtype.name not in TYPES:
                raise ExportError(f"model input/output {tensor.name!r} has type {view.dtype.name}, which the "
                                  "generated header cannot describe")
            out.append(IoInfo(tensor.name, view.dtype.name, [int(d) for d in view.shape], scale, zp, int(view.nbytes),
                              self._arena_offset(view)))
        return out

    def generate(self) -> Program:
        it, p = self.it, self.p
        tasks = lower.lower_model(it, self.fuse)
        files, tuned = kernel_files(), []
        if self.tuning is not None:  # layers the log tuned for this target call their generated kernels
            tasks, generated, tuned = templates.apply(tasks, *self.tuning)
            files.update({t["symbol"]: path for t, path in zip(tuned, generated)})
            files.update({sym: path for path in generated for sym in _KERNEL.findall(path.read_text())})
        def nested(ts: list[lower.Task]) -> set[str]:
            return {t.symbol for t in ts} | {s for t in ts for a in t.args if isinstance(a, lower.TaskList)
                                             for s in nested(a.tasks)}

        symbols = sorted(nested(tasks))
        missing = [s for s in symbols if s not in files]
        if missing:
            raise ExportError(f"no C source defines {', '.join(missing)}")
        calls = [(t, [self.expr(a) for a in lower.read_args(t)]) for t in tasks]
        inputs, outputs = self.io(list(it.subgraph.inputs)), self.io(list(it.subgraph.outputs))
        variables = []
        for t in it.subgraph.tensors:
            if t.is_variable:
                off = self._arena_offset(it._views[t.index])
                if off is None:
                    raise ExportError(f"variable tensor {t.name!r} is not in the arena")
                fill = int(np.int8(t.zero_point).view(np.uint8)) if t.dtype == np.int8 else 0
                variables.append((off, int(t.nbytes), fill))
        var_offsets = {off for off, _, _ in variables}
        for e in self.tail:  # kernel buffers filled in prepare (not state): their bytes are copied in at init
            o = self.kept.get(e.offset)
            if o is not None and o not in var_offsets and e.size:
                sym = self._const(self.buf[e.offset:e.offset + e.size], "p")
                variables.append((o, e.size, sym))
        kept_end = [o + e.size for e in self.tail if (o := self.kept.get(e.offset)) is not None]
        arena = align(max([self.head] + kept_end))
        const_bytes = sum(len(b) for _, b in self.const_order)
        ops = [(t.op, it._nodes[t.op].op.op, t.symbol) for t, _ in calls]
        storage = {int(k.id): int(n.inputs[0].nbytes) for n, k in zip(it._nodes, it._kernels) if n.op.op == "Spill"}
        self.binds = self._binds(tasks) if self.bind_inputs else {}
        prog = Program(p, {}, arena, const_bytes, symbols, inputs, outputs, len(calls), ops, storage, variables, tuned,
                       any(lower.fallible(t) for t in tasks), sorted(self.binds))
        prog.files[f"{p}.h"] = self._header(prog)
        prog.files[f"{p}.c"] = self._source(prog, calls)
        prog.files[f"{p}_data.c"] = self._data()
        if storage:
            prog.files[f"{p}_storage.c"] = self._storage(storage)
        for sym in symbols:
            prog.files.setdefault(files[sym].name, files[sym].read_text())
        for h in sorted(lower.include_dir().glob("*.h")):  # the kernels' shared headers
            prog.files[h.name] = h.read_text()
        config = lower.kernel_config(tasks)
        if config:  # the generic kernels' paths no call takes, compiled out (mn_kernels.h includes it)
            prog.files["mn_config.h"] = ("/* mn_config.h: generated by micronn; the kernel paths this program never "
                                         "takes. */\n" + "".join(f"#define {k} {v}\n" for k, v in config.items()))
        return prog

    def _header(self, prog: Program) -> str:
        P, p = self.p.upper(), self.p
        lines = [f"/* {p}.h: generated by micronn; the interface of the model {p}.c runs. */",
                 f"#ifndef {P}_H", f"#define {P}_H", "", "#include <stddef.h>", "#include <stdint.h>", "",
                 f"#define {P}_ARENA_BYTES {prog.arena_bytes}u  /* RAM of the activations, one static buffer */",
                 f"#define {P}_NUM_INPUTS {len(prog.inputs)}", f"#define {P}_NUM_OUTPUTS {len(prog.outputs)}", "",
                 "/* element types of " + ", ".join(f"{k} = {v}" for k, v in TYPES.items()) + " */",
                 f"typedef struct {{\n    const char *name;\n    int type;\n    int rank;\n    int32_t dims[8];\n"
                 f"    size_t bytes;\n    float scale;       /* real = scale * (q - zero_point); 0 if not quantized */"
                 f"\n    int32_t zero_point;\n}} {p}_tensor_info;", "",
                 f"extern const {p}_tensor_info {p}_input_info[{max(len(prog.inputs), 1)}];",
                 f"extern const {p}_tensor_info {p}_output_info[{max(len(prog.outputs), 1)}];", "",
                 f"/* Put the variable tensors (recurrent state) in their initial state; call once before {p}_invoke"
                 " and again to start a new stream. Returns 0. */",
                 f"int {p}_init(void);",
                 f"/* One inference: reads {p}_input(i), writes {p}_output(i). Returns 0. Not reentrant. */"
                 if not prog.fallible else
                 f"/* One inference: reads {p}_input(i), writes {p}_output(i). Not reentrant. Returns 0, or on a "
                 "failure the non-zero code of the kernel that stopped ("
                 + "; ".join(f"{code}: {what}" for code, what in lower.KERNEL_FAILURES.items())
                 + f"; else what {p}_storage returned when a spilled tensor could not be written or read back): the "
                 f"invoke stopped there, {p}_failed_op names the operator (in model order) and the outputs are not "
                 "valid. */",
                 f"int {p}_invoke(void);",
                 *([f"extern int32_t {p}_failed_op;  /* -1 unless the last {p}_invoke failed */"] if prog.fallible
                   else []),
                 f"void *{p}_input(int i);       /* NULL if i is out of range */",
                 f"const void *{p}_output(int i);", "",
                 *([f"/* Host only (NativeModel's batch loop): the kernels reading input i (one of {prog.bound_inputs})"
                    " read it at `at` instead of {p}_input(i); NULL puts them back. */",
                    f"void {p}_bind_input(int i, const void *at);", ""] if self.bind_inputs else [])]
        if prog.storage:
            lines += [f"/* Where spilled tensors go: copy n bytes between buf and byte `offset` of the tensor stored "
                      f"under `id` (write 1: into storage); 0 on success. {p}_storage.c keeps them in a "
                      f"{P}_STORAGE_BYTES-byte area of the STORAGE memory region; replace it with your board's "
                      "external RAM or flash driver. */",
                      f"#define {P}_STORAGE_BYTES {sum(align(n) for n in prog.storage.values())}u",
                      f"int {p}_storage(uint32_t id, uint32_t offset, void *buf, uint32_t n, uint32_t write);", ""]
        for kind, infos in (("INPUT", prog.inputs), ("OUTPUT", prog.outputs)):
            for i, io in enumerate(infos):
                lines.append(f"/* {kind.lower()} {i} {io.name!r}: {io.dtype} {io.shape}, scale {io.scale:g}, "
                             f"zero point {io.zero_point} */")
                lines.append(f"#define {P}_{kind}_{i}_BYTES {io.nbytes}u")
        lines += ["", f"#endif /* {P}_H */", ""]
        return "\n".join(lines)

    def _binds(self, tasks: list[lower.Task]) -> dict[int, list[tuple[int, int]]]:
        """Input position -> (call, word) of every argument word holding its address, for each model input that
        only those words read: every operator reading it has such a word (no view of it without a kernel, no
        control-flow subgraph reading it) and it is no model output."""
        g = self.it.subgraph

        def named(ts: list[lower.Task]) -> set[int]:  # tensor indices the calls of control-flow subgraphs name
            lists = [a for t in ts for a in t.args if isinstance(a, lower.TaskList)]
            return {b.tensor for a in lists for u in a.tasks for b in u.args if isinstance(b, lower.TensorRef)}.union(
                *(named(a.tasks) for a in lists))

        nested = named(tasks)
        out: dict[int, list[tuple[int, int]]] = {}
        for i, x in enumerate(g.inputs):
            if x in g.outputs or x in nested or g.tensors[x].nbytes == 0:
                continue
            words = [(c, k) for c, t in enumerate(tasks) for k, a in enumerate(lower.read_args(t))
                     if isinstance(a, lower.TensorRef) and a.subgraph == 0 and a.tensor == x]
            readers = {op.index for op in g.operators if x in op.inputs}
            if words and readers <= {tasks[c].op for c, _ in words}:
                out[i] = words
        return out

    def _source(self, prog: Program, calls: list) -> str:
        p = self.p
        out = [f"/* {p}.c: generated by micronn. {prog.calls} kernel calls over a {prog.arena_bytes:,}-byte arena; "
               "every argument is fixed at build time. */",
               f'#include "{p}.h"', '#include "mn_kernels.h"', "",
               *(f"void {s}(const mn_word *args);" for s in prog.kernels), "",
               *(f"extern const uint8_t {sym}[{len(blob)}];" for sym, blob in self.const_order), "",
               f"static uint8_t {p}_arena[{max(prog.arena_bytes, 16)}] __attribute__((aligned(16)));", "",
               *self.lists, *([""] if self.lists else [])]
        rebound = {c for words in self.binds.values() for c, _ in words}
        for i, (task, args) in enumerate(calls):
            node = self.it._nodes[task.op]
            out.append(f"/* operator {task.op} {node.op.op} */")
            const = "" if i in rebound else "const "
            out.append(f"static {const}mn_word {p}_args{i}[] = {{" + ", ".join(args or ["0"]) + "};")
        out.append("")

        def infos(kind: str, items: list[IoInfo]) -> str:
            rows = []
            for io in items:
                dims = ", ".join(map(str, io.shape)) or "0"
                rows.append(f"    {{{_c_string(io.name)}, {TYPES[io.dtype]}, {len(io.shape)}, {{{dims}}}, {io.nbytes}, "
                            f"{_float(io.scale)}, {io.zero_point}}},")
            return f"const {p}_tensor_info {p}_{kind}_info[{max(len(items), 1)}] = {{\n" + \
                "\n".join(rows or ["    {0}"]) + "\n};"

        def where(io: IoInfo) -> str:
            if io.arena_offset is not None:
                return f"{p}_arena + {io.arena_offset}"
            raise ExportError(f"model input/output {io.name!r} is a constant: nothing to read or write")

        out += [infos("input", prog.inputs), infos("output", prog.outputs), ""]
        out.append(f"int {p}_init(void) {{")
        for off, n, fill in prog.variables:
            out.append(f"    memset({p}_arena + {off}, {fill}, {n});" if isinstance(fill, int) else
                       f"    memcpy({p}_arena + {off}, {fill}, {n});")
        out += ["    return 0;", "}", ""]
        if prog.fallible:  # kernels that can fail leave their code in mn_status: stop there and say where
            out += ["extern int32_t mn_status;  /* the kernels' error channel (kernels/spill.c) */",
                    f"int32_t {p}_failed_op = -1;", "", f"static int {p}_stop(int32_t op) {{",
                    "    const int code = (int)mn_status;", "    mn_status = 0;", f"    {p}_failed_op = op;",
                    "    return code;", "}", ""]
        out += [f"int {p}_invoke(void) {{"]
        if prog.fallible:
            out.append(f"    {p}_failed_op = -1;")
        for i, (task, _) in enumerate(calls):
            out.append(f"    {task.symbol}({p}_args{i});")
            if lower.fallible(task):
                out.append(f"    if (mn_status != 0) return {p}_stop({task.op});")
        out += ["    return 0;", "}", "", f"void *{p}_input(int i) {{", "    switch (i) {"]
        out += [f"    case {i}: return {where(io)};" for i, io in enumerate(prog.inputs)]
        out += ["    default: return NULL;", "    }", "}", "", f"const void *{p}_output(int i) {{", "    switch (i) {"]
        out += [f"    case {i}: return {where(io)};" for i, io in enumerate(prog.outputs)]
        out += ["    default: return NULL;", "    }", "}", ""]
        if self.bind_inputs:
            out += [f"void {p}_bind_input(int i, const void *at) {{", "    switch (i) {"]
            for i, words in sorted(self.binds.items()):
                out.append(f"    case {i}: {{")
                out.append(f"        const mn_word a = at ? (mn_word)at : (mn_word)({where(prog.inputs[i])});")
                out += [f"        {p}_args{c}[{k}] = a;" for c, k in words]
                out += ["        break;", "    }"]
            out += ["    default: break;", "    }", "}", ""]
        return "\n".join(out)

    def _storage(self, storage: dict[int, int]) -> str:
        p, P = self.p, self.p.upper()
        out = [f"/* {p}_storage.c: generated by micronn: the spilled tensors' storage, a plain memory area. */",
               f'#include "{p}.h"', '#include "mn_kernels.h"', "",
               f"static uint8_t {p}_storage_area[{P}_STORAGE_BYTES]",
               '    __attribute__((section(".storage"), aligned(16)));',
               "", f"int {p}_storage(uint32_t id, uint32_t offset, void *buf, uint32_t n, uint32_t write) {{",
               "    uint32_t base, size;", "    switch (id) {"]
        base = 0
        for sid, n in sorted(storage.items()):
            out.append(f"    case {sid}u: base = {base}u; size = {n}u; break;")
            base += align(n)
        out += ["    default: return -1;", "    }", "    if (offset > size || n > size - offset) return -2;",
                f"    if (write) memcpy({p}_storage_area + base + offset, buf, n);",
                f"    else memcpy(buf, {p}_storage_area + base + offset, n);", "    return 0;", "}", ""]
        return "\n".join(out)

    def _data(self) -> str:
        out = [f"/* {self.p}_data.c: generated by micronn: weights and precomputed per-channel parameters (flash). */",
               "#include <stdint.h>", ""]
        for sym, blob in self.const_order:
            out.append(f"const uint8_t {sym}[{max(len(blob), 1)}] __attribute__((aligned(16))) = {_c_bytes(blob)};")
        out.append("")
        return "\n".join(out)


def generate(it: Interpreter, prefix: str = "model", tuning_log: Any = None, target: str = "", *,
             fuse: bool = False, bind_inputs: bool = False) -> Program:
    """The C files of a model prepared by ``it`` (allocated: its plan fixes every address); with ``tuning_log``
    (``micronn.micro.tune``), layers it tuned for ``target`` get their best generated kernel; ``fuse``: runs of int32
    elementwise operators become one kernel call each (``micronn.micro.lower.fuse_chains``) and a depthwise
    convolution of a one-channel image the CONV_2D it is (``lower_model``); ``bind_inputs``: a
    ``{prefix}_bind_input`` lets a batch loop point the kernels at each sample's input instead of copying it in."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", prefix):
        raise ExportError(f"the prefix must be a C identifier, got {prefix!r}")
    it._ensure()
    return _Generator(it, prefix, None if tuning_log is None else (tuning_log, target), fuse, bind_inputs).generate()
