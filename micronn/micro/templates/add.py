"""Schedule template: int8 ADD and SUB (TFLM's two-input rescaling), specialised to one layer.

The generated function has the walk (element count and broadcast shape, ``_walk``), both inputs' offsets, left
shift, multipliers and shifts, the output's requantization and the activation range compiled in. Knobs:

* ``table`` (1, 0): each input's rescaling (offset, shift left by ``left_shift``, multiply below one) is a function
  of its int8 value alone, so it can be a table of 256 int32 computed here at generation time with the generic
  kernel's arithmetic (one load per element), or computed per element with the constants in the code;
* ``unroll`` (1, 2, 4): elements per trip of the row loop.

A broadcast operand (stride 0 along the row) is rescaled once per row. The sum (or difference) wraps like int32
and goes through ``mn_rq``'s requantization with constant multiplier and shift (its folded form where it applies:
the same bits as ``mn_mbqm``), then the output zero point and the clamp. Elements are read before their output is
written, in the walk's order, so an output placed exactly over an input (in-place sharing) is safe.

It takes the argument words of the ``mn_add_s8`` and ``mn_sub_s8`` tasks (``lower_elementwise._add``).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from micronn.micro.templates import _knobs, _walk
from micronn.micro.templates.pool_2d import PRELUDE

NAME = "add"
OP = "ADD/SUB"
VERSION = 1
KNOBS: dict[str, tuple[int, ...]] = {"table": (1, 0), "unroll": (1, 2, 4)}
DEFAULTS: dict[str, int] = {}
# The argument words of mn_add_s8 / mn_sub_s8 (kernels/add.c's enum, checked by the tests); GEO: the walk's words
ARGS = ("OUT", "IN1", "IN2", "OFF1", "OFF2", "LEFT_SHIFT", "MULT1", "SHIFT1", "MULT2", "SHIFT2", "MULT_OUT",
        "SHIFT_OUT", "OUT_ZP", "ACT_MIN", "ACT_MAX", "GEO")
GENERIC_SYMBOLS = {"mn_add_s8": "add", "mn_sub_s8": "sub"}
_A = {name: i for i, name in enumerate(ARGS)}
_QUANT = ARGS[3:15]


@dataclass(frozen=True)
class Shape:
    """One ADD or SUB layer: its walk and every rescaling constant (compiled in)."""

    kind: str
    walk: _walk.Walk
    off1: int
    off2: int
    left_shift: int
    mult1: int
    shift1: int
    mult2: int
    shift2: int
    mult_out: int
    shift_out: int
    out_zp: int
    act_min: int
    act_max: int

    @property
    def key(self) -> str:
        return (f"{NAME}:{self.kind},{self.walk.key},off={self.off1}:{self.off2},ls={self.left_shift},"
                f"q1={self.mult1}:{self.shift1},q2={self.mult2}:{self.shift2},qo={self.mult_out}:{self.shift_out},"
                f"out_zp={self.out_zp},act={self.act_min}:{self.act_max}")

    @property
    def macs(self) -> int:
        """Elements computed (the tuner's unit of work)."""
        return self.walk.elements


def shape_of(symbol: str, args: list[Any]) -> Shape | None:
    """The shape of an ADD or SUB task the template covers: multipliers below one (as the lowering requires), a
    left shift of at most 24 (the generic kernel's shifted operand fits in int32) and a walk with rows that step
    the output by one byte; else None."""
    kind = GENERIC_SYMBOLS.get(symbol)
    if kind is None or len(args) != len(ARGS) - 1 + 4 * _walk.DIMS:
        return None
    q = {n: args[_A[n]] for n in _QUANT}
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in q.values()):
        return None
    walk = _walk.walk_of(list(args[_A["GEO"]:]))
    if walk is None:
        return None
    for m, s in (("MULT1", "SHIFT1"), ("MULT2", "SHIFT2"), ("MULT_OUT", "SHIFT_OUT")):
        if not (0 <= q[m] < 2**31 and -31 <= q[s] <= 0):
            return None
    if not (0 <= q["LEFT_SHIFT"] <= 22 and -255 <= q["OFF1"] <= 255 and -255 <= q["OFF2"] <= 255):
        return None
    if not -128 <= q["ACT_MIN"] <= q["ACT_MAX"] <= 127:
        return None
    return Shape(kind, walk, *(q[n] for n in _QUANT))


def space(shape: Shape) -> list[dict[str, int]]:
    """Every config (six), tables and no unrolling first; unrolling only where the row is that long."""
    n = shape.walk.row[0]
    return [{"table": t, "unroll": u} for t in (1, 0) for u in (1, 2, 4) if u == 1 or n >= u]


def features(shape: Shape, config: dict[str, int]) -> list[float]:
    config = check_config(config)
    n, _, s1, s2 = shape.walk.row
    return [config["table"], config["unroll"], float(shape.kind == "sub"), n, len(shape.walk.sizes),
            float(s1 == 0), float(s2 == 0), n % config["unroll"], float(shape.mult_out > 1 << 30)]


def symbol(shape: Shape, config: dict[str, int]) -> str:
    return _knobs.symbol(sys.modules[__name__], shape, config, f"{shape.kind}_{shape.walk.elements}")


def check_config(config: dict[str, int]) -> dict[str, int]:
    return _knobs.check_config(NAME, KNOBS, {**DEFAULTS, **config})


def rescale(x: int, offset: int, left_shift: int, mult: int, shift: int) -> int:
    """The generic kernel's rescaling of one input value (add.c: wrapping shift left, then the multiply below one
    as floor((v * mult + 2^30) / 2^31) and a division by 2^-shift rounding half away from zero)."""
    v = ((x + offset) << left_shift) & 0xFFFFFFFF
    v -= (v & 0x80000000) << 1
    h = (v * mult + (1 << 30)) >> 31
    if shift == 0:
        return h
    return (h - (h < 0) + (1 << (-shift - 1))) >> -shift


def _kernel(w: _knobs.Writer, shape: Shape, config: dict[str, int], name: str) -> None:
    tag = name.rsplit("_", 1)[1]
    s, a = shape, _A
    ops = ((1, s.off1, s.mult1, s.shift1), (2, s.off2, s.mult2, s.shift2))
    for k, off, m, sh in ops:
        if config["table"]:
            values = [rescale(u - 256 if u >= 128 else u, off, s.left_shift, m, sh) for u in range(256)]
            w(f"static const int32_t mn_t{k}_{tag}[256] = {{")
            for i in range(0, 256, 16):
                w("    " + ", ".join(str(v) for v in values[i:i + 16]) + ",")
            w("};")
            w(f"MN_INLINE int32_t mn_in{k}_{tag}(int8_t x) {{ return mn_t{k}_{tag}[(uint8_t)x]; }}")
        else:
            w(f"MN_INLINE int32_t mn_in{k}_{tag}(int8_t x) {{")
            w(f"    const int64_t h = ((int64_t)mn_wrap_shl(x + ({off}), {s.left_shift}) * {m} + (1 << 30)) >> 31;")
            if sh == 0:
                w("    return (int32_t)h;")
            else:
                w(f"    return (int32_t)((h - (h < 0) + {1 << (-sh - 1)}) >> {-sh});")
            w("}")
    w(f"MN_INLINE int8_t mn_out_{tag}(int32_t raw) {{")
    w(f"    const mn_rq q = mn_rq_init({s.mult_out}, {s.shift_out}, {s.out_zp});")
    w(f"    return (int8_t)mn_rq_clamp(&q, raw, {s.act_min}, {s.act_max});")
    w("}")
    op = "-" if s.kind == "sub" else "+"
    _walk.kernel(w, s.walk, (a["OUT"], a["IN1"], a["IN2"]), name, config["unroll"],
                 lambda v: f"mn_in1_{tag}({v})", lambda v: f"mn_in2_{tag}({v})",
                 lambda x1, x2: f"mn_out_{tag}((int32_t)((uint32_t){x1} {op} (uint32_t){x2}))")


def source(shape: Shape, configs: list[dict[str, int]]) -> tuple[list[str], str]:
    """``(symbols, C source)``: one translation unit with a kernel per config."""
    return _knobs.source(sys.modules[__name__], shape, configs, PRELUDE)


def generate(shape: Shape, config: dict[str, int]) -> tuple[str, str]:
    names, text = source(shape, [config])
    return names[0], text
