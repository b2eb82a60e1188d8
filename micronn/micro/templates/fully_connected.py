"""Schedule template: int8 FULLY_CONNECTED with per-tensor quantization, specialised to one layer.

The weights come in ``lower.paired_rows``'s layout (see ``_pair``); ``bias_full`` already holds the input zero
point's term, so the input widens with no offset. The generated function (depth, units, batches, the
requantization and the activation range compile-time constants) takes four units at a time from the projection to
their int8 outputs while the sums are in registers; a last pair of rows (units 2 mod 4, or an odd count padded to
a pair) follows in C. Knobs:

* ``dot`` (1, 0): the tile's projection in Thumb-2 assembly or in C;
* ``unroll`` (0 = all, 1, 2, 4): groups of four inputs per trip of the projection loop.

It takes the argument words of the ``mn_fully_connected_s8`` task (``lower._fully_connected``) and covers layers
with one multiplier for every unit in mn_rq's folded form (a right shift of 2..22) and at most 96 inputs (the
widened input lives on the stack); ``shape_of`` reads the multiplier from the task's constant. Cores without the
DSP extension take a portable path built from mn_kernels.h's helpers.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from micronn.micro.templates import _knobs, _pair

NAME = "fully_connected"
OP = "FULLY_CONNECTED"
VERSION = 1
KNOBS: dict[str, tuple[int, ...]] = {"unroll": (0, 1, 2, 4), "dot": (1, 0)}
DEFAULTS: dict[str, int] = {}
ARGS = ("OUT", "IN", "WEIGHTS", "BIAS_FULL", "MULT", "SHIFT", "BATCHES", "DEPTH", "UNITS", "OUT_ZP", "ACT_MIN",
        "ACT_MAX", "PER_CHANNEL", "FIX")
GENERIC_SYMBOL = "mn_fully_connected_s8"
_A = {name: i for i, name in enumerate(ARGS)}
MAX_GROUPS = 24  # mn_kernels.h's MN_PAIR_SLAB: the widened input lives on the stack


@dataclass(frozen=True)
class Shape:
    """The layer's sizes and its requantization (compiled in)."""

    batches: int
    depth: int
    units: int
    mult: int
    shift: int
    out_zp: int
    act_min: int
    act_max: int

    @property
    def key(self) -> str:
        return (f"{NAME}:batches={self.batches},depth={self.depth},units={self.units},q={self.mult}:{self.shift},"
                f"out_zp={self.out_zp},act={self.act_min}:{self.act_max}")

    @property
    def macs(self) -> int:
        return self.batches * self.depth * self.units


def _scalar(a: Any) -> int | None:
    """The one value of a per-unit constant array that holds the same value for every unit, else None."""
    data = getattr(a, "data", None)
    if not isinstance(data, np.ndarray) or data.size == 0 or not np.all(data == data.reshape(-1)[0]):
        return None
    return int(data.reshape(-1)[0])


def shape_of(symbol: str, args: list[Any]) -> Shape | None:
    """The shape of an ``mn_fully_connected_s8`` task the template covers (see the module docstring), else None."""
    if symbol != GENERIC_SYMBOL or len(args) != len(ARGS):
        return None
    v = {n: args[_A[n]] for n in ("BATCHES", "DEPTH", "UNITS", "OUT_ZP", "ACT_MIN", "ACT_MAX", "PER_CHANNEL")}
    if not all(isinstance(x, int) for x in v.values()) or v["PER_CHANNEL"]:
        return None
    mult, shift = _scalar(args[_A["MULT"]]), _scalar(args[_A["SHIFT"]])
    if mult is None or shift is None or not _pair.folded(mult, shift, v["OUT_ZP"]):
        return None
    if min(v["BATCHES"], v["DEPTH"], v["UNITS"]) < 1 or v["DEPTH"] > 4 * MAX_GROUPS:
        return None
    if not -128 <= v["ACT_MIN"] <= v["ACT_MAX"] <= 127:
        return None
    return Shape(v["BATCHES"], v["DEPTH"], v["UNITS"], mult, shift, v["OUT_ZP"], v["ACT_MIN"], v["ACT_MAX"])


def space(shape: Shape) -> list[dict[str, int]]:
    """Every config (eight), assembly and whole unrolling first."""
    return [{"unroll": u, "dot": d} for d in (1, 0) for u in (0, 4, 2, 1)]


def features(shape: Shape, config: dict[str, int]) -> list[float]:
    config = check_config(config)
    groups = -(-shape.depth // 4)
    u = config["unroll"] or groups
    return [config["unroll"], config["dot"], shape.batches, shape.depth, shape.units, groups % u, shape.units % 4]


def symbol(shape: Shape, config: dict[str, int]) -> str:
    return _knobs.symbol(sys.modules[__name__], shape, config, f"{shape.depth}x{shape.units}x{shape.batches}")


def check_config(config: dict[str, int]) -> dict[str, int]:
    return _knobs.check_config(NAME, KNOBS, {**DEFAULTS, **config})


def _store(w: _knobs.Writer, shape: Shape, acc: str, unit: str) -> None:
    """o[unit] = the requantized, clamped ``acc`` plus the unit's folded bias."""
    v = _pair.fold(f"(int32_t)({acc} + (uint32_t)bias[{unit}])", shape.mult, shape.shift, shape.out_zp)
    if (shape.act_min, shape.act_max) == (-128, 127):
        w(f"o[{unit}] = (int8_t)__builtin_arm_ssat({v}, 8);")
    else:
        w(f"o[{unit}] = (int8_t)mn_clamp({v}, {shape.act_min}, {shape.act_max});")


def _portable(w: _knobs.Writer, shape: Shape, tag: str) -> None:
    """The same tiles through mn_kernels.h's paired product (any core) and mn_rq's requantization."""
    groups, a = -(-shape.depth // 4), _A
    u2 = shape.units + shape.units % 2
    w.open(f"static void mn_fc_portable_{tag}(const mn_word *args)")
    w(f"const int32_t *bias = MN_P(const int32_t, {a['BIAS_FULL']});")
    w(f"const mn_rq q = mn_rq_init({shape.mult}, {shape.shift}, {shape.out_zp});")
    w(f"uint32_t xe[{2 * groups}];")
    w("MN_NO_UNROLL")
    w.open(f"for (int b = 0; b < {shape.batches}; b++)")
    w(f"const int8_t *x = MN_P(const int8_t, {a['IN']}) + b * {shape.depth};")
    w(f"int8_t *o = MN_P(int8_t, {a['OUT']}) + b * {shape.units};")
    w(f"const int32_t *fix = MN_P(const int32_t, {a['FIX']});")
    w(f"mn_pair_widen(x, {shape.depth}, 0, xe);")
    w("MN_NO_UNROLL")
    w.open(f"for (int u = 0; u < {u2}; u += 4)")
    w(f"const int rows = {u2} - u < 4 ? 2 : 4;")
    w("uint32_t acc[4] = {0, 0, 0, 0};")
    w(f"mn_pair_block(xe, MN_P(const uint32_t, {a['WEIGHTS']}) + (size_t)u * {groups}, 0, {groups}, {groups}, rows, "
      "acc);")
    w("fix = mn_pair_fix(fix, u, u + rows, x, 0, acc);")
    w(f"for (int j = 0; j < rows && u + j < {shape.units}; j++)")
    w(f"    o[u + j] = (int8_t)mn_rq_clamp(&q, (int32_t)(acc[j] + (uint32_t)bias[u + j]), {shape.act_min}, "
      f"{shape.act_max});")
    w.close()
    w.close()
    w.close()
    w("")


def _pair_tail(w: _knobs.Writer, shape: Shape, groups: int, u: int) -> None:
    """Units ``u`` (and ``u + 1`` where it exists) from the last pair of rows, 2 words per group, in C."""
    w.open("")
    w("uint32_t a0 = 0, b1 = 0;")
    w("MN_NO_UNROLL")
    w.open(f"for (int g = 0; g < {groups}; g++)")
    w("const uint32_t x02 = xe[2 * g], x13 = xe[2 * g + 1], k0 = wq[2 * g], k1 = wq[2 * g + 1];")
    w("b1 = MN_SMLAD(k0, x02, b1), a0 = MN_SMLAD(MN_EVEN(k0), x02, a0);")
    w("b1 = MN_SMLAD(k1, x13, b1), a0 = MN_SMLAD(MN_EVEN(k1), x13, a0);")
    w.close()
    w("uint32_t a1 = (uint32_t)((int32_t)(b1 - a0) >> 8);")
    w(f"for (; fix[0] < {u + 2}; fix += 2) a1 -= (uint32_t)x[fix[1]];")
    _store(w, shape, "a0", str(u))
    if u + 1 < shape.units:
        _store(w, shape, "a1", str(u + 1))
    else:
        w("(void)a1;")
    w.close()


def _kernel(w: _knobs.Writer, shape: Shape, config: dict[str, int], name: str) -> None:
    tag = name.rsplit("_", 1)[1]
    groups, a = -(-shape.depth // 4), _A
    u2 = shape.units + shape.units % 2
    tiles = u2 // 4
    _portable(w, shape, tag)
    w("#if defined(__ARM_FEATURE_DSP) && defined(__thumb2__)")
    w.open(f"void {name}(const mn_word *args)")
    w(f"const int32_t *bias = (const int32_t *)args[{a['BIAS_FULL']}];")
    w("MN_NO_UNROLL")
    w.open(f"for (int b = 0; b < {shape.batches}; b++)")
    w(f"const int8_t *x = (const int8_t *)args[{a['IN']}] + b * {shape.depth};")
    w(f"int8_t *o = (int8_t *)args[{a['OUT']}] + b * {shape.units};")
    w(f"const int32_t *fix = (const int32_t *)args[{a['FIX']}];")
    _pair.widen(w, shape.depth, 0)
    w(f"const uint32_t *wq = (const uint32_t *)args[{a['WEIGHTS']}];")

    def tile(last: bool) -> None:
        if config["dot"]:
            _pair.tile_dot_asm(w, groups, config["unroll"])
        else:
            _pair.tile_dot(w, groups, config["unroll"])
            w(f"wq += {4 * groups};")
        w("MN_NO_UNROLL")
        w("for (; fix[0] < u + 4; fix += 2) { const uint32_t d = (uint32_t)x[fix[1]]; "
          "if (fix[0] & 2) a3 -= d; else a1 -= d; }")
        for j in range(4):
            if last and tiles * 4 - 4 + j >= shape.units:
                w(f"(void)a{j};")
                continue
            _store(w, shape, f"a{j}", f"u + {j}")

    full = tiles - (1 if tiles and tiles * 4 > shape.units else 0)  # tiles whose four rows are all units
    if full:
        w("MN_NO_UNROLL")
        w.open(f"for (int u = 0; u < {4 * full}; u += 4)")
        tile(False)
        w.close()
    if full < tiles:
        w.open("")
        w(f"const int u = {4 * full};")
        tile(True)
        w.close()
    if u2 % 4:
        _pair_tail(w, shape, groups, 4 * tiles)
    w.close()
    w.close()
    w("#else")
    w(f"void {name}(const mn_word *args) {{ mn_fc_portable_{tag}(args); }}")
    w("#endif")
    w("")


def source(shape: Shape, configs: list[dict[str, int]]) -> tuple[list[str], str]:
    """``(symbols, C source)``: one translation unit with a kernel per config."""
    return _knobs.source(sys.modules[__name__], shape, configs, _pair.PRELUDE)


def generate(shape: Shape, config: dict[str, int]) -> tuple[str, str]:
    names, text = source(shape, [config])
    return names[0], text
