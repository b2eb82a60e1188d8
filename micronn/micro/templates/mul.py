"""Schedule template: int8 MUL, specialised to one layer.

The generated function has the walk (element count and broadcast shape, ``_walk``), both zero points, the
multiplier and shift, the output zero point and the activation range compiled in. Knobs:

* ``rq`` (1, 0): the product's requantization as ``mn_rq`` with constant multiplier and shift (its folded
  form, or the single rounding of a multiplier above one, where they apply: the same bits as ``mn_mbqm``), or
  ``mn_mbqm`` itself with the constants;
* ``unroll`` (1, 2, 4): elements per trip of the row loop.

A broadcast operand (stride 0 along the row) is offset once per row. Elements are read before their output is
written, in the walk's order, so an output placed exactly over an input (in-place sharing) is safe.

It takes the argument words of the ``mn_mul_s8`` task (``lower_elementwise._mul``).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from micronn.micro.templates import _knobs, _walk
from micronn.micro.templates.pool_2d import PRELUDE

NAME = "mul"
OP = "MUL"
VERSION = 1
KNOBS: dict[str, tuple[int, ...]] = {"rq": (1, 0), "unroll": (1, 2, 4)}
DEFAULTS: dict[str, int] = {}
# The argument words of mn_mul_s8 (kernels/mul.c's enum, checked by the tests); GEO: the walk's words
ARGS = ("OUT", "IN1", "IN2", "ZP1", "ZP2", "MULT", "SHIFT", "OUT_ZP", "ACT_MIN", "ACT_MAX", "GEO")
GENERIC_SYMBOL = "mn_mul_s8"
_A = {name: i for i, name in enumerate(ARGS)}
_QUANT = ARGS[3:10]


@dataclass(frozen=True)
class Shape:
    """One MUL layer: its walk and its quantization (compiled in)."""

    walk: _walk.Walk
    zp1: int
    zp2: int
    mult: int
    shift: int
    out_zp: int
    act_min: int
    act_max: int

    @property
    def key(self) -> str:
        return (f"{NAME}:{self.walk.key},zp={self.zp1}:{self.zp2},q={self.mult}:{self.shift},out_zp={self.out_zp},"
                f"act={self.act_min}:{self.act_max}")

    @property
    def macs(self) -> int:
        """Elements computed (the tuner's unit of work)."""
        return self.walk.elements


def shape_of(symbol: str, args: list[Any]) -> Shape | None:
    """The shape of a MUL task the template covers (any int8 zero points, a shift the kernels apply, a walk with
    rows that step the output by one byte), else None."""
    if symbol != GENERIC_SYMBOL or len(args) != len(ARGS) - 1 + 4 * _walk.DIMS:
        return None
    q = {n: args[_A[n]] for n in _QUANT}
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in q.values()):
        return None
    walk = _walk.walk_of(list(args[_A["GEO"]:]))
    if walk is None or not (0 <= q["MULT"] < 2**31 and -31 <= q["SHIFT"] <= 30):
        return None
    if not (-128 <= q["ZP1"] <= 127 and -128 <= q["ZP2"] <= 127 and -128 <= q["ACT_MIN"] <= q["ACT_MAX"] <= 127):
        return None
    return Shape(walk, *(q[n] for n in _QUANT))


def space(shape: Shape) -> list[dict[str, int]]:
    """Every config (six), unrolling only where the row is that long."""
    n = shape.walk.row[0]
    return [{"rq": r, "unroll": u} for r in (1, 0) for u in (1, 2, 4) if u == 1 or n >= u]


def features(shape: Shape, config: dict[str, int]) -> list[float]:
    config = check_config(config)
    n, _, s1, s2 = shape.walk.row
    return [config["rq"], config["unroll"], n, len(shape.walk.sizes), float(s1 == 0), float(s2 == 0),
            n % config["unroll"], float(shape.shift >= 0)]


def symbol(shape: Shape, config: dict[str, int]) -> str:
    return _knobs.symbol(sys.modules[__name__], shape, config, str(shape.walk.elements))


def check_config(config: dict[str, int]) -> dict[str, int]:
    return _knobs.check_config(NAME, KNOBS, {**DEFAULTS, **config})


def _kernel(w: _knobs.Writer, shape: Shape, config: dict[str, int], name: str) -> None:
    tag = name.rsplit("_", 1)[1]
    s, a = shape, _A
    w(f"MN_INLINE int8_t mn_out_{tag}(int32_t p) {{")
    if config["rq"]:
        w(f"    const mn_rq q = mn_rq_init({s.mult}, {s.shift}, {s.out_zp});")
        w(f"    return (int8_t)mn_rq_clamp(&q, p, {s.act_min}, {s.act_max});")
    else:
        w(f"    return (int8_t)mn_add_clamp(mn_mbqm(p, {s.mult}, {s.shift}), {s.out_zp}, {s.act_min}, {s.act_max});")
    w("}")
    _walk.kernel(w, s.walk, (a["OUT"], a["IN1"], a["IN2"]), name, config["unroll"],
                 lambda v: f"({v} - ({s.zp1}))", lambda v: f"({v} - ({s.zp2}))",
                 lambda x1, x2: f"mn_out_{tag}({x1} * {x2})")


def source(shape: Shape, configs: list[dict[str, int]]) -> tuple[list[str], str]:
    """``(symbols, C source)``: one translation unit with a kernel per config."""
    return _knobs.source(sys.modules[__name__], shape, configs, PRELUDE)


def generate(shape: Shape, config: dict[str, int]) -> tuple[str, str]:
    names, text = source(shape, [config])
    return names[0], text
