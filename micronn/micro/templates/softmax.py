"""Schedule template: int8 SOFTMAX (int8 or int16 output) over the last axis, specialised to one layer.

TFLM's integer softmax exponentiates each value's difference from its row maximum in gemmlowp fixed point, sums the
exponentials, takes the reciprocal of the sum and scales each exponential by it (``kernels/softmax.c``). An int8
difference is one of at most 256 values, so the exponentials can be computed once, when the kernel is generated,
with ``micronn.fixedpoint`` (the interpreter's own arithmetic): the table holds exp(-d) for every difference d the
layer's ``diff_min`` admits. The generated function fixes rows, depth and the layer's constants at compile time.
Knobs:

* ``table`` (2, 1, 0): 2 a table of exponentials and a second of their Q12.19 terms for the sum (two lookups, no
  rounding shift per value), 1 the exponentials only, 0 no table (the exponentials computed in code, once per value
  for both passes: what ``softmax.c`` does, with its constants compiled in);
* ``unroll`` (1, 2): values per trip of the loops.

Covered: rows of at most 256 values (the code-path keeps one row's exponentials on the stack) and ``diff_min`` in
[-255, 0] or below (then every difference is admitted).
"""

from __future__ import annotations

import itertools
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from micronn import fixedpoint as fp
from micronn.micro.templates import _knobs

NAME = "softmax"
OP = "SOFTMAX"
VERSION = 1
KNOBS: dict[str, tuple[int, ...]] = {"table": (2, 1, 0), "unroll": (1, 2)}
DEFAULTS: dict[str, int] = {}
ARGS = ("OUT", "IN", "ROWS", "DEPTH", "MULT", "LEFT_SHIFT", "DIFF_MIN", "OUT_BITS")
GENERIC_SYMBOL = "mn_softmax_s8"
_A = {name: i for i, name in enumerate(ARGS)}
MAX_DEPTH = 256
SCALED_DIFF_INTEGER_BITS = 5


@dataclass(frozen=True)
class Shape:
    rows: int
    depth: int
    mult: int
    left_shift: int
    diff_min: int
    out_bits: int

    @property
    def key(self) -> str:
        return (f"{NAME}:rows={self.rows},depth={self.depth},mult={self.mult},left_shift={self.left_shift},"
                f"diff_min={self.diff_min},out_bits={self.out_bits}")

    @property
    def macs(self) -> int:
        return 0

    @property
    def entries(self) -> int:
        """How many differences 0, 1, ... the layer admits (at most 256: int8 differences)."""
        return min(256, -self.diff_min + 1)


def shape_of(symbol: str, args: list[Any]) -> Shape | None:
    """The shape of an ``mn_softmax_s8`` task the template covers, else None."""
    if symbol != GENERIC_SYMBOL or len(args) != len(ARGS):
        return None
    v = {n: args[_A[n]] for n in ARGS[2:]}
    if not all(isinstance(x, int) for x in v.values()):
        return None
    if v["ROWS"] < 1 or not 1 <= v["DEPTH"] <= MAX_DEPTH or v["OUT_BITS"] not in (8, 16) or v["DIFF_MIN"] > 0:
        return None
    if not 0 <= v["LEFT_SHIFT"] < 31:
        return None
    return Shape(v["ROWS"], v["DEPTH"], v["MULT"], v["LEFT_SHIFT"], v["DIFF_MIN"], v["OUT_BITS"])


def space(shape: Shape) -> list[dict[str, int]]:
    return [dict(zip(KNOBS, values)) for values in itertools.product(*KNOBS.values())]


def features(shape: Shape, config: dict[str, int]) -> list[float]:
    config = check_config(config)
    return [config["table"], config["unroll"], shape.rows, shape.depth, shape.entries, shape.out_bits]


def symbol(shape: Shape, config: dict[str, int]) -> str:
    return _knobs.symbol(sys.modules[__name__], shape, config, f"{shape.rows}x{shape.depth}")


def check_config(config: dict[str, int]) -> dict[str, int]:
    return _knobs.check_config(NAME, KNOBS, {**DEFAULTS, **config})


def exponentials(shape: Shape) -> tuple[np.ndarray, np.ndarray]:
    """(exp(-d) in Q0.31, its Q12.19 term of the sum) for d = 0 .. entries - 1, as the interpreter computes them."""
    d = -np.arange(shape.entries, dtype=np.int64)
    scaled = fp.multiply_by_quantized_multiplier_greater_than_one(d, shape.mult, shape.left_shift)
    e = np.asarray(fp.exp_on_negative_values(scaled, SCALED_DIFF_INTEGER_BITS), np.int64)
    return e, np.asarray(fp.rescale(e, 0, 12), np.int64)


def _array(w: _knobs.Writer, name: str, values: np.ndarray) -> None:
    w(f"static const int32_t {name}[{len(values)}] = {{")
    for i in range(0, len(values), 8):
        w("    " + ", ".join(str(int(v)) for v in values[i:i + 8]) + ",")
    w("};")


_PRELUDE = """\
#include "mn_kernels.h"

#if defined(__clang__)
#define MN_NO_UNROLL _Pragma("clang loop unroll(disable)")
#else
#define MN_NO_UNROLL _Pragma("GCC unroll 1")
#endif
"""


def _kernel(w: _knobs.Writer, shape: Shape, config: dict[str, int], name: str) -> None:
    tag = name.rsplit("_", 1)[1]
    s, table, u = shape, config["table"], config["unroll"]
    n = s.entries
    lo, hi = (-32768, 32767) if s.out_bits == 16 else (-128, 127)
    otype = "int16_t" if s.out_bits == 16 else "int8_t"
    if table:
        e, term = exponentials(shape)
        _array(w, f"mn_exp_{tag}", e)
        if table == 2:
            _array(w, f"mn_term_{tag}", term)
    w.open(f"void {name}(const mn_word *args)")
    w(f"const int8_t *in = (const int8_t *)args[{_A['IN']}];")
    w(f"{otype} *out = ({otype} *)args[{_A['OUT']}];")
    if not table:
        w(f"int32_t ex[{s.depth}];")
    w("MN_NO_UNROLL")
    w.open(f"for (int r = 0; r < {s.rows}; r++)")
    w(f"const int8_t *x = in + r * {s.depth};")
    w(f"{otype} *o = out + r * {s.depth};")
    w("int32_t max = -128;")

    def loop(body: list[str]) -> None:
        """``body`` for i = 0 .. depth - 1, ``u`` values a trip."""
        if s.depth // u:
            w("MN_NO_UNROLL")
            w.open(f"for (int i0 = 0; i0 < {s.depth // u * u}; i0 += {u})")
            for k in range(u):
                w.open("")
                w(f"const int i = i0 + {k};")
                for line in body:
                    w(line)
                w.close()
            w.close()
        for i in range(s.depth // u * u, s.depth):
            w.open("")
            w(f"const int i = {i};")
            for line in body:
                w(line)
            w.close()

    loop(["max = x[i] > max ? x[i] : max;"])
    w("uint32_t sum = 0; /* Q12.19, wrapping like TFLM's int32 */")
    if table == 2:
        loop(["const int d = max - x[i];", f"if (d < {n}) sum += (uint32_t)mn_term_{tag}[d];"])
    elif table == 1:
        loop(["const int d = max - x[i];", f"if (d < {n}) sum += (uint32_t)mn_rescale(mn_exp_{tag}[d], 0, 12);"])
    else:
        loop(["const int d = max - x[i];",
              f"ex[i] = d < {n} ? mn_exp_on_negative_values(mn_srdhm(mn_wrap_shl(-d, {s.left_shift}), {s.mult}), "
              f"{SCALED_DIFF_INTEGER_BITS}) : 0;",
              f"if (d < {n}) sum += (uint32_t)mn_rescale(ex[i], 0, 12);"])
    w("const int headroom = mn_clz32(sum);")
    w("const int32_t scale = mn_one_over_one_plus_x((int32_t)((headroom < 32 ? sum << headroom : 0u) - 0x80000000u));")
    w(f"const int exponent = 12 - headroom + 31 - {s.out_bits};")
    w.open("if (exponent > 31)")  # beyond 31 TFLM's reference aborts; softmax.c writes the minimum
    w(f"for (int i = 0; i < {s.depth}; i++) o[i] = {lo};")
    w("continue;")
    w.close()
    ex = f"mn_exp_{tag}[d]" if table else "ex[i]"
    loop(["const int d = max - x[i];",
          f"o[i] = ({otype})(d < {n} ? mn_clamp(mn_rdbpot(mn_srdhm(scale, {ex}), exponent) + {lo}, {lo}, {hi}) "
          f": {lo});"])
    w.close()
    w.close()
    w("")


def source(shape: Shape, configs: list[dict[str, int]]) -> tuple[list[str], str]:
    """``(symbols, C source)``: one translation unit with a kernel per config."""
    return _knobs.source(sys.modules[__name__], shape, configs, _PRELUDE)


def generate(shape: Shape, config: dict[str, int]) -> tuple[str, str]:
    names, text = source(shape, [config])
    return names[0], text
