"""Schedule template: int8 AVERAGE_POOL_2D and MAX_POOL_2D, specialised to one layer's window geometry.

The generated function has the batch, the sizes, strides, padding, activation range and ``stage`` compiled in,
and walks the output pixels in raster order like ``kernels/pool_2d.c``. Knobs:

* ``simd`` (1, 0): four channels per step on cores with the DSP extension (one unaligned word per tap): the
  average sums them as two pairs of int16 lanes (SXTAB16, exact for windows of at most 256 taps), the maximum
  compares all four bytes at once (SSUB8 sets the GE flags, SEL keeps the larger); other cores, and the last
  ``c % 4`` channels, run one channel at a time;
* ``unroll`` (2, 1, 0): a full-window pixel's taps all unrolled (constant offsets), each window row unrolled, or
  loops;
* ``split`` (1, 0): output pixels whose window lies inside the input run without bounds, their count and divisor
  compile-time constants; the border keeps run-time bounds (with ``split`` 0 every pixel does).

The average rounds half away from zero by the count of taps inside the input, ``(sum +- count / 2) / count``
with C's truncating division, as TFLM and the generic kernel do; the maximum starts from the activation minimum
(so the clamp's lower half costs nothing). With ``stage`` (the plan streams the output over the input) each pixel
is finished in a stack buffer and stored after all its taps were read, as the generic kernel does.

It takes the argument words of the ``mn_average_pool_2d_s8`` and ``mn_max_pool_2d_s8`` tasks (``lower._pool``).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from micronn.micro.templates import _knobs

NAME = "pool_2d"
OP = "AVERAGE_POOL_2D/MAX_POOL_2D"
VERSION = 1
KNOBS: dict[str, tuple[int, ...]] = {"simd": (1, 0), "unroll": (2, 1, 0), "split": (1, 0)}
DEFAULTS: dict[str, int] = {}
# The argument words of mn_average_pool_2d_s8 / mn_max_pool_2d_s8 (kernels/pool_2d.c's enum, checked by the tests)
ARGS = ("OUT", "IN", "N", "IN_H", "IN_W", "C", "OUT_H", "OUT_W", "F_H", "F_W", "S_H", "S_W", "PAD_T", "PAD_L",
        "ACT_MIN", "ACT_MAX", "STAGE")
GENERIC_SYMBOLS = {"mn_average_pool_2d_s8": "avg", "mn_max_pool_2d_s8": "max"}
_A = {name: i for i, name in enumerate(ARGS)}
MAX_UNROLLED = 64  # taps a fully unrolled window may have (more: row by row)
SIMD_AVG_TAPS = 256  # int16 lanes hold the sum of at most 256 int8 taps


@dataclass(frozen=True)
class Shape:
    """One pooling layer: its kind (``avg`` or ``max``), window geometry and activation range (compiled in)."""

    kind: str
    n: int
    in_h: int
    in_w: int
    c: int
    out_h: int
    out_w: int
    f_h: int
    f_w: int
    s_h: int
    s_w: int
    pad_t: int
    pad_l: int
    act_min: int
    act_max: int
    stage: int

    @property
    def key(self) -> str:
        return (f"{NAME}:{self.kind},n={self.n},in={self.in_h}x{self.in_w}x{self.c},out={self.out_h}x{self.out_w},"
                f"f={self.f_h}x{self.f_w},s={self.s_h}x{self.s_w},pad={self.pad_t}:{self.pad_l},"
                f"act={self.act_min}:{self.act_max},stage={self.stage}")

    @property
    def taps(self) -> int:
        return self.f_h * self.f_w

    @property
    def macs(self) -> int:
        """Window taps read (the tuner's unit of work)."""
        return self.n * self.out_h * self.out_w * self.c * self.taps

    def inside(self, o: int, axis: int) -> bool:
        """Whether output row (axis 0) or column (axis 1) ``o``'s window lies inside the input."""
        s, p, f, size = ((self.s_h, self.pad_t, self.f_h, self.in_h) if axis == 0 else
                         (self.s_w, self.pad_l, self.f_w, self.in_w))
        return o * s - p >= 0 and o * s - p + f <= size

    def interior(self, axis: int) -> tuple[int, int]:
        """[first, end) of the output rows (axis 0) or columns (1) whose windows lie inside the input (a range:
        the condition holds between two bounds); (0, 0) when there are none."""
        inside = [o for o in range(self.out_h if axis == 0 else self.out_w) if self.inside(o, axis)]
        return (inside[0], inside[-1] + 1) if inside else (0, 0)


def shape_of(symbol: str, args: list[Any]) -> Shape | None:
    """The shape of a pooling task the template covers (any int8 geometry with sizes >= 1), else None."""
    kind = GENERIC_SYMBOLS.get(symbol)
    if kind is None or len(args) != len(ARGS):
        return None
    v = {n: args[_A[n]] for n in ARGS[2:]}
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in v.values()):
        return None
    if min(v["N"], v["IN_H"], v["IN_W"], v["C"], v["OUT_H"], v["OUT_W"], v["F_H"], v["F_W"], v["S_H"], v["S_W"]) < 1:
        return None
    if v["PAD_T"] < 0 or v["PAD_L"] < 0 or v["STAGE"] not in (0, 1):
        return None
    if not -128 <= v["ACT_MIN"] <= v["ACT_MAX"] <= 127:
        return None
    return Shape(kind, *(v[n] for n in ARGS[2:]))


def space(shape: Shape) -> list[dict[str, int]]:
    """The configs that generate different code for ``shape``: no SIMD average beyond 256 taps, no full unrolling
    beyond ``MAX_UNROLLED`` taps (nor row unrolling of rows that long), no split without interior pixels."""
    simd = (1, 0) if shape.kind == "max" or shape.taps <= SIMD_AVG_TAPS else (0,)
    unroll = [u for u in (2, 1, 0) if u == 0 or (u == 1 and shape.f_w <= MAX_UNROLLED) or
              (u == 2 and shape.taps <= MAX_UNROLLED)]
    ry, cx = shape.interior(0), shape.interior(1)
    split = (1, 0) if ry[1] > ry[0] and cx[1] > cx[0] else (0,)
    return [{"simd": s, "unroll": u, "split": p} for s in simd for u in unroll for p in split]


def features(shape: Shape, config: dict[str, int]) -> list[float]:
    config = check_config(config)
    ry, cx = shape.interior(0), shape.interior(1)
    inner = (ry[1] - ry[0]) * (cx[1] - cx[0]) / (shape.out_h * shape.out_w)
    return [config["simd"], config["unroll"], config["split"], float(shape.kind == "avg"), shape.c, shape.c % 4,
            shape.f_h, shape.f_w, shape.s_h, shape.s_w, inner, shape.stage]


def symbol(shape: Shape, config: dict[str, int]) -> str:
    return _knobs.symbol(sys.modules[__name__], shape, config, f"{shape.kind}_{shape.f_h}x{shape.f_w}x{shape.c}")


def check_config(config: dict[str, int]) -> dict[str, int]:
    return _knobs.check_config(NAME, KNOBS, {**DEFAULTS, **config})


PRELUDE = """\
#include "mn_kernels.h"

#if defined(__clang__)
#define MN_NO_UNROLL _Pragma("clang loop unroll(disable)")
#else
#define MN_NO_UNROLL _Pragma("GCC unroll 1")
#endif
#define MN_INLINE static inline __attribute__((always_inline))

#if defined(__ARM_FEATURE_DSP)
/* bytewise signed maximum and minimum: SSUB8 sets GE per byte where a >= b, SEL picks by GE (one asm block: the
 * compiler never sees the flags between them) */
MN_INLINE uint32_t mn_max4(uint32_t a, uint32_t b) {
    uint32_t t;
    __asm__("ssub8 %0, %1, %2\\n\\tsel %0, %1, %2" : "=&r"(t) : "r"(a), "r"(b) : "cc");
    return t;
}
MN_INLINE uint32_t mn_min4(uint32_t a, uint32_t b) {
    uint32_t t;
    __asm__("ssub8 %0, %1, %2\\n\\tsel %0, %2, %1" : "=&r"(t) : "r"(a), "r"(b) : "cc");
    return t;
}
MN_INLINE void mn_put4(int8_t *p, uint32_t v) { *(mn_u32_any *)p = v; }
#endif
"""


class _Gen:
    """The C of one config's kernel."""

    def __init__(self, shape: Shape, config: dict[str, int], name: str):
        self.s, self.c, self.name = shape, config, name
        self.tag = name.rsplit("_", 1)[1]
        self.avg = shape.kind == "avg"
        self.full = (shape.act_min, shape.act_max) == (-128, 127)
        self.simd = bool(config["simd"]) and (not self.avg or shape.taps <= SIMD_AVG_TAPS)

    def finish(self, acc: str, count: str) -> str:
        """C for one channel's output value from its sum or maximum ``acc`` (clamped)."""
        s = self.s
        if self.avg:
            v = f"mn_avg_{self.tag}({acc}, {count})"
            return v if self.full else f"mn_clamp({v}, {s.act_min}, {s.act_max})"
        return acc if s.act_max == 127 else f"mn_min({acc}, {s.act_max})"

    def taps(self, w: _knobs.Writer, const: bool, tap: Any) -> None:
        """Calls ``tap(offset C expression)`` for every tap of the window: constant offsets (``const``: the full
        window, as the unroll knob says) or loops over the run-time ``ny`` x ``nx`` taps."""
        s, row = self.s, self.s.in_w * self.s.c
        if const and self.c["unroll"] == 2:
            for ky in range(s.f_h):
                for kx in range(s.f_w):
                    tap(str(ky * row + kx * s.c))
            return
        rows, cols = (str(s.f_h), str(s.f_w)) if const else ("ny", "nx")
        w("MN_NO_UNROLL")
        w.open(f"for (int ky = 0; ky < {rows}; ky++)")
        if const and self.c["unroll"] == 1:
            for kx in range(s.f_w):
                tap(f"ky * {row} + {kx * s.c}")
        else:
            w("MN_NO_UNROLL")
            w.open(f"for (int kx = 0; kx < {cols}; kx++)")
            tap(f"ky * {row} + kx * {s.c}")
            w.close()
        w.close()

    def scalar(self, w: _knobs.Writer, const: bool, first: int, count: str) -> None:
        """Channels ``first``..c-1 of a pixel one at a time: window ``win``, output ``o``."""
        s = self.s
        if first >= s.c:
            return
        w("MN_NO_UNROLL")
        w.open(f"for (int ch = {first}; ch < {s.c}; ch++)")
        w("const int8_t *p = win + ch;")
        w(f"int32_t acc = {0 if self.avg else s.act_min};")
        if self.avg:
            self.taps(w, const, lambda off: w(f"acc += p[{off}];"))
        else:
            self.taps(w, const, lambda off: w(f"acc = mn_max(acc, p[{off}]);"))
        w(f"o[ch] = (int8_t)({self.finish('acc', count)});")
        w.close()

    def vector(self, w: _knobs.Writer, const: bool, count: str) -> None:
        """Four channels per step (DSP): whole groups of four, then the rest one at a time."""
        s = self.s
        groups = s.c // 4
        if groups:
            w("MN_NO_UNROLL")
            w.open(f"for (int g = 0; g < {4 * groups}; g += 4)")
            w("const int8_t *p = win + g;")
            if self.avg:
                w("uint32_t s02 = 0, s13 = 0;")

                def tap(off: str) -> None:
                    w(f"{{ const uint32_t v = mn_word4(p + {off}); "
                      "s02 = (uint32_t)__builtin_arm_sxtab16((int32_t)s02, (int32_t)v); "
                      "s13 = (uint32_t)__builtin_arm_sxtab16((int32_t)s13, (int32_t)((v >> 8) | (v << 24))); }")

                self.taps(w, const, tap)
                for j, (acc, hi) in enumerate((("s02", 0), ("s13", 0), ("s02", 1), ("s13", 1))):
                    lane = f"((int32_t){acc} >> 16)" if hi else f"(int16_t){acc}"
                    w(f"o[g + {j}] = (int8_t)({self.finish(lane, count)});")
            else:
                lo = (s.act_min & 0xFF) * 0x01010101
                w(f"uint32_t m = {lo}u;")
                self.taps(w, const, lambda off: w(f"m = mn_max4(m, mn_word4(p + {off}));"))
                if s.act_max != 127:
                    w(f"m = mn_min4(m, {(s.act_max & 0xFF) * 0x01010101}u);")
                w("mn_put4(o + g, m);")
            w.close()
        self.scalar(w, const, 4 * groups, count)

    def pixel(self, w: _knobs.Writer, const: bool, count: str) -> None:
        if self.simd:
            w("#if defined(__ARM_FEATURE_DSP)")
            self.vector(w, const, count)
            w("#else")
            self.scalar(w, const, 0, count)
            w("#endif")
        else:
            self.scalar(w, const, 0, count)

    def write(self, w: _knobs.Writer) -> None:
        s, tag = self.s, self.tag
        ry, cx = s.interior(0), s.interior(1)
        split = bool(self.c["split"]) and ry[1] > ry[0] and cx[1] > cx[0]
        edge = not split or ry != (0, s.out_h) or cx != (0, s.out_w)
        if self.avg:
            w(f"MN_INLINE int32_t mn_avg_{tag}(int32_t acc, int32_t count) {{")
            w("    return (acc > 0 ? acc + count / 2 : acc - count / 2) / count;")
            w("}")
        if edge:  # a pixel with run-time bounds (any pixel: a window partly or wholly in the padding)
            w.open(f"static void mn_edge_{tag}(const int8_t *in, int8_t *o, int oy, int ox)")
            w(f"const int ys = oy * {s.s_h} - {s.pad_t}, xs = ox * {s.s_w} - {s.pad_l};")
            w(f"const int y0 = ys > 0 ? ys : 0, y1 = ys + {s.f_h} < {s.in_h} ? ys + {s.f_h} : {s.in_h};")
            w(f"const int x0 = xs > 0 ? xs : 0, x1 = xs + {s.f_w} < {s.in_w} ? xs + {s.f_w} : {s.in_w};")
            w("const int ny = y1 - y0, nx = x1 - x0;")
            w(f"const int8_t *win = in + ((size_t)y0 * {s.in_w} + (size_t)x0) * {s.c};")
            if self.avg:
                w("const int32_t count = ny * nx;")
            self.pixel(w, False, "count")
            w.close()
            w("")
        if split:
            w.open(f"MN_INLINE void mn_inner_{tag}(const int8_t *win, int8_t *o)")
            self.pixel(w, True, str(s.taps))
            w.close()
            w("")
        a = _A
        w.open(f"void {self.name}(const mn_word *args)")
        w(f"const int8_t *in = (const int8_t *)args[{a['IN']}];")
        w(f"int8_t *out = (int8_t *)args[{a['OUT']}];")
        if s.stage:
            w(f"int8_t staged[{s.c}] __attribute__((aligned(4)));")
        w("MN_NO_UNROLL")
        w.open(f"for (int b = 0; b < {s.n}; b++, in += {s.in_h * s.in_w * s.c})")
        w("MN_NO_UNROLL")
        w.open(f"for (int oy = 0; oy < {s.out_h}; oy++)")
        w(f"int8_t *orow = out + ((size_t)b * {s.out_h} + (size_t)oy) * {s.out_w * s.c};")

        def pixels(lo: str, hi: str, inner: bool) -> None:
            if lo == hi:
                return
            w("MN_NO_UNROLL")
            if inner:
                w.open(f"for (int ox = {lo}; ox < {hi}; ox++, win += {s.s_w * s.c})")
            else:
                w.open(f"for (int ox = {lo}; ox < {hi}; ox++)")
            dst = "staged" if s.stage else f"orow + (size_t)ox * {s.c}"
            if inner:
                w(f"mn_inner_{tag}(win, {dst});")
            else:
                w(f"mn_edge_{tag}(in, {dst}, oy, ox);")
            if s.stage:
                w(f"memcpy(orow + (size_t)ox * {s.c}, staged, {s.c});")
            w.close()

        if split:
            whole = ry == (0, s.out_h)
            if not whole:
                w.open(f"if (oy >= {ry[0]} && oy < {ry[1]})")
            w(f"const int8_t *win = in + ((size_t)(oy * {s.s_h} - {s.pad_t}) * {s.in_w} + "
              f"(size_t)({cx[0] * s.s_w - s.pad_l})) * {s.c};")
            pixels("0", str(cx[0]), False)
            pixels(str(cx[0]), str(cx[1]), True)
            pixels(str(cx[1]), str(s.out_w), False)
            if not whole:
                w.close()
                w.open("else")
                pixels("0", str(s.out_w), False)
                w.close()
        else:
            pixels("0", str(s.out_w), False)
        w.close()
        w.close()
        w.close()
        w("")


def _kernel(w: _knobs.Writer, shape: Shape, config: dict[str, int], name: str) -> None:
    _Gen(shape, config, name).write(w)


def source(shape: Shape, configs: list[dict[str, int]]) -> tuple[list[str], str]:
    """``(symbols, C source)``: one translation unit with a kernel per config."""
    return _knobs.source(sys.modules[__name__], shape, configs, PRELUDE)


def generate(shape: Shape, config: dict[str, int]) -> tuple[str, str]:
    names, text = source(shape, [config])
    return names[0], text
