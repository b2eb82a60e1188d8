"""Fuzz micronn with mutated models, optionally against the TFLM wheel: ``python -m micronn.testing.fuzz``.

Every case mutates one seed model (each ``micronn/models/*.tflite`` and ``tests/models/*.tflite``), either
byte by byte (bit flips, byte sets, interesting integers, truncation, splices) or through micronn's own IR
and writer (shapes, ranks, dtypes, quantization, options, operands, op codes, subgraphs, metadata, constant
data, ...), and runs it in a long-lived worker process under a memory limit, the parent enforcing a time
limit. Each case ends in one class:

``ran``, ``error`` (a clean ``MicronnError``), ``skipped`` (the writer refused the mutation), ``slow`` (its
shapes ask for more arithmetic than ``--max-macs``: not run), ``leaked`` (any other exception), ``crash`` (the
worker died), ``hang`` (time limit), ``memory`` (MemoryError or the memory limit), and with ``--differential``
``mismatch`` (micronn's outputs differ from the wheel's, or micronn ran a model whose wheel result is
undefined: two fresh wheel interpreters disagree), ``oracle-refused``, ``oracle-crash`` and ``oracle-hang``
(the wheel refused, crashed or hung on a model micronn ran: the oracle's problem, not micronn's).

A case depends only on ``--seed`` and its index, so ``--only INDEX`` replays it; ``--out DIR`` keeps a
reproducer (model, inputs, description) of every leaked, crash, hang, memory and mismatch case.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import multiprocessing as mp
import os
import pickle
import random
import resource
import select
import signal
import sys
import time
import traceback
import warnings
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

import numpy as np

import micronn
from micronn import ir
from micronn.errors import MicronnError
from micronn.tflite import schema
from micronn.tflite.reader import read
from micronn.tflite.writer import write

__all__ = [
    "CLASSES",
    "Case",
    "Config",
    "Pool",
    "check_model",
    "default_models",
    "estimate_macs",
    "format_summary",
    "fuzz",
    "main",
    "make_case",
    "summarize",
]

# Every class a case can end in, in report order; FAILURES must stay at zero.
CLASSES = ("ran", "error", "skipped", "slow", "leaked", "crash", "hang", "memory", "mismatch",
           "oracle-refused", "oracle-crash", "oracle-hang")
FAILURES = ("leaked", "crash", "hang", "mismatch")
SAVED = ("leaked", "crash", "hang", "memory", "mismatch")
BYTE_MUTATIONS = ("flip", "set", "int", "truncate", "splice")
STRUCTURE_MUTATIONS = ("shape", "reshape", "rank", "dtype", "quant", "options", "operands", "io", "opcode",
                       "subgraph", "metadata", "data", "variable", "ops")

_PACKAGE = Path(micronn.__file__).resolve().parent
_LIBRARY_FRAMES = str(_PACKAGE) + os.sep
_HARNESS_FRAMES = str(_PACKAGE / "testing") + os.sep


# Seeds made from bundled models rather than read from a file ("kind:model"): packed int4 weights and look-up-table
# compression (metadata and DECODE), so mutations reach the reader's unpacking and COMPRESSION_METADATA parsing.
DERIVED_SEEDS = ("int4:person_detect", "lut:keyword_scrambled", "lut:micro_speech_quantized",
                 "decode:hello_world_int8")


def default_models() -> list[str]:
    """The seed corpus: the bundled models, then ``tests/models`` when running from a checkout, then the derived
    seeds."""
    paths = sorted((_PACKAGE / "models").glob("*.tflite"))
    tests = _PACKAGE.parent / "tests" / "models"
    if tests.is_dir():
        paths += sorted(tests.glob("*.tflite"))
    return [str(p) for p in paths] + list(DERIVED_SEEDS)


def derived_seed(spec: str) -> bytes:
    """The bytes of a derived seed ``kind:model`` (see :data:`DERIVED_SEEDS`)."""
    from micronn.compress import compress
    from micronn.models import bundled_model

    kind, name = spec.split(":", 1)
    base = bundled_model(name)
    if kind == "int4":  # every int8 convolution and FULLY_CONNECTED weight as int4 (values / 16, scales x 16)
        model = read(base)
        for op in model.main.operators:
            t = model.main.tensors[op.inputs[1]] if len(op.inputs) > 1 and op.inputs[1] >= 0 else None
            if op.op in ("CONV_2D", "DEPTHWISE_CONV_2D") and t is not None and t.dtype == np.int8 and t.is_constant:
                t.data = np.clip(np.round(t.data / 16), -8, 7).astype(np.int8).view(ir.INT4)
                t.dtype = ir.INT4
                t.quant = ir.Quantization(t.quant.scale * 16, t.quant.zero_point, t.quant.axis)
        return bytes(write(model))
    if kind in ("lut", "decode"):
        return compress(base, bits=4, format="metadata" if kind == "lut" else "decode", min_bytes=0, force=True)[0]
    raise ValueError(f"unknown derived seed {spec!r}")


@dataclass
class Config:
    """What every worker needs to make and run a case; picklable so it travels to the workers."""

    models: list[str] = field(default_factory=default_models)
    seed: int = 0
    kind: str = "both"  # bytes | structure | both
    differential: bool = False
    differential_every: int = 1  # with differential: check every n-th case that ran (1: all of them)
    max_macs: int = 500_000_000
    timeout: float = 10.0
    max_loop_iterations: int = 10_000  # WHILE: a fuzzed condition that never turns false ends in InvokeError


# ---- cases ------------------------------------------------------------------------------------------------------


@dataclass
class Case:
    """One mutated model. ``data`` is None when the mutation could not be written (a skipped case)."""

    index: int
    model: str
    kind: str  # "bytes" or "structure"
    mutation: str  # one of BYTE_MUTATIONS or STRUCTURE_MUTATIONS
    detail: str
    data: bytes | None
    skipped: str | None = None

    @property
    def label(self) -> str:
        return f"{self.kind}.{self.mutation}"

    def info(self) -> dict[str, Any]:
        return {"index": self.index, "model": self.model, "kind": self.kind, "mutation": self.mutation,
                "label": self.label, "detail": self.detail}


@dataclass
class _Seed:
    name: str
    data: bytes
    structure: list[tuple[int, int]]  # byte ranges outside constant data: where byte mutations mostly land


_SEEDS: dict[str, _Seed] = {}


def _seed(path: str) -> _Seed:
    """A seed model, loaded once per process."""
    if path not in _SEEDS:
        derived = path in DERIVED_SEEDS
        data = derived_seed(path) if derived else Path(path).read_bytes()
        base = np.frombuffer(data, np.uint8).ctypes.data
        spans = sorted((t.data.ctypes.data - base, t.data.ctypes.data - base + t.data.nbytes)
                       for sg in read(data).subgraphs for t in sg.tensors if t.data is not None and t.data.nbytes)
        spans = [(lo, hi) for lo, hi in spans if 0 <= lo < hi <= len(data)]  # unpacked data lives elsewhere
        structure, at = [], 0
        for lo, hi in spans:
            if lo > at:
                structure.append((at, lo))
            at = max(at, hi)
        if at < len(data):
            structure.append((at, len(data)))
        _SEEDS[path] = _Seed(path if derived else Path(path).stem, data, structure or [(0, len(data))])
    return _SEEDS[path]


def make_case(config: Config, index: int) -> Case:
    """Case ``index`` of the campaign ``config.seed``: the same bytes in every process and every run."""
    rng = random.Random(f"micronn.fuzz/{config.seed}/{index}")
    kind = config.kind if config.kind != "both" else ("bytes", "structure")[index % 2]
    seed = _seed(rng.choice(config.models))
    if kind == "bytes":
        mutation = rng.choice(BYTE_MUTATIONS)
        data, detail = _BYTE_MUTATORS[mutation](seed, config, rng)
        return Case(index, seed.name, kind, mutation, detail, data)
    if kind != "structure":
        raise ValueError(f"unknown mutation kind {kind!r}")
    model = read(seed.data)
    for _ in range(8):  # some mutations do not apply to some models: draw another
        mutation = rng.choice(STRUCTURE_MUTATIONS)
        try:
            detail = _STRUCTURE_MUTATORS[mutation](model, rng)
            break
        except _NotApplicable:
            continue
    else:
        return Case(index, seed.name, kind, mutation, "no applicable mutation", None, "not applicable")
    for sg_index, sg in enumerate(model.subgraphs):
        sg.index = sg_index
        for op_index, op in enumerate(sg.operators):
            op.index = op_index
    try:
        data = write(model)
    except Exception as e:  # the writer refuses what it cannot express: a skipped case
        return Case(index, seed.name, kind, mutation, detail, None, f"writer: {type(e).__name__}: {e}")
    return Case(index, seed.name, kind, mutation, detail, data)


# -- byte-level mutations -----------------------------------------------------------------------------------------

_INTERESTING = (0, 1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 63, 64, 100, 127, 128, 255, 256, 1000, 0x7FFF, 0x8000, 0xFFFF,
                0x10000, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF, 0x7FFFFFFFFFFFFFFF, 0xFFFFFFFFFFFFFFFF)


def _offset(seed: _Seed, rng: random.Random, size: int = 1) -> int:
    """A random offset, three times in four inside the flatbuffer's structure rather than constant data."""
    n = len(seed.data)
    if rng.random() < 0.75:
        lo, hi = rng.choices(seed.structure, weights=[h - lo_ for lo_, h in seed.structure])[0]
        return min(rng.randrange(lo, hi), max(n - size, 0))
    return rng.randrange(max(n - size, 1))


def _flip(seed: _Seed, config: Config, rng: random.Random) -> tuple[bytes, str]:
    data = bytearray(seed.data)
    done = []
    for _ in range(rng.randint(1, 8)):
        off, bit = _offset(seed, rng), rng.randrange(8)
        data[off] ^= 1 << bit
        done.append(f"{off:#x}:{bit}")
    return bytes(data), "flip bits " + ", ".join(done)


def _set(seed: _Seed, config: Config, rng: random.Random) -> tuple[bytes, str]:
    data = bytearray(seed.data)
    done = []
    for _ in range(rng.randint(1, 8)):
        off, value = _offset(seed, rng), rng.choice((0, 0xFF, 0x7F, 0x80, rng.randrange(256)))
        data[off] = value
        done.append(f"{off:#x}={value:#x}")
    return bytes(data), "set bytes " + ", ".join(done)


def _int(seed: _Seed, config: Config, rng: random.Random) -> tuple[bytes, str]:
    data = bytearray(seed.data)
    done = []
    for _ in range(rng.randint(1, 3)):
        width = rng.choice((1, 2, 4, 4, 4, 8))
        value = (rng.choice(_INTERESTING) + rng.choice((0, 0, 0, 1, -1))) % (1 << (8 * width))
        off = _offset(seed, rng, width)
        if rng.random() < 0.7:
            off -= off % width  # flatbuffer scalars are aligned
        if off + width > len(data):
            continue
        data[off:off + width] = value.to_bytes(width, "little")
        done.append(f"{off:#x}={value:#x}/{width}")
    return bytes(data), "interesting integers " + ", ".join(done)


def _truncate(seed: _Seed, config: Config, rng: random.Random) -> tuple[bytes, str]:
    cut = _offset(seed, rng) if rng.random() < 0.5 else rng.randrange(len(seed.data))
    return seed.data[:cut], f"truncate to {cut} of {len(seed.data)} bytes"


def _splice(seed: _Seed, config: Config, rng: random.Random) -> tuple[bytes, str]:
    data = bytearray(seed.data)
    donor = seed if rng.random() < 0.6 else _seed(rng.choice(config.models))
    size = rng.choice((1, 2, 4, 4, 8, 16, 32, 64, 256))
    src = _offset(donor, rng, size)
    chunk = donor.data[src:src + size]
    dst = _offset(seed, rng, size)
    how = rng.choice(("overwrite", "overwrite", "insert", "delete"))
    if how == "overwrite":
        data[dst:dst + len(chunk)] = chunk
    elif how == "insert":
        data[dst:dst] = chunk
    else:
        del data[dst:dst + size]
        return bytes(data), f"delete {size} bytes at {dst:#x}"
    return bytes(data), f"{how} {len(chunk)} bytes at {dst:#x} from {donor.name}@{src:#x}"


_BYTE_MUTATORS: dict[str, Callable[[_Seed, Config, random.Random], tuple[bytes, str]]] = {
    "flip": _flip, "set": _set, "int": _int, "truncate": _truncate, "splice": _splice,
}


# -- structure-aware mutations --------------------------------------------------------------------------------------


class _NotApplicable(Exception):
    """This mutation has nothing to work on in this model."""


MAX_CONSTANT_BYTES = 16 << 20  # a resized constant larger than this is not worth writing


def _tensor(model: ir.Model, rng: random.Random, want: Callable[[ir.Tensor], bool] | None = None,
            ) -> tuple[ir.Subgraph, ir.Tensor]:
    """A random tensor (of a random subgraph) that ``want`` accepts, preferring those operators use."""
    pool = [(sg, t) for sg in model.subgraphs for t in sg.tensors if want is None or want(t)]
    if not pool:
        raise _NotApplicable
    used = {(sg.index, i) for sg in model.subgraphs for op in sg.operators for i in op.inputs + op.outputs}
    preferred = [p for p in pool if (p[0].index, p[1].index) in used]
    return rng.choice(preferred if preferred and rng.random() < 0.9 else pool)


def _where(sg: ir.Subgraph, t: ir.Tensor) -> str:
    return f"subgraph {sg.index} tensor {t.index} ({t.name!r})"


def _refit(t: ir.Tensor, shape: tuple[int, ...], dtype: np.dtype | None = None) -> None:
    """Give ``t`` a new shape (and dtype), resizing its constant data so the writer accepts it."""
    dtype = t.dtype if dtype is None else np.dtype(dtype)
    if t.data is not None:
        size = int(np.prod(shape, dtype=np.int64))
        if size * dtype.itemsize > MAX_CONSTANT_BYTES:
            raise _NotApplicable
        raw = np.ascontiguousarray(t.data).reshape(-1).view(np.uint8)
        if raw.size == 0:
            raw = np.zeros(1, np.uint8)
        t.data = np.resize(raw, size * dtype.itemsize).view(dtype).reshape(shape)
    t.shape, t.dtype = tuple(int(d) for d in shape), dtype
    if t.shape_signature is not None:
        t.shape_signature = t.shape


def _m_shape(model: ir.Model, rng: random.Random) -> str:
    sg, t = _tensor(model, rng)
    old = t.shape
    if not old:
        new: tuple[int, ...] = (rng.choice((0, 1, 2, 5)),)
    else:
        i = rng.randrange(len(old))
        d = old[i]
        value = rng.choice((0, 1, 2, 3, 7, 64, 4096, max(d - 1, 0), d + 1, 2 * d, d // 2, 4 * d, 65537))
        new = old[:i] + (value,) + old[i + 1:]
    _refit(t, new)
    return f"{_where(sg, t)} shape {list(old)} -> {list(new)}"


def _m_reshape(model: ir.Model, rng: random.Random) -> str:
    """Same element count, another arrangement (weights of rank 3 for a FULLY_CONNECTED, ...)."""
    sg, t = _tensor(model, rng)
    old = list(t.shape)
    new = list(old)
    how = rng.choice(("insert 1", "drop 1", "merge", "split"))
    if how == "insert 1":
        new.insert(rng.randint(0, len(new)), 1)
    elif how == "drop 1" and 1 in new:
        new.pop(rng.choice([i for i, d in enumerate(new) if d == 1]))
    elif how == "merge" and len(new) >= 2:
        i = rng.randrange(len(new) - 1)
        new[i:i + 2] = [new[i] * new[i + 1]]
    elif how == "split" and any(d > 1 for d in new):
        i = rng.choice([i for i, d in enumerate(new) if d > 1])
        d = new[i]
        f = next((f for f in range(2, int(math.isqrt(d)) + 1) if d % f == 0), d)
        new[i:i + 1] = [f, d // f]
    else:
        raise _NotApplicable
    _refit(t, tuple(new))
    return f"{_where(sg, t)} reshape {old} -> {new}"


def _m_rank(model: ir.Model, rng: random.Random) -> str:
    sg, t = _tensor(model, rng)
    old = list(t.shape)
    new = list(old)
    how = rng.choice(("append", "prepend", "drop", "drop", "scalar", "rank 5"))
    if how == "append":
        new.append(rng.choice((1, 2, 3)))
    elif how == "prepend":
        new.insert(0, rng.choice((1, 2, 3)))
    elif how == "drop" and new:
        new.pop(rng.randrange(len(new)))
    elif how == "scalar":
        new = []
    else:
        new = (new + [1] * 5)[:5] if len(new) < 5 else new[:5] + [1]
    _refit(t, tuple(new))
    return f"{_where(sg, t)} rank {len(old)} -> {len(new)}: {old} -> {new}"


_FUZZ_DTYPES = list(ir.DTYPES.values())


def _m_dtype(model: ir.Model, rng: random.Random) -> str:
    sg, t = _tensor(model, rng)
    old = t.dtype
    new = rng.choice([d for d in _FUZZ_DTYPES if d != old])
    _refit(t, t.shape, new)
    return f"{_where(sg, t)} dtype {old.name} -> {new.name}"


_SCALES = (0.0, -1.0, -0.5, math.nan, math.inf, -math.inf, 1e30, 1e38, 3.4e38, 1e10, 1e-10, 1e-30, 1e-38, 1e-45,
           0.5, 1.0, 2.0 ** -31, 2.0 ** 31)
_ZERO_POINTS = (-129, 128, -128, 127, 255, 256, -32769, -32768, 32767, 32768, 65535, 65536, 2**31 - 1, 2**31,
                -(2**31), -(2**31) - 1, 2**40, -(2**63), 2**63 - 1)


def _m_quant(model: ir.Model, rng: random.Random) -> str:
    how = rng.choice(("scale", "scale", "zero_point", "zero_point", "axis", "channels", "remove", "add", "minmax"))
    if how == "add":
        sg, t = _tensor(model, rng, lambda t: t.quant is None)
        t.quant = ir.Quantization(np.array([rng.choice((0.5, 1e-3, 1.0, 1e30))], np.float32),
                                  np.array([rng.choice((0, 1, -3, 128))], np.int64))
        return f"{_where(sg, t)} quantization added: {t.quant.scale[0]} / {t.quant.zero_point[0]}"
    sg, t = _tensor(model, rng, lambda t: t.quant is not None and len(t.quant.scale) > 0)
    q = t.quant
    where = _where(sg, t)
    if how == "scale":
        j = rng.randrange(len(q.scale))
        old = float(q.scale[j])
        value = rng.choice(_SCALES + (old * 2, old / 2, old * 1e6, old * 1e-6, -old, 10 ** rng.uniform(-12, 12)))
        scale = q.scale.astype(np.float32)
        with np.errstate(over="ignore"):
            scale[j] = value
        if rng.random() < 0.3:
            scale[:] = scale[j]
        q.scale = scale
        return f"{where} scale[{j}] {old} -> {scale[j]}"
    if how == "zero_point":
        j = rng.randrange(len(q.zero_point))
        old = int(q.zero_point[j])
        value = rng.choice(_ZERO_POINTS + (old + 1, old - 1, -old, rng.randint(-300, 300)))
        zp = q.zero_point.astype(np.int64)
        zp[j] = value
        q.zero_point = zp
        return f"{where} zero_point[{j}] {old} -> {value}"
    if how == "axis":
        old = q.axis
        q.axis = rng.choice((-1, -2, len(t.shape), len(t.shape) + 1, 0, 1, 3, rng.randrange(max(len(t.shape), 1)),
                             100, 2**31 - 1))
        return f"{where} quantized dimension {old} -> {q.axis}"
    if how == "channels":
        n = len(q.scale)
        choices = [1, n + 1, max(n - 1, 1), *t.shape] if t.shape else [1, 2, n + 1]
        m = rng.choice([c for c in choices if c != n] or [n + 1])
        q.scale = np.resize(q.scale.astype(np.float32), m)
        q.zero_point = np.resize(q.zero_point.astype(np.int64), m)
        if rng.random() < 0.5 and t.shape:
            q.axis = rng.randrange(len(t.shape))
        return f"{where} {n} -> {m} scales along axis {q.axis}"
    if how == "minmax":
        q.min = np.array([rng.choice((-1.0, math.nan, 1e30))], np.float32)
        q.max = np.array([rng.choice((1.0, -1.0, math.inf))], np.float32)
        return f"{where} min/max {q.min} {q.max}"
    t.quant = None
    return f"{where} quantization removed"


_INT_RANGES = {"Int8": (-128, 127), "Uint8": (0, 255), "Int16": (-32768, 32767), "Uint16": (0, 65535),
               "Int32": (-(2**31), 2**31 - 1), "Uint32": (0, 2**32 - 1), "Int64": (-(2**63), 2**63 - 1)}


def _int_value(rng: random.Random, old: int, lo: int, hi: int) -> int:
    value = rng.choice((0, 1, -1, 2, 3, 4, 5, 6, 7, 8, 16, 100, 127, 128, 255, 1000, 65536, 2**31 - 1, -(2**31),
                        hi, lo, old + 1, old - 1, -old, 2 * old, rng.randint(-10, 10)))
    return min(max(value, lo), hi)


def _m_options(model: ir.Model, rng: random.Random) -> str:
    ops = [(sg, op) for sg in model.subgraphs for op in sg.operators if op.options is not None]
    if not ops:
        raise _NotApplicable
    sg, op = rng.choice(ops)
    where = f"subgraph {sg.index} operator {op.index} ({op.op})"
    table = type(op.options).__name__
    if rng.random() < 0.08:
        if rng.random() < 0.5:
            op.options = None
            return f"{where}: options removed"
        other = rng.choice(sorted(schema.UNION_TYPES))
        op.options = schema.options_class(other)()
        return f"{where}: options {table} -> default {other}"
    fields = schema.spec(table).fields
    if not fields:
        raise _NotApplicable
    f = rng.choice(fields)
    old = getattr(op.options, f.name)
    if f.vector:
        vals = list(old)
        lo, hi = _INT_RANGES.get(f.flags, (-(2**31), 2**31 - 1))
        how = rng.choice(("append", "drop", "set", "clear"))
        if how == "append":
            vals.append(_int_value(rng, 1, lo, hi))
        elif how == "drop" and vals:
            vals.pop(rng.randrange(len(vals)))
        elif how == "set" and vals:
            j = rng.randrange(len(vals))
            vals[j] = _int_value(rng, vals[j], lo, hi)
        else:
            vals = []
        value: Any = tuple(vals)
    elif f.flags == "Bool":
        value = not old
    elif f.flags.startswith("Float"):
        value = rng.choice((0.0, -1.0, math.nan, math.inf, -math.inf, 1e30, 1e-30, 2.0 * (old or 1), -(old or 1)))
    elif f.flags == "String":
        value = rng.choice((None, "", "x", (old or "") + "_2"))
    else:
        lo, hi = _INT_RANGES.get(f.flags, (-(2**31), 2**31 - 1))
        value = _int_value(rng, int(old), lo, hi)
    op.options = dataclasses.replace(op.options, **{f.name: value})
    return f"{where}: {table}.{f.name} {old!r} -> {value!r}"


def _m_operands(model: ir.Model, rng: random.Random) -> str:
    ops = [(sg, op) for sg in model.subgraphs for op in sg.operators]
    if not ops:
        raise _NotApplicable
    sg, op = rng.choice(ops)
    which = rng.choice(("inputs", "inputs", "outputs", "intermediates"))
    lst: list[int] = getattr(op, which)
    n = len(sg.tensors)
    how = rng.choice(("replace", "replace", "omit", "drop", "append", "swap", "duplicate"))
    old = list(lst)
    if how == "replace" and lst:
        lst[rng.randrange(len(lst))] = rng.randrange(n)
    elif how == "omit" and which == "inputs" and lst:
        lst[rng.randrange(len(lst))] = -1
    elif how == "drop" and lst:
        lst.pop(rng.randrange(len(lst)))
    elif how == "swap" and len(lst) >= 2:
        i, j = rng.sample(range(len(lst)), 2)
        lst[i], lst[j] = lst[j], lst[i]
    elif how == "duplicate" and lst:
        lst.append(rng.choice(lst))
    else:
        lst.append(rng.randrange(n) if which != "inputs" or rng.random() < 0.7 else -1)
    return f"subgraph {sg.index} operator {op.index} ({op.op}) {which} {old} -> {lst}"


def _m_io(model: ir.Model, rng: random.Random) -> str:
    sg = rng.choice(model.subgraphs)
    which = rng.choice(("inputs", "outputs"))
    lst: list[int] = getattr(sg, which)
    old = list(lst)
    how = rng.choice(("replace", "drop", "append", "duplicate", "clear"))
    if how == "replace" and lst:
        lst[rng.randrange(len(lst))] = rng.randrange(len(sg.tensors))
    elif how == "drop" and lst:
        lst.pop(rng.randrange(len(lst)))
    elif how == "duplicate" and lst:
        lst.append(rng.choice(lst))
    elif how == "clear":
        lst.clear()
    else:
        lst.append(rng.randrange(len(sg.tensors)))
    return f"subgraph {sg.index} {which} {old} -> {lst}"


def _kernel_names() -> list[str]:
    from micronn.kernels import REGISTRY

    return sorted(REGISTRY)


def _m_opcode(model: ir.Model, rng: random.Random) -> str:
    ops = [(sg, op) for sg in model.subgraphs for op in sg.operators]
    if not ops:
        raise _NotApplicable
    sg, op = rng.choice(ops)
    where = f"subgraph {sg.index} operator {op.index}"
    if rng.random() < 0.2:
        old_version = op.version
        op.version = rng.choice((0, 1, 2, 3, 4, 7, 100, 2**31 - 1))
        return f"{where} ({op.op}) version {old_version} -> {op.version}"
    old = op.op
    names = _kernel_names() if rng.random() < 0.8 else sorted(schema.BUILTIN_CODES)
    new = rng.choice([n for n in names if n != old])
    op.op = new
    op.custom = new not in schema.BUILTIN_CODES or new == "CUSTOM"
    if op.custom:
        op.options = None
        if rng.random() < 0.5:
            op.custom_options = rng.randbytes(rng.choice((0, 1, 4, 16, 64)))
    elif rng.random() < 0.5:
        op.options = schema.options(new)
    return f"{where} op {old} -> {new}"


def _m_subgraph(model: ir.Model, rng: random.Random) -> str:
    calls = [(sg, op) for sg in model.subgraphs for op in sg.operators if ir.called_subgraphs(op)]
    n = len(model.subgraphs)
    how = rng.choice(("index", "index", "swap", "drop", "duplicate"))
    if how == "index" and calls:
        sg, op = rng.choice(calls)
        name = rng.choice(ir.CALLS[op.op])
        old = getattr(op.options, name)
        value = rng.choice((-1, 0, 1, n - 1, n, n + 1, sg.index, 2**31 - 1, rng.randrange(n)))
        op.options = dataclasses.replace(op.options, **{name: value})
        return f"subgraph {sg.index} operator {op.index} ({op.op}) {name} {old} -> {value}"
    if how == "swap" and n >= 2:
        i, j = rng.sample(range(n), 2)
        model.subgraphs[i], model.subgraphs[j] = model.subgraphs[j], model.subgraphs[i]
        return f"subgraphs {i} and {j} swapped"
    if how == "drop" and n >= 2:
        i = rng.randrange(1, n)
        model.subgraphs.pop(i)
        return f"subgraph {i} dropped"
    if rng.random() < 0.7:  # a plain copy of a subgraph nothing calls is rarely interesting: draw again mostly
        raise _NotApplicable
    src = model.subgraphs[rng.randrange(n)]
    model.subgraphs.append(ir.Subgraph(list(src.tensors), list(src.operators), list(src.inputs), list(src.outputs),
                                       src.name + "_copy", n))
    return f"subgraph {src.index} duplicated as {n}"


def _m_metadata(model: ir.Model, rng: random.Random) -> str:
    from micronn.planners.base import OFFLINE_KEY

    how = rng.choice(("offline", "offline", "offline", "corrupt", "signature", "version"))
    total = sum(len(sg.tensors) for sg in model.subgraphs)
    if how == "offline":
        offsets = []
        for _ in range(total):
            offsets.append(rng.choice((-1, -1, 0, 0, 16, 64, rng.randrange(0, 1 << 16), -2, 2**31 - 1,
                                       rng.randrange(0, 1 << 12) * 16)))
        header = [1, len(model.subgraphs), total]
        variant = rng.choice(("plain", "plain", "count", "version", "short", "odd"))
        if variant == "count":
            header[2] += rng.choice((-1, 1, 1000, -total - 1))
        elif variant == "version":
            header[0] = rng.choice((0, 2, -1))
        words = np.array(header + offsets, "<i4").tobytes()
        if variant == "short":
            words = words[:rng.randrange(len(words))]
        elif variant == "odd":
            words += b"\x01"
        model.metadata[OFFLINE_KEY] = words
        return f"{OFFLINE_KEY} metadata ({variant}, {len(words)} bytes)"
    if how == "corrupt" and model.metadata:
        name = rng.choice(sorted(model.metadata))
        blob = bytearray(model.metadata[name])
        for _ in range(rng.randint(1, 4)):
            if blob:
                blob[rng.randrange(len(blob))] = rng.randrange(256)
        model.metadata[name] = bytes(blob)
        return f"metadata {name!r} corrupted"
    if how == "signature":
        sg = model.subgraphs[0]
        model.signature_defs.append(ir.SignatureDef(
            "fuzz", rng.choice((0, 1, len(model.subgraphs), -1)),
            {"x": rng.choice((0, len(sg.tensors), -1, 2**31 - 1))}, {"y": rng.randrange(len(sg.tensors) + 2)}))
        return "signature def added"
    model.version = rng.choice((0, 1, 2, 4, 2**31 - 1))
    return f"model version -> {model.version}"


def _element_values(dtype: np.dtype, rng: random.Random, old: Any) -> list[Any]:
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        base = (0, 1, -1, 2, 3, 4, 5, 16, 255, 1000, 2**30, info.min, info.max, rng.randint(-100, 100))
        extra = (int(old) + 1, int(old) - 1, -int(old)) if old is not None else ()
        return [min(max(v, int(info.min)), int(info.max)) for v in base + extra]
    if dtype.kind == "f":
        return [math.nan, math.inf, -math.inf, -0.0, 0.0, 1e38, -1e38, 1e-45, 65504.0, 1e6]
    if dtype.kind == "b":
        return [True, False]
    raise _NotApplicable


def _m_data(model: ir.Model, rng: random.Random) -> str:
    small = rng.random() < 0.5  # shape, axis, paddings, perm, begin/end tensors are where indices hide
    sg, t = _tensor(model, rng, lambda t: t.is_constant and t.data.size > 0 and t.dtype != ir.RESOURCE
                    and (not small or (t.data.size <= 16 and t.dtype.kind in "iu")))
    data = np.array(t.data, copy=True)
    flat = data.reshape(-1)
    how = rng.choice(("element", "element", "fill", "random"))
    if how == "random":
        raw = flat.view(np.uint8)
        raw[:] = np.frombuffer(rng.randbytes(raw.size), np.uint8)
        detail = "random bytes"
    else:
        j = rng.randrange(flat.size)
        value = rng.choice(_element_values(t.dtype, rng, flat[j] if flat.dtype.kind in "iu" else None))
        with np.errstate(over="ignore", invalid="ignore"):
            if how == "fill":
                flat[:] = value
            else:
                flat[j] = value
        detail = f"{how} {'all' if how == 'fill' else f'[{j}]'} = {value}"
    t.data = data
    return f"{_where(sg, t)} data {detail}"


def _m_variable(model: ir.Model, rng: random.Random) -> str:
    sg, t = _tensor(model, rng)
    t.is_variable = not t.is_variable
    return f"{_where(sg, t)} is_variable -> {t.is_variable}"


def _m_ops(model: ir.Model, rng: random.Random) -> str:
    sg = rng.choice([sg for sg in model.subgraphs if sg.operators] or [model.main])
    ops = sg.operators
    if not ops:
        raise _NotApplicable
    how = rng.choice(("delete", "duplicate", "swap", "move"))
    i = rng.randrange(len(ops))
    if how == "delete":
        ops.pop(i)
    elif how == "duplicate":
        ops.insert(i, dataclasses.replace(ops[i], inputs=list(ops[i].inputs), outputs=list(ops[i].outputs)))
    elif how == "swap" and len(ops) >= 2:
        j = rng.randrange(len(ops))
        ops[i], ops[j] = ops[j], ops[i]
        return f"subgraph {sg.index} operators {i} and {j} swapped"
    else:
        ops.insert(rng.randrange(len(ops)), ops.pop(i))
    return f"subgraph {sg.index} operator {i} {how}"


_STRUCTURE_MUTATORS: dict[str, Callable[[ir.Model, random.Random], str]] = {
    "shape": _m_shape, "reshape": _m_reshape, "rank": _m_rank, "dtype": _m_dtype, "quant": _m_quant,
    "options": _m_options, "operands": _m_operands, "io": _m_io, "opcode": _m_opcode, "subgraph": _m_subgraph,
    "metadata": _m_metadata, "data": _m_data, "variable": _m_variable, "ops": _m_ops,
}


# ---- the arithmetic a model asks for ------------------------------------------------------------------------------


def _elements(t: ir.Tensor | None) -> float:
    """Elements of ``t``, counting an empty dimension as 1: loops still walk the others."""
    return float(np.prod([max(d, 1) for d in t.shape], dtype=np.float64)) if t is not None else 0.0


def estimate_macs(model: ir.Model) -> int:
    """Multiply-accumulates one invoke asks for, from the shapes alone (an upper-bound estimate).

    Convolutions, FULLY_CONNECTED, BATCH_MATMUL, LSTM and SVDF count their products; every other op one per
    element it reads or writes; every non-constant tensor one per element (it is filled or planned). WHILE
    loops count one pass of their subgraphs (their iterations are bounded separately).
    """
    total = 0.0
    for sg in model.subgraphs:
        tensors = sg.tensors
        total += sum(_elements(t) for t in tensors if not t.is_constant)
        for op in sg.operators:
            ins = [tensors[i] if 0 <= i < len(tensors) else None for i in op.inputs]
            outs = [tensors[i] for i in op.outputs if 0 <= i < len(tensors)]
            total += _op_macs(op, ins, outs)
    return int(min(total, 2**62))


def _dims(t: ir.Tensor | None) -> tuple[int, ...]:
    return tuple(t.shape) if t is not None else ()


# What one step of a kernel's Python loop costs, in multiply-accumulates (a few microseconds of numpy calls).
LOOP_MACS = 10_000


def _op_macs(op: ir.Operator, ins: list[ir.Tensor | None], outs: list[ir.Tensor]) -> float:
    """The products ``op`` computes, plus LOOP_MACS per step of the loops its kernel runs in Python (over
    filter taps, channels, output rows, depth or time), which dominate when a mutated shape makes them long."""
    out = _elements(outs[0]) if outs else 0.0
    flt = tuple(max(d, 1) for d in _dims(ins[1])) if len(ins) > 1 else ()
    floats = bool(ins) and ins[0] is not None and ins[0].dtype == np.float32
    plain = max(sum(_elements(t) for t in ins), sum(_elements(t) for t in outs))
    if op.op == "CONV_2D" and flt:
        taps = float(np.prod(flt[1:], dtype=np.float64))
        return out * taps + plain + (taps * LOOP_MACS if floats else 0.0)
    if op.op == "DEPTHWISE_CONV_2D" and len(flt) >= 3:
        return out * float(flt[1] * flt[2]) + plain + float(flt[1] * flt[2]) * LOOP_MACS
    if op.op == "FULLY_CONNECTED" and flt:
        return out * float(flt[-1]) + plain + (float(flt[-1]) * LOOP_MACS if floats else 0.0)
    if op.op == "TRANSPOSE_CONV" and len(ins) > 2 and flt:
        rows = float(max(outs[0].shape[1], 1)) if outs and len(outs[0].shape) > 1 else 1.0
        taps = float(np.prod(flt[1:3], dtype=np.float64)) if len(flt) >= 3 else 1.0
        loops = rows * taps + (taps * flt[-1] if ins[2] is not None and ins[2].dtype == np.float32 else 0.0)
        return _elements(ins[2]) * float(np.prod(flt[:-1], dtype=np.float64)) + plain + loops * LOOP_MACS
    if op.op == "BATCH_MATMUL" and ins and ins[0] is not None and ins[0].shape:
        return out * float(max(ins[0].shape[-2:])) + plain
    if op.op in ("UNIDIRECTIONAL_SEQUENCE_LSTM", "SVDF") and ins and ins[0] is not None:
        units = max(outs[0].shape[-1:] or (1,)) if outs else 1
        width = max(max(ins[0].shape[-1:] or (1,)), 1)
        steps = _elements(ins[0]) / width
        depth = width + units
        return (steps * 4 * units * depth + max((_elements(t) for t in ins), default=0) * steps + plain
                + steps * 8 * depth * LOOP_MACS)
    if op.op in ("AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D") and op.options is not None:
        window = max(getattr(op.options, "filter_height", 1), 1) * max(getattr(op.options, "filter_width", 1), 1)
        return out * float(window) + plain + float(window) * LOOP_MACS
    return float(plain)


# ---- running one case ---------------------------------------------------------------------------------------------


def _frame(tb: Any) -> str:
    """The innermost frame of the library (micronn, not its test harness) in a traceback."""
    where = "outside micronn"
    for f in traceback.extract_tb(tb):
        name = os.path.abspath(f.filename)
        if name.startswith(_LIBRARY_FRAMES) and not name.startswith(_HARNESS_FRAMES):
            where = f"{os.path.relpath(name, _PACKAGE.parent)}:{f.lineno} in {f.name}"
    return where


def _first_line(text: str, limit: int = 300) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[:limit] + "..."


def _exception(e: BaseException) -> dict[str, Any]:
    """A leaked exception or a memory blow-up, as a result."""
    cls = "memory" if isinstance(e, MemoryError) else "leaked"
    return {"class": cls, "error": type(e).__name__, "message": _first_line(str(e)), "frame": _frame(e.__traceback__)}


def check_model(data: bytes, seed: int = 0, config: Config | None = None,
                report: Callable[..., None] | None = None) -> dict[str, Any]:
    """Run one model through micronn (and, with ``config.differential``, the wheel) and classify it.

    In-process: a crash or hang here takes the caller with it, which is why :func:`fuzz` calls it in workers.
    """
    config = config or Config()
    report = report or (lambda *what: None)
    try:
        model = read(data)
        macs = estimate_macs(model)
        if macs > config.max_macs:
            return {"class": "slow", "macs": macs}
        report("micronn", macs)
        it = micronn.Interpreter(data)
        it.allocate_tensors()
        inputs = ir.random_inputs(model, seed)
        for i, x in enumerate(inputs):
            it.set_input(x, i)
        it.invoke()
        outputs = [it.get_output(i) for i in range(len(model.main.outputs))]
    except MicronnError as e:
        return {"class": "error", "error": type(e).__name__, "message": _first_line(str(e))}
    except Exception as e:  # noqa: BLE001 - everything else is what the fuzzer looks for
        return _exception(e)
    result: dict[str, Any] = {"class": "ran", "macs": macs}
    if not config.differential or seed % max(config.differential_every, 1):
        return result
    report("oracle", macs)
    arena = int(min(max(8 << 20, 4 * it.arena_size + (1 << 20), 10 * len(data)), 1 << 30))
    runs = [_oracle(data, inputs, arena + extra, config.timeout) for extra in (0, 4096)]
    return {**result, **_judge(outputs, runs)}


def _judge(outputs: list[np.ndarray], runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Compare micronn's outputs with two fresh wheel runs."""
    from micronn.testing import _difference

    statuses = [r["status"] for r in runs]
    for status in ("crash", "hang"):
        if status in statuses:
            r = runs[statuses.index(status)]
            return {"class": f"oracle-{status}", "message": r.get("message", "")}
    if statuses == ["refused", "refused"]:
        return {"class": "oracle-refused", "message": runs[0]["message"]}
    if "refused" in statuses or not _same(runs[0]["outputs"], runs[1]["outputs"]):
        return {"class": "mismatch", "message": "the wheel's result is undefined (two fresh interpreters "
                "disagree) but micronn ran the model instead of refusing it"}
    expected = runs[0]["outputs"]
    if len(expected) != len(outputs):
        return {"class": "mismatch", "message": f"micronn gave {len(outputs)} outputs, the wheel {len(expected)}"}
    for i, (a, e) in enumerate(zip(outputs, expected)):
        why = _difference(a, e, f"output {i}")
        if why is not None:
            return {"class": "mismatch", "message": why.replace("\n", "; ")[:600]}
    return {"verified": True}


def _same(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    return len(a) == len(b) and all(x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
                                    for x, y in zip(a, b))


def _oracle(data: bytes, inputs: list[np.ndarray], arena_size: int, timeout: float) -> dict[str, Any]:
    """One fresh wheel interpreter in a forked child: the wheel may crash or hang on hostile models."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: run, send a pickled answer, and leave without any cleanup
        try:
            os.close(r)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(null, 2)
            try:
                from micronn.testing import _Tflm

                answer: dict[str, Any] = {"status": "ok", "outputs": _Tflm(data, arena_size).run(inputs)}
            except Exception as e:  # noqa: BLE001 - any failure of the wheel is a refusal
                lines = [line for line in str(e).splitlines() if line.strip()] or [""]
                why = lines[0] if len(lines) == 1 else f"{lines[0]} | {lines[-1]}"  # the wheel's log says why
                answer = {"status": "refused", "message": _first_line(f"{type(e).__name__}: {why}")}
            with os.fdopen(w, "wb") as f:
                f.write(pickle.dumps(answer))
        finally:
            os._exit(0)
    os.close(w)
    chunks, deadline = [], time.monotonic() + timeout
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([r], [], [], left)[0]:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return {"status": "hang", "message": f"the wheel ran past {timeout:g} s"}
            chunk = os.read(r, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(r)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return {"status": "crash", "message": f"the wheel died of {signal.Signals(os.WTERMSIG(status)).name}"}
    if not chunks:
        return {"status": "crash", "message": f"the wheel exited with status {os.WEXITSTATUS(status)}, no answer"}
    return pickle.loads(b"".join(chunks))


def _fuzz_target(index: int, config: Config, report: Callable[..., None]) -> dict[str, Any]:
    """The worker's job: make case ``index`` and check it."""
    case = make_case(config, index)
    report("case", case.info())
    if case.data is None:
        return {"class": "skipped", "message": case.skipped}
    return check_model(case.data, index, config, report)


# ---- workers --------------------------------------------------------------------------------------------------------


def _resolve(target: str) -> Callable[..., dict[str, Any]]:
    import importlib

    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def _worker(conn: Connection, target: str, config: Any, memory_mb: int) -> None:
    """A long-lived worker: runs jobs until told to stop; its parent kills and replaces it on a hang or death."""
    if memory_mb:
        limit = memory_mb << 20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    warnings.simplefilter("ignore")
    if isinstance(config, Config):
        from micronn.kernels.while_ import While

        While.max_iterations = config.max_loop_iterations
    fn = _resolve(target)
    conn.send(("ready",))
    while True:
        index = conn.recv()
        if index is None:
            return
        conn.send(("progress", index, ("start",)))

        def report(*what: Any, _index: int = index) -> None:
            conn.send(("progress", _index, what))

        started = time.monotonic()
        try:
            result = fn(index, config, report)
        except Exception as e:  # noqa: BLE001 - the target's own failures are classified like the library's
            result = _exception(e)
        conn.send(("done", index, {**result, "seconds": round(time.monotonic() - started, 3)}))


@dataclass
class _Slot:
    proc: Any
    conn: Connection
    ready: bool = False
    job: int | None = None
    deadline: float = math.inf
    stage: str = ""
    info: dict[str, Any] = field(default_factory=dict)


class Pool:
    """Long-lived worker processes that run ``target(index, config, report)`` for every job index.

    ``target`` is ``"module:function"``. Each worker runs under a memory limit (RLIMIT_AS, ``memory_mb``); the
    parent gives each job ``timeout`` seconds (``oracle_timeout`` after the job reports its ``oracle`` stage),
    kills a worker that runs past it (``hang``) and replaces a worker that died (``crash``, or ``memory`` when
    something other than the parent killed it with SIGKILL: the kernel's OOM killer).
    """

    def __init__(self, target: str, config: Any = None, workers: int = 1, timeout: float = 10.0,
                 memory_mb: int = 2048, oracle_timeout: float | None = None, start_timeout: float = 120.0):
        self.target, self.config, self.workers = target, config, max(int(workers), 1)
        self.timeout, self.memory_mb, self.start_timeout = timeout, memory_mb, start_timeout
        self.oracle_timeout = oracle_timeout if oracle_timeout is not None else 2 * timeout + 5
        self.ctx = mp.get_context("spawn")
        self.slots: list[_Slot] = []
        self.restarts = 0

    def _spawn(self) -> _Slot:
        parent, child = self.ctx.Pipe()
        with _environment(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1"):
            proc = self.ctx.Process(target=_worker, args=(child, self.target, self.config, self.memory_mb),
                                    daemon=True)
            proc.start()
        child.close()
        return _Slot(proc, parent, deadline=time.monotonic() + self.start_timeout)

    def _retire(self, slot: _Slot, kill: bool) -> int | None:
        if kill and slot.proc.is_alive():
            slot.proc.kill()
        slot.proc.join(5)
        if slot.proc.is_alive():
            slot.proc.kill()
            slot.proc.join()
        slot.conn.close()
        self.slots.remove(slot)
        return slot.proc.exitcode

    def close(self) -> None:
        for slot in list(self.slots):
            with contextlib.suppress(OSError, ValueError):
                slot.conn.send(None)
            self._retire(slot, kill=False)

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def run(self, jobs: Iterable[int]) -> Iterator[tuple[int, dict[str, Any]]]:
        """Yield ``(index, result)`` for every job, in completion order; results carry what the job reported."""
        todo = iter(jobs)
        pending: list[int] = []
        exhausted = False
        while True:
            while len(self.slots) < self.workers:  # start (or replace) workers while jobs wait
                if len(pending) <= sum(s.job is None for s in self.slots) and not exhausted:
                    nxt = next(todo, None)
                    if nxt is None:
                        exhausted = True
                    else:
                        pending.append(nxt)
                if len(pending) <= sum(s.job is None for s in self.slots):
                    break
                self.slots.append(self._spawn())
            for slot in self.slots:
                if slot.ready and slot.job is None:
                    if not pending and not exhausted:
                        nxt = next(todo, None)
                        if nxt is None:
                            exhausted = True
                        else:
                            pending.append(nxt)
                    if pending:
                        slot.job, slot.stage, slot.info = pending.pop(0), "queued", {}
                        slot.deadline = time.monotonic() + self.start_timeout
                        try:
                            slot.conn.send(slot.job)
                        except OSError:  # the worker died idle (killed from outside): run the job on another
                            pending.insert(0, slot.job)
                            slot.job = None
                            self._retire(slot, kill=True)
                            self.restarts += 1
                            break
            busy = [s for s in self.slots if s.job is not None or not s.ready]
            if not busy:
                if exhausted and not pending:
                    return
                continue
            now = time.monotonic()
            soonest = min(s.deadline for s in busy)
            ready = wait([s.conn for s in busy] + [s.proc.sentinel for s in busy],
                         None if soonest == math.inf else max(soonest - now, 0))
            for slot in list(busy):
                outcome = self._service(slot, ready)
                if outcome is not None:
                    yield outcome

    def _service(self, slot: _Slot, ready: list[Any]) -> tuple[int, dict[str, Any]] | None:
        if slot.conn in ready:
            try:
                while slot.conn.poll():
                    msg = slot.conn.recv()
                    if msg[0] == "ready":
                        slot.ready, slot.deadline = True, math.inf
                    elif msg[0] == "progress":
                        stage, *rest = msg[2]
                        if stage == "case":
                            slot.info = rest[0]
                        elif stage == "start":
                            slot.deadline = time.monotonic() + self.timeout
                        elif stage == "oracle":
                            slot.deadline = time.monotonic() + self.oracle_timeout
                        if stage in ("micronn", "oracle"):
                            slot.info["macs"] = rest[0]
                        slot.stage = stage
                    elif msg[0] == "done":
                        job, slot.job, slot.deadline = slot.job, None, math.inf
                        return job, {**slot.info, **msg[2]}
            except (EOFError, OSError):
                pass  # the worker died: its sentinel tells how
        if not slot.proc.is_alive() or slot.proc.sentinel in ready:
            slot.proc.join(5)
            if not slot.proc.is_alive():
                return self._died(slot)
        if time.monotonic() >= slot.deadline:
            return self._hung(slot)
        return None

    def _died(self, slot: _Slot) -> tuple[int, dict[str, Any]] | None:
        code = self._retire(slot, kill=False)
        if slot.job is None:
            if not slot.ready:
                raise RuntimeError(f"a fuzz worker could not start (exit status {code}); is --memory-mb too small?")
            return None
        self.restarts += 1
        if code is not None and code < 0:
            sig = signal.Signals(-code)
            cls = "memory" if sig == signal.SIGKILL else "crash"
            message = f"worker killed by {sig.name}" + (" (out of memory?)" if cls == "memory" else "")
        else:
            cls, message = "crash", f"worker exited with status {code}"
        return slot.job, {**slot.info, "class": cls, "message": message, "stage": slot.stage}

    def _hung(self, slot: _Slot) -> tuple[int, dict[str, Any]] | None:
        self._retire(slot, kill=True)
        if slot.job is None:
            raise RuntimeError(f"a fuzz worker did not start within {self.start_timeout:g} s")
        self.restarts += 1
        limit = self.oracle_timeout if slot.stage == "oracle" else self.timeout
        return slot.job, {**slot.info, "class": "hang", "message": f"ran past {limit:g} s in stage {slot.stage!r}",
                          "stage": slot.stage}


@contextlib.contextmanager
def _environment(**values: str) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


# ---- campaigns ------------------------------------------------------------------------------------------------------


def fuzz(config: Config, cases: int | Sequence[int], workers: int = 1, memory_mb: int = 2048,
         out: str | os.PathLike[str] | None = None, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run a campaign: ``cases`` (a count, or the indices to run) against ``config``; returns the summary."""
    indices = list(range(cases)) if isinstance(cases, int) else list(cases)
    results: dict[int, dict[str, Any]] = {}
    started = last = time.monotonic()
    with Pool("micronn.testing.fuzz:_fuzz_target", config, workers, config.timeout, memory_mb) as pool:
        for index, result in pool.run(indices):
            if "label" not in result:  # the worker died before describing the case: make it here
                result = {**make_case(config, index).info(), **result}
            results[index] = result
            if out is not None and result["class"] in SAVED:
                result["reproducer"] = str(_save(Path(out), config, index, result))
            if progress is not None and time.monotonic() - last > 30:
                last = time.monotonic()
                counts = Counter(r["class"] for r in results.values())
                progress(f"[{len(results)}/{len(indices)}] {len(results) / (last - started):.1f} cases/s "
                         + " ".join(f"{c}={counts[c]}" for c in CLASSES if counts[c]))
        restarts = pool.restarts
    return summarize(config, results, time.monotonic() - started, workers, restarts)


def _save(out: Path, config: Config, index: int, result: dict[str, Any]) -> Path:
    """A reproducer: the mutated model, its inputs (when the model reads) and what happened."""
    case = make_case(config, index)
    where = out / result["class"] / f"{index:07d}-{case.model}-{case.label}"
    where.mkdir(parents=True, exist_ok=True)
    if case.data is not None:
        (where / "model.tflite").write_bytes(case.data)
        if result.get("macs") is not None:  # the model read: its inputs can be made here safely
            with contextlib.suppress(Exception):
                inputs = ir.random_inputs(read(case.data), index)
                np.savez(where / "inputs.npz", *inputs)
    replay = (f"python -m micronn.testing.fuzz --seed {config.seed} --kind {config.kind} --only {index}"
              + (" --differential" if config.differential else "") + " --models " + " ".join(config.models))
    (where / "case.json").write_text(json.dumps({**result, "seed": config.seed, "replay": replay}, indent=2,
                                                default=str) + "\n")
    return where


def summarize(config: Config, results: dict[int, dict[str, Any]], seconds: float = 0.0, workers: int = 1,
              restarts: int = 0) -> dict[str, Any]:
    """Counts per class, per mutation kind and per micronn error class, and every finding grouped."""
    counts = Counter(r["class"] for r in results.values())
    by_kind: dict[str, Counter] = defaultdict(Counter)
    errors: Counter = Counter()
    groups: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for index, r in sorted(results.items()):
        by_kind[r.get("label", "?")][r["class"]] += 1
        if r["class"] == "error":
            errors[r["error"]] += 1
        if r["class"] not in ("ran", "error", "skipped", "slow"):
            groups[(r["class"], r.get("error", ""), r.get("frame", ""), _signature(r.get("message", "")))].append(index)
    findings = []
    for (cls, error, frame, _), indices in sorted(groups.items(), key=lambda g: (CLASSES.index(g[0][0]), -len(g[1]))):
        first = results[indices[0]]
        findings.append({"class": cls, "error": error, "frame": frame, "count": len(indices), "cases": indices[:20],
                         "message": first.get("message", ""), "example": {k: first.get(k) for k in
                                                                          ("index", "model", "label", "detail",
                                                                           "macs", "reproducer")}})
    slow = sorted((r.get("macs", 0), i) for i, r in results.items() if r["class"] == "slow")
    longest = sorted(((r.get("seconds", 0.0), i) for i, r in results.items()), reverse=True)[:5]
    return {
        "seed": config.seed, "kind": config.kind, "differential": config.differential, "cases": len(results),
        "workers": workers, "seconds": round(seconds, 1), "worker_restarts": restarts,
        "counts": {c: counts[c] for c in CLASSES},
        "verified": sum(1 for r in results.values() if r.get("verified")),
        "by_kind": {k: {c: v[c] for c in CLASSES if v[c]} for k, v in sorted(by_kind.items())},
        "errors": dict(errors.most_common()),
        "slow": [{"index": i, "macs": m} for m, i in slow[-20:]],
        "longest": [{"index": i, "seconds": t, "class": results[i]["class"], "macs": results[i].get("macs")}
                    for t, i in longest],
        "findings": findings,
        "failures": sum(counts[c] for c in FAILURES),
    }


def _signature(message: str) -> str:
    """A message with its numbers blanked, so one bug seen on many models groups into one finding."""
    import re

    return re.sub(r"-?\d+(\.\d+)?(e[-+]?\d+)?", "#", message)[:120]


def format_summary(summary: dict[str, Any]) -> str:
    """The summary as a table: one row per mutation kind, one column per class seen."""
    seen = [c for c in CLASSES if summary["counts"][c]] or ["ran"]
    rows = [["mutation", *seen]]
    for kind, counts in summary["by_kind"].items():
        rows.append([kind, *(str(counts.get(c, 0)) for c in seen)])
    rows.append(["total", *(str(summary["counts"][c]) for c in seen)])
    widths = [max(len(r[i]) for r in rows) for i in range(len(seen) + 1)]
    lines = ["  ".join(cell.rjust(w) if i else cell.ljust(w) for i, (cell, w) in enumerate(zip(r, widths)))
             for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines.insert(len(lines) - 1, lines[1])
    head = (f"{summary['cases']} cases, seed {summary['seed']}, kind {summary['kind']}"
            f"{', differential' if summary['differential'] else ''}, {summary['workers']} worker(s), "
            f"{summary['seconds']} s, {summary['worker_restarts']} worker restart(s)")
    out = [head, "", *lines]
    if summary["differential"]:
        out.append(f"\n{summary['verified']} runs verified byte for byte against the TFLM wheel")
    if summary["longest"]:
        out.append("longest cases: " + ", ".join(f"{c['index']} ({c['seconds']} s, {c['class']}, {c['macs']} MACs)"
                                                 for c in summary["longest"]))
    if summary["errors"]:
        out.append("\nclean micronn errors: " + ", ".join(f"{k} {v}" for k, v in summary["errors"].items()))
    for f in summary["findings"]:
        ex = f["example"]
        out.append(f"\n{f['class'].upper()} x{f['count']}: {f['error']} {f['message']}".rstrip())
        if f["frame"]:
            out.append(f"  at {f['frame']}")
        out.append(f"  e.g. case {ex['index']} ({ex['model']}, {ex['label']}): {ex['detail']}")
        if ex.get("reproducer"):
            out.append(f"  reproducer: {ex['reproducer']}")
    failures = summary["failures"]
    out.append(f"\n{'FAILED' if failures else 'OK'}: " + ", ".join(f"{summary['counts'][c]} {c}" for c in FAILURES))
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; exits 1 when any case leaked, crashed, hung or mismatched."""
    p = argparse.ArgumentParser(prog="python -m micronn.testing.fuzz", description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", type=int, default=1000, help="number of cases (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="campaign seed: a case depends only on it and its index")
    p.add_argument("--kind", choices=("bytes", "structure", "both"), default="both")
    p.add_argument("--differential", action="store_true", help="run the TFLM wheel too and compare bytes")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--timeout", type=float, default=10.0, help="seconds per case (default 10)")
    p.add_argument("--memory-mb", type=int, default=2048, help="address-space limit per worker (default 2048)")
    p.add_argument("--max-macs", type=float, default=Config.max_macs,
                   help="cases asking for more arithmetic are reported as slow, not run")
    p.add_argument("--models", nargs="+", help="seed models (default: micronn/models and tests/models)")
    p.add_argument("--out", help="folder for reproducers of leaked, crash, hang, memory and mismatch cases")
    p.add_argument("--only", type=lambda s: [int(v) for v in s.split(",")], help="run only these case indices")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = p.parse_args(argv)
    models = ([m if m in DERIVED_SEEDS else str(Path(m).resolve()) for m in args.models] if args.models
              else default_models())
    config = Config(models=models, seed=args.seed, kind=args.kind, differential=args.differential,
                    max_macs=int(args.max_macs), timeout=args.timeout)
    summary = fuzz(config, args.only if args.only else args.cases, args.workers, args.memory_mb, args.out,
                   progress=lambda line: print(line, file=sys.stderr, flush=True))
    print(json.dumps(summary, indent=2, default=str) if args.json else format_summary(summary))
    return 1 if summary["failures"] else 0


if __name__ == "__main__":
    from micronn.testing.fuzz import main as _main  # the module's own name, so workers unpickle what they import

    sys.exit(_main())
