"""A model compiled for the host: the exported project's C (the same kernels and calls the firmware runs) built
as a shared library and called through ctypes, so one invoke costs one native call instead of an interpreter walk.

Inputs and outputs are numpy views of the library's own arena, bound once: ``set_input`` copies into the arena,
``invoke`` is one native call, ``get_output`` copies out. ``invoke_batch`` runs many samples in one native call (a
loop in C over stacked inputs and outputs: no Python per sample), which is what ``micronn.simulate`` uses for data
sets. The interpreter stays the reference: tests compare every output byte with it (and with the TFLM wheel) on
every model whose operators all have C kernels.

*Lanes*: a small model whose operators keep samples apart (``micronn.lanes.rows_reason``, with the operators whose
C kernels ``tests/export/test_native_lanes.py`` checks on real models) runs ``run_chunk`` as its twin
(``micronn.lanes.twin_model``): every tensor that depends on the sample ``lanes`` deep along its sample axis,
``lanes`` samples per invoke, each (where the model keeps state) from its own initial state. The kernels then see
a batch: weights are read once per ``lanes`` samples and the fixed cost of each call is shared, which is most of
the cost of a model of a few thousand multiply-accumulates (hello_world, keyword_scrambled, the LSTMs).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from micronn.errors import InvokeError, MicronnError
from micronn.export.codegen import generate
from micronn.interpreter import Interpreter, input_chunks
from micronn.ir import Model, op_macs
from micronn.lanes import LOOP_OPS, ROW_OPS, STATE_ROW_OPS, rows_reason, twin_model
from micronn.micro import lower
from micronn.micro.target import get_target
from micronn.micro.toolchain import Toolchain, cache_dir, find_toolchain
from micronn.planners import Sharing
from micronn.tflite.reader import Source, read

PREFIX = "mn_native"
# this machine's vector units, without contracting float multiply-adds (the reference rounds each operation)
FLAGS = ["-O3", "-march=native", "-ffp-contract=off"]
CHUNK = 256  # samples per native call of invoke_batch when the inputs come as an iterable
# Operators whose C kernels keep samples apart in a twin (tests/export/test_native_lanes.py checks each on real
# models)
LANE_OPS = ROW_OPS - {"DEQUANTIZE"} | STATE_ROW_OPS | LOOP_OPS  # (no C DEQUANTIZE)
# Samples per invoke of a lanes twin: a power of two, at most MAX_LANES, its arena (lanes x the model's) within
# LANE_ARENA bytes (in L2 with the weights) and its work within LANE_MACS multiply-accumulates (past that, the
# calls' fixed cost is already small). Measured on keyword_scrambled (best at 16), trained_lstm_int8 (8 to 16)
# and hello_world (64).
MAX_LANES, LANE_ARENA, LANE_MACS = 64, 192 << 10, 1 << 20
# Host ports of the hot kernels (x86-64 AVX2), each named as the portable kernel file it stands in for
HOST_PORTS = lower.include_dir() / "host"

# The batch loop, compiled beside the generated model: n samples of stacked inputs through one model, each input copied
# into the arena (or, for an input the generated model can bind, its readers pointed at the sample's bytes:
# {PREFIX}_bind_input, put back when the loop ends), one invoke, each output copied out. Stops at the first invoke that
# reports a failure (a non-zero status) and returns how many samples completed; *status holds the failing status. The
# sizes are the generated header's constants (in_bytes / out_bytes, the same values, are the caller's bookkeeping), so
# each copy compiles to a few moves; a model whose init does nothing (no variable tensors) skips the call per sample. A
# model whose every variable tensor is an SVDF's state, with the SVDF host port (MN_BATCH_EPOCH 1: _svdf_epoch), resets
# by bumping mnh_svdf_epoch instead (host/svdf.c: each call site then takes its state as init's without reading it);
# {PREFIX}_batch_reset (NativeModel.reset) is init and the bump, so the ports never see a stale epoch after an init.
BATCH_C = f"""/* {PREFIX}_batch.c: written by micronn (export/native.py), not part of the firmware. */
#include <stdint.h>
#include <string.h>
#include "{PREFIX}.h"

#define MN_BATCH_EPOCH @EPOCH@
#if MN_BATCH_EPOCH
extern uint32_t mnh_svdf_epoch __attribute__((visibility("hidden")));
extern int32_t mnh_svdf_tracks __attribute__((visibility("hidden")));
#endif

int32_t {PREFIX}_batch_reset(void) {{
    const int s = {PREFIX}_init();
#if MN_BATCH_EPOCH
    mnh_svdf_epoch++;
#endif
    return s;
}}

static int32_t batch_loop(int32_t n, int32_t reset, const uint8_t *const *in, uint8_t *const *out, int32_t *status) {{
@DECLS@
    *status = 0;
    for (int32_t k = 0; k < n; k++) {{
        if (reset && !STATELESS) {{
#if MN_BATCH_EPOCH
            if (mnh_svdf_tracks) mnh_svdf_epoch++;
            else
#endif
            {{
                const int s = {PREFIX}_batch_reset();
                if (s != 0) {{ *status = s; return k; }}
            }}
        }}
@COPY_IN@
        const int s = {PREFIX}_invoke();
        if (s != 0) {{ *status = s; return k; }}
@COPY_OUT@
    }}
    return n;
}}

int32_t {PREFIX}_batch(int32_t n, int32_t reset, const uint8_t *const *in, const size_t *in_bytes,
                       uint8_t *const *out, const size_t *out_bytes, int32_t *status) {{
    (void)in_bytes, (void)out_bytes;
    const int32_t done = batch_loop(n, reset, in, out, status);
@UNBIND@
    return done;
}}
"""


def batch_c(n_inputs: int, n_outputs: int, stateless: bool, epoch: bool = False, bound: Sequence[int] = ()) -> str:
    """BATCH_C for a model of ``n_inputs`` inputs and ``n_outputs`` outputs (sizes from the generated header; ``bound``:
    the inputs bound instead of copied);
    ``stateless``: its init does nothing, so no call per sample; ``epoch``: resets by the SVDF ports' epoch
    (``_svdf_epoch``)."""
    up = PREFIX.upper()
    decls = [f"    enum {{ STATELESS = {int(stateless)} }};"]
    decls += [f"    uint8_t *const in_at{i} = (uint8_t *){PREFIX}_input({i});"
              for i in range(n_inputs) if i not in bound]
    decls += [f"    const uint8_t *const out_at{j} = (const uint8_t *){PREFIX}_output({j});" for j in range(n_outputs)]
    copy_in = [f"        {PREFIX}_bind_input({i}, in[{i}] + (size_t)k * {up}_INPUT_{i}_BYTES);" if i in bound else
               f"        memcpy(in_at{i}, in[{i}] + (size_t)k * {up}_INPUT_{i}_BYTES, {up}_INPUT_{i}_BYTES);"
               for i in range(n_inputs)]
    unbind = [f"    {PREFIX}_bind_input({i}, NULL);" for i in bound]
    copy_out = [f"        memcpy(out[{j}] + (size_t)k * {up}_OUTPUT_{j}_BYTES, out_at{j}, {up}_OUTPUT_{j}_BYTES);"
                for j in range(n_outputs)]
    return (BATCH_C.replace("@EPOCH@", str(int(epoch))).replace("@DECLS@", "\n".join(decls))
            .replace("@COPY_IN@", "\n".join(copy_in)).replace("@COPY_OUT@", "\n".join(copy_out))
            .replace("@UNBIND@", "\n".join(unbind)))


def _stateless(model_c: str) -> bool:
    """Whether the generated model's init only returns 0 (no variable tensors to put back)."""
    return f"int {PREFIX}_init(void) {{\n    return 0;\n}}" in model_c


def _svdf_epoch(model: Model, variables: Sequence[tuple[int, int, int | str]], files: dict[str, str]) -> bool:
    """Whether the batch loop may reset by the SVDF host port's epoch: the port compiled in (``files``), one
    subgraph, and every variable tensor (``variables``: the program's, init's fills) an int16 SVDF state (input 4)
    that init fills with 0, read by that SVDF alone and written by no operator."""
    g = model.main
    states = [i for i, t in enumerate(g.tensors) if t.is_variable]
    if "svdf.portable.inc" not in files or len(model.subgraphs) != 1 or not states or len(variables) != len(states):
        return False
    if any(fill != 0 for _, _, fill in variables) or any(g.tensors[t].dtype != np.int16 for t in states):
        return False
    reads = [(op.op, i, t) for op in g.operators for i, t in enumerate(op.inputs) if t in states]
    written = {t for op in g.operators for t in op.outputs} | set(g.outputs)
    return (sorted(t for _, _, t in reads) == sorted(states) and all(op == "SVDF" and i == 4 for op, i, _ in reads)
            and not written & set(states))


def host_toolchain() -> Toolchain:
    """The compiler of native models: ``$CC`` when set; else zig's clang from the ``ziglang`` wheel (a dependency
    of micronn, so the same compiler on every machine; per-sample CPU time within about 15% of gcc 12's here,
    either way, and the same bytes); else the system ``cc``."""
    if not os.environ.get("CC"):
        try:
            import ziglang  # noqa: F401
        except ImportError:
            pass
        else:
            return Toolchain("host", [sys.executable, "-m", "ziglang", "cc"], [])
    return find_toolchain(get_target("host"))


def with_host_ports(files: dict[str, str]) -> dict[str, str]:
    """``files`` (a generated program's) with each kernel file that has a host port (``kernels/host/NAME.c``, same
    symbols and argument words, AVX2 code where the compiler targets it) replaced by the port; the portable file
    goes beside it as ``NAME.portable.inc``, which the port includes: its fallback without AVX2 and for the shapes it
    leaves to the portable kernel. The firmware never sees these files: only NativeModel builds with them."""
    out = dict(files)
    ported = False
    for port in sorted(HOST_PORTS.glob("*.c")):
        if port.name in files:
            out[port.name] = port.read_text()
            out[f"{port.stem}.portable.inc"] = files[port.name]
            ported = True
    if ported:
        out.update({h.name: h.read_text() for h in sorted(HOST_PORTS.glob("*.h"))})
    return out


def _library(files: dict[str, str]) -> Path:
    """The shared library of generated ``files`` (sources and library cached by their content)."""
    key = hashlib.sha256("".join(f"{k}\0{v}\0" for k, v in sorted(files.items())).encode()).hexdigest()[:24]
    src = cache_dir() / f"native-{key}"
    if not src.is_dir():
        tmp = Path(tempfile.mkdtemp(dir=cache_dir()))
        for name, text in files.items():
            (tmp / name).write_text(text)
        try:
            os.rename(tmp, src)  # atomic: concurrent builders agree
        except OSError:  # another process made it first
            shutil.rmtree(tmp, ignore_errors=True)
    return host_toolchain().shared_object(sorted(src.glob("*.c")), [src], FLAGS)


def lanes_reason(model: Model) -> str | None:
    """Why ``model`` runs one sample per invoke natively (None: it can run as a lanes twin)."""
    return rows_reason(model, LANE_OPS)


def _address(x: np.ndarray) -> int:
    """The address of a non-empty array's data: through the buffer protocol where the array is writable (a few
    times cheaper than ``x.ctypes.data``, which matters for run_chunk's small chunks), else ``x.ctypes.data``."""
    try:
        return ctypes.addressof(ctypes.c_char.from_buffer(x))
    except (TypeError, ValueError, BufferError):
        return x.ctypes.data


class NativeModel:
    """``NativeModel(model)``: ``set_input``/``invoke``/``get_output`` (or ``run(inputs)``) in native code,
    byte-identical to the interpreter.

    Each instance loads its own copy of the library, so instances keep separate arenas and state (``clone()``
    makes another without generating or compiling again: one per thread, as ctypes releases the GIL during the
    native call); ``reset()`` puts recurrent state back to its initial value (as ``Interpreter.reset``). Raises
    ``UnsupportedError`` naming every operator without a C kernel. ``host_ports=False`` builds the portable kernels
    only (the firmware's C), where by default the host ports (``with_host_ports``) replace the hot ones.
    """

    def __init__(self, model: Model | Source, *, host_ports: bool = True, lanes: int | None = None,
                 **interpreter_kw: Any):
        if lanes is not None and (isinstance(lanes, bool) or not isinstance(lanes, (int, np.integer)) or lanes < 1):
            raise MicronnError(f"lanes is a positive integer or None, got {lanes!r}")
        source = model if isinstance(model, Model) else read(model)
        self.model = source
        # sharing that leaves the arena's size as it is still saves copies here (aliased RESHAPEs, in-place CASTs),
        # and so do slices viewed in place at any word of a vector (the host reads every tensor unaligned)
        interpreter_kw.setdefault("sharing", Sharing(ties=True, align=4))
        self.program = generate(Interpreter(source, **interpreter_kw), PREFIX, fuse=True, bind_inputs=True)
        self._build = {"host_ports": host_ports, **interpreter_kw}
        self._wide: NativeModel | None = None
        self.why_one_lane = lanes_reason(source)
        if self.why_one_lane is not None:
            lanes = 1
        elif lanes is None:
            macs = sum(op_macs(source.main, op) for op in source.main.operators)
            fit = min(MAX_LANES, LANE_ARENA // max(self.program.arena_bytes, 1), LANE_MACS // max(macs, 1))
            lanes = 1 << (max(fit, 1).bit_length() - 1)
        self.lanes = int(lanes)
        files = {k: v for k, v in self.program.files.items() if k.endswith((".c", ".h"))}
        if host_ports:
            files = with_host_ports(files)
        files[f"{PREFIX}_batch.c"] = batch_c(len(self.program.inputs), len(self.program.outputs),
                                             _stateless(files[f"{PREFIX}.c"]),
                                             _svdf_epoch(source, self.program.variables, files),
                                             self.program.bound_inputs)
        self._load(_library(files))

    def clone(self) -> NativeModel:
        """Another instance of the same compiled model, with its own arena and state (in the initial state)."""
        other = object.__new__(NativeModel)
        other.model, other.program, other._build = self.model, self.program, self._build
        other.lanes, other.why_one_lane = self.lanes, self.why_one_lane
        wide = self._wide_model()
        other._wide = wide.clone() if wide is not None else None
        other._load(self._so)
        return other

    def _wide_model(self) -> NativeModel | None:
        """The lanes twin (built on first use: its kernels' objects are this model's, so only its model C
        compiles), or None with one lane."""
        if self._wide is None and self.lanes > 1:
            self._wide = NativeModel(twin_model(self.model, self.lanes), lanes=1, **self._build)
        return self._wide

    def _load(self, so: Path) -> None:
        self._so = so
        self._dir = tempfile.mkdtemp(prefix="micronn-native-")
        private = Path(self._dir) / so.name  # a path of its own: dlopen gives every instance its own statics
        shutil.copyfile(so, private)
        self._lib = ctypes.CDLL(str(private))
        addr = self._lib[f"{PREFIX}_input"]
        addr.restype, addr.argtypes = ctypes.c_void_p, [ctypes.c_int]
        out = self._lib[f"{PREFIX}_output"]
        out.restype, out.argtypes = ctypes.c_void_p, [ctypes.c_int]
        self.inputs = [self._view(addr(i), io) for i, io in enumerate(self.program.inputs)]
        self.outputs = [self._view(out(i), io) for i, io in enumerate(self.program.outputs)]
        self._init, self._invoke = self._lib[f"{PREFIX}_batch_reset"], self._lib[f"{PREFIX}_invoke"]
        self._batch = self._lib[f"{PREFIX}_batch"]
        self._batch.restype = ctypes.c_int32
        # no argtypes: run_chunk passes two ints (C ints) and ctypes objects (as pointers), which ctypes then
        # converts without a from_param call per argument (several microseconds a call, with argtypes, here)
        n_in, n_out = len(self.inputs), len(self.outputs)
        self._in_bytes = (ctypes.c_size_t * max(n_in, 1))(*(v.nbytes for v in self.inputs))
        self._out_bytes = (ctypes.c_size_t * max(n_out, 1))(*(v.nbytes for v in self.outputs))
        self._in_ptrs = (ctypes.c_void_p * max(n_in, 1))()
        self._out_ptrs = (ctypes.c_void_p * max(n_out, 1))()
        self._status = ctypes.c_int32(0)
        self._status_ref = ctypes.byref(self._status)
        self._init()

    @staticmethod
    def _view(addr: int, io: Any) -> np.ndarray:
        buf = (ctypes.c_char * max(io.nbytes, 1)).from_address(addr)
        return np.frombuffer(buf, np.dtype(io.dtype), count=int(np.prod(io.shape, dtype=np.int64))).reshape(io.shape)

    def reset(self) -> None:
        self._init()

    def set_input(self, x: np.ndarray, i: int = 0) -> None:
        """Copy ``x`` into input ``i`` (dtype and shape must match, as for the interpreter)."""
        if not 0 <= i < len(self.inputs):
            raise InvokeError(f"input {i} out of range: the model has {len(self.inputs)} inputs")
        x, view = np.asarray(x), self.inputs[i]
        if x.dtype != view.dtype or x.shape != view.shape:
            raise InvokeError(f"input {i} expects {view.dtype.name}{list(view.shape)}, got {x.dtype.name}"
                              f"{list(x.shape)}")
        view[...] = x

    def invoke(self) -> None:
        """One inference over the inputs set: a single native call. A kernel's failure (where TFLM fails the invoke:
        a GATHER position outside its axis, an int32 DIV by zero, ...) raises an ``InvokeError``."""
        status = self._invoke()
        if status:
            raise InvokeError(f"the native invoke failed: {self.failure(status)}")

    def failure(self, status: int) -> str:
        """What a non-zero status of this model's invoke means, naming the operator that stopped it."""
        try:
            op = ctypes.c_int32.in_dll(self._lib, f"{PREFIX}_failed_op").value
        except ValueError:  # a program with no fallible kernel has no failed_op
            op = -1
        ops = self.model.main.operators
        where = f"operator {op} ({ops[op].op})" if 0 <= op < len(ops) else "an operator"
        return f"{where}: {lower.KERNEL_FAILURES.get(status, f'status {status}')}"

    def get_output(self, i: int = 0) -> np.ndarray:
        """A copy of output ``i``."""
        if not 0 <= i < len(self.outputs):
            raise InvokeError(f"output {i} out of range: the model has {len(self.outputs)} outputs")
        return self.outputs[i].copy()

    def run(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Set every input, invoke, return copies of the outputs."""
        if len(inputs) != len(self.inputs):
            raise InvokeError(f"the model has {len(self.inputs)} inputs, {len(inputs)} given")
        for i, x in enumerate(inputs):
            self.set_input(x, i)
        self.invoke()
        return [y.copy() for y in self.outputs]

    def run_chunk(self, chunk: Sequence[np.ndarray], *, reset: bool = True
                  ) -> tuple[list[np.ndarray], int, int]:
        """``n`` samples in one native call: ``chunk`` holds one C-contiguous array per input, shaped
        ``(n, *input.shape)`` (or without the input's leading 1) and of its dtype (as
        ``micronn.interpreter.input_chunks`` yields them; anything else raises an ``InvokeError``, as the C loop
        reads whole samples from those addresses). Each sample starts from the initial state when ``reset``, else
        state carries over. With ``reset``, whole groups of ``lanes`` samples run on the lanes twin, the rest one
        by one.

        Returns the outputs (one array per output, ``(n, *output.shape)``), the number of samples completed and
        the status of the invoke that stopped the loop (0: all ``n`` completed); outputs past the completed samples
        are undefined."""
        n = self._check_chunk(chunk)
        outs = [np.empty((n, *v.shape), v.dtype) for v in self.outputs]
        k = self.lanes
        wide = n - n % k if reset and k > 1 else 0
        tail = outs
        if wide:  # the twin's samples are ``k`` of ours, back to back: the same arrays, a k-th of the count
            groups, status = self._wide_model()._run_into(chunk, outs, wide // k, True)
            if groups < wide // k:  # that group one sample at a time, to name the sample that fails
                at = groups * k
                done, one = self._run_into([x[at:] for x in chunk], [y[at:] for y in outs], k, True)
                return (outs, at + done, one) if done < k else (outs, at, status)
            if wide == n:
                return outs, n, 0
            chunk, tail = [x[wide:] for x in chunk], [y[wide:] for y in outs]
        done, status = self._run_into(chunk, tail, n - wide, reset)
        return outs, wide + done, status

    def _check_chunk(self, chunk: Sequence[np.ndarray]) -> int:
        """The number of samples in ``chunk``, after checking that it is what ``run_chunk`` reads."""
        if len(chunk) != len(self.inputs):
            raise InvokeError(f"the model has {len(self.inputs)} input(s), a chunk of {len(chunk)} array(s) given")
        n = len(chunk[0]) if chunk and isinstance(chunk[0], np.ndarray) and chunk[0].ndim else 0
        for i, (x, view) in enumerate(zip(chunk, self.inputs)):
            if (not isinstance(x, np.ndarray) or x.dtype != view.dtype or len(x) != n or not x.flags.c_contiguous
                    or x.shape[1:] != view.shape and not (view.shape[:1] == (1,) and x.shape[1:] == view.shape[1:])):
                got = f"{x.dtype.name}{list(x.shape)}" if isinstance(x, np.ndarray) else type(x).__name__
                raise InvokeError(f"chunk input {i} must be a C-contiguous {view.dtype.name}{[n, *view.shape]} "
                                  f"array (samples first), got {got}")
        return n

    def _run_into(self, chunk: Sequence[np.ndarray], outs: Sequence[np.ndarray], n: int, reset: bool
                  ) -> tuple[int, int]:
        """The batch loop over the first ``n`` samples of ``chunk`` into ``outs`` (C-contiguous arrays of whole
        samples): samples completed and the failing status."""
        if n <= 0:
            return 0, 0
        for i, x in enumerate(chunk):
            self._in_ptrs[i] = _address(x)
        for j, y in enumerate(outs):
            self._out_ptrs[j] = _address(y)
        done = self._batch(n, 1 if reset else 0, self._in_ptrs, self._in_bytes, self._out_ptrs, self._out_bytes,
                           self._status_ref)
        return done, self._status.value

    def invoke_batch(self, inputs: Any, *, stream: bool = False) -> list[np.ndarray]:
        """One invoke per sample, as ``Interpreter.invoke_batch`` (same inputs, same per-sample state semantics:
        each sample from the initial state unless ``stream``), the loop over samples in C, ``CHUNK`` samples per
        native call. An invoke that reports a failure raises an ``InvokeError`` naming the sample."""
        tensors = [self.model.main.tensors[t] for t in self.model.main.inputs]
        parts: list[list[np.ndarray]] = []
        k = 0
        for chunk in input_chunks(inputs, tensors, CHUNK):
            outs, done, status = self.run_chunk(
                [np.ascontiguousarray(x, v.dtype) for x, v in zip(chunk, self.inputs)], reset=not stream)
            if done < len(chunk[0]):
                raise InvokeError(f"sample {k + done}: the native invoke failed: {self.failure(status)}")
            parts.append(outs)
            k += done
        if not parts:
            return [np.zeros((0, *v.shape), v.dtype) for v in self.outputs]
        return [np.concatenate([p[j] for p in parts]) for j in range(len(self.outputs))]

    def __del__(self) -> None:
        shutil.rmtree(getattr(self, "_dir", ""), ignore_errors=True)
