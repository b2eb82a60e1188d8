"""Schedule template: int16x8 CONV_2D with a 1x1 filter, stride 1 and no padding (int16 activations, int8 weights).

The layer is ``pixels x in_c`` int16 rows times ``out_c`` int8 filter rows, each sum plus an int64 (or int32) bias
requantized per output channel as ``kernels/conv_2d_s16.c`` does (TFLM ignores the zero points of 16x8
convolutions). The generated function fixes the sizes at compile time and shapes the work by knobs:

* ``tile_oc`` (1, 2, 4): output channels accumulated at once, each input word feeding that many filters;
* ``tile_px`` (1, 2, 4): pixels accumulated at once, each filter word feeding that many pixels;
* ``expand`` (1, 0): first copy the tile's input pixels to the stack in SXTB16's lane order ((x0, x2), (x1, x3) per
  four channels), else pair the lanes with PKHBT/PKHTB in the inner loop. With the DSP extension one filter word
  gives two SXTB16 words and two SMLADs per pixel: four multiply-accumulates;
* ``unroll`` (1, 2): steps of four channels per trip of the inner loop.

Covered: the sums provably fit int32 (the lowering's ``wide`` word is 0), ``in_c`` and ``out_c`` at most 256 (the
stack buffers hold a tile). Outputs the plan streams over the input (``stage``) are stored per tile after the tile's
inputs are read (copied first with ``expand``, else finished in a stack buffer). Cores without the DSP extension
run the same tiles in plain C.
"""

from __future__ import annotations

import itertools
import sys
from dataclasses import dataclass
from typing import Any

from micronn.micro.templates import _knobs

NAME = "conv_2d_1x1_s16"
OP = "CONV_2D"
VERSION = 1
KNOBS: dict[str, tuple[int, ...]] = {"tile_oc": (4, 2, 1), "tile_px": (2, 4, 1), "expand": (1, 0), "unroll": (1, 2)}
DEFAULTS: dict[str, int] = {}
ARGS = ("OUT", "IN", "FILTER", "BIAS", "MULT", "SHIFT", "N", "IN_H", "IN_W", "IN_C", "OUT_H", "OUT_W", "OUT_C", "F_H",
        "F_W", "F_C", "S_H", "S_W", "D_H", "D_W", "PAD_T", "PAD_L", "ACT_MIN", "ACT_MAX", "REQUANT32", "WIDE", "STAGE")
GENERIC_SYMBOL = "mn_conv_2d_s16"
_A = {name: i for i, name in enumerate(ARGS)}
MAX_C = 256


@dataclass(frozen=True)
class Shape:
    in_c: int
    out_c: int
    pixels: int
    requant32: int

    @property
    def key(self) -> str:
        return f"{NAME}:in_c={self.in_c},out_c={self.out_c},pixels={self.pixels},requant32={self.requant32}"

    @property
    def macs(self) -> int:
        return self.in_c * self.out_c * self.pixels


def shape_of(symbol: str, args: list[Any]) -> Shape | None:
    """The shape of an ``mn_conv_2d_s16`` task the template covers (see the module docstring), else None."""
    if symbol != GENERIC_SYMBOL or len(args) != len(ARGS):
        return None
    v = {n: args[_A[n]] for n in ARGS[6:]}
    if not all(isinstance(x, int) for x in v.values()):
        return None
    if (v["F_H"], v["F_W"], v["S_H"], v["S_W"], v["PAD_T"], v["PAD_L"], v["WIDE"]) != (1, 1, 1, 1, 0, 0, 0):
        return None
    if v["F_C"] != v["IN_C"] or (v["OUT_H"], v["OUT_W"]) != (v["IN_H"], v["IN_W"]):
        return None
    pixels = v["N"] * v["IN_H"] * v["IN_W"]
    if min(v["IN_C"], v["OUT_C"], pixels) < 1 or max(v["IN_C"], v["OUT_C"]) > MAX_C:
        return None
    return Shape(v["IN_C"], v["OUT_C"], pixels, int(bool(v["REQUANT32"])))


def space(shape: Shape) -> list[dict[str, int]]:
    """Every config (36), in KNOBS order (larger tiles and the expanded input first)."""
    return [dict(zip(KNOBS, values)) for values in itertools.product(*KNOBS.values())]


def features(shape: Shape, config: dict[str, int]) -> list[float]:
    config = check_config(config)
    return [config["tile_oc"], config["tile_px"], config["expand"], config["unroll"], shape.in_c, shape.out_c,
            shape.pixels, shape.in_c % 4, shape.out_c % config["tile_oc"], shape.pixels % config["tile_px"]]


def symbol(shape: Shape, config: dict[str, int]) -> str:
    return _knobs.symbol(sys.modules[__name__], shape, config, f"{shape.in_c}x{shape.out_c}x{shape.pixels}")


def check_config(config: dict[str, int]) -> dict[str, int]:
    return _knobs.check_config(NAME, KNOBS, {**DEFAULTS, **config})


_PRELUDE = """\
#include "mn_kernels.h"

#if defined(__clang__)
#define MN_NO_UNROLL _Pragma("clang loop unroll(disable)")
#else
#define MN_NO_UNROLL _Pragma("GCC unroll 1")
#endif
#define MN_INLINE static inline __attribute__((always_inline))
typedef struct { const int64_t *bias; const int32_t *mult, *shift; int32_t lo, hi; } mn_ctx16;
"""


def _out(shape: Shape, acc: str, c: str) -> str:
    """C for conv_2d_s16.c's output stage of int32 sum ``acc`` for channel ``c``."""
    if shape.requant32:
        y = (f"mn_mbqm((int32_t)((uint32_t)(int32_t){acc} + (uint32_t)cx->bias[{c}]), cx->mult[{c}], "
             f"cx->shift[{c}])")
    else:
        y = (f"mn_requant_q15((uint64_t)(int64_t)(int32_t){acc} + (uint64_t)cx->bias[{c}], cx->mult[{c}], "
             f"cx->shift[{c}])")
    return f"(int16_t)mn_clamp({y}, cx->lo, cx->hi)"


def _tile(w: _knobs.Writer, shape: Shape, config: dict[str, int], px: int, dsp: bool, tag: str) -> None:
    """``mn_tile<px>_<tag>``: pixels ``pix .. pix + px`` (all output channels)."""
    ic, oc_n = shape.in_c, shape.out_c
    quads, rest = ic // 4, ic % 4
    expand = config["expand"] and dsp
    w.open(f"MN_INLINE void mn_tile{px}_{tag}(const int16_t *in, const int8_t *filter, int16_t *out, int pix, "
           "const mn_ctx16 *cx, const int stage)")
    w(f"const int16_t *xr = in + (size_t)pix * {ic};")
    staged = not expand
    if expand:  # (x0, x2), (x1, x3) per four channels, then the last in_c % 4 values
        stride = 2 * quads + rest
        w(f"uint32_t xb[{px * stride}];")
        for p in range(px):
            if quads:
                w("MN_NO_UNROLL")
                w.open(f"for (int q = 0; q < {quads}; q++)")
                w(f"const uint32_t a = *(const mn_u32_any *)(xr + {p * ic} + 4 * q), "
                  f"b = *(const mn_u32_any *)(xr + {p * ic} + 4 * q + 2);")
                w(f"xb[{p * stride} + 2 * q] = (a & 0xFFFFu) | (b << 16);")
                w(f"xb[{p * stride} + 2 * q + 1] = (a >> 16) | (b & 0xFFFF0000u);")
                w.close()
            for r in range(rest):
                w(f"xb[{p * stride + 2 * quads + r}] = (uint32_t)(int32_t)xr[{p * ic + 4 * quads + r}];")
        w("(void)stage;")
    else:
        w(f"int16_t st[{px * oc_n}];")
    for p in range(px):
        target = f"(stage ? st + {p * oc_n} : out + (size_t)(pix + {p}) * {oc_n})" if staged else \
            f"out + (size_t)(pix + {p}) * {oc_n}"
        w(f"int16_t *o{p} = {target};")

    def block(t: int) -> None:
        w.open("")
        w(f"const int8_t *wq = filter + (size_t)oc0 * {ic};")
        for j in range(t):
            for p in range(px):
                w(f"uint32_t a{p}_{j} = 0;")
        steps = quads if dsp else ic  # of four channels with the DSP extension, else of one
        u = config["unroll"]

        def one(i: str) -> None:
            w.open("")
            if dsp:
                for p in range(px):
                    if expand:
                        w(f"const uint32_t xe{p} = xb[{p * (2 * quads + rest)} + 2 * ({i})], "
                          f"xo{p} = xb[{p * (2 * quads + rest)} + 2 * ({i}) + 1];")
                    else:
                        w(f"const uint32_t xa{p} = *(const mn_u32_any *)(xr + {p * ic} + 4 * ({i})), "
                          f"xc{p} = *(const mn_u32_any *)(xr + {p * ic} + 4 * ({i}) + 2);")
                        w(f"const uint32_t xe{p} = (xa{p} & 0xFFFFu) | (xc{p} << 16), "
                          f"xo{p} = (xa{p} >> 16) | (xc{p} & 0xFFFF0000u);")
                for j in range(t):
                    w(f"{'uint32_t ' if j == 0 else ''}k = mn_word4(wq + {j * ic} + 4 * ({i}));")
                    w(f"{'uint32_t ' if j == 0 else ''}ke = MN_EVEN(k), ko = MN_ODD(k);")
                    for p in range(px):
                        w(f"a{p}_{j} = MN_SMLAD(xo{p}, ko, MN_SMLAD(xe{p}, ke, a{p}_{j}));")
            else:
                for p in range(px):
                    w(f"const int32_t x{p} = xr[{p * ic} + ({i})];")
                for j in range(t):
                    w(f"{'int32_t ' if j == 0 else ''}k = wq[{j * ic} + ({i})];")
                    for p in range(px):
                        w(f"a{p}_{j} += (uint32_t)(x{p} * k);")
            w.close()

        _knobs.unrolled(w, steps, u, "s", one)
        if dsp:
            for r in range(rest):  # the last in_c % 4 channels, one at a time (from the copy, if any)
                for p in range(px):
                    x = f"(int32_t)xb[{p * (2 * quads + rest) + 2 * quads + r}]" if expand else \
                        f"(int32_t)xr[{p * ic + 4 * quads + r}]"
                    for j in range(t):
                        w(f"a{p}_{j} += (uint32_t)({x} * wq[{j * ic + 4 * quads + r}]);")
        for p in range(px):
            for j in range(t):
                w(f"o{p}[oc0 + {j}] = {_out(shape, f'a{p}_{j}', f'oc0 + {j}')};")
        w.close()

    t = config["tile_oc"]
    if oc_n // t:
        w("MN_NO_UNROLL")
        w.open(f"for (int oc0 = 0; oc0 < {oc_n // t * t}; oc0 += {t})")
        block(t)
        w.close()
    if oc_n % t:
        w("MN_NO_UNROLL")
        w.open(f"for (int oc0 = {oc_n // t * t}; oc0 < {oc_n}; oc0++)")
        block(1)
        w.close()
    if staged:
        w(f"if (stage) memcpy(out + (size_t)pix * {oc_n}, st, sizeof(int16_t) * {px * oc_n});")
    w.close()
    w("")


def _kernel(w: _knobs.Writer, shape: Shape, config: dict[str, int], name: str) -> None:
    tag = name.rsplit("_", 1)[1]
    px = config["tile_px"]
    for dsp in (True, False):
        w("#if defined(__ARM_FEATURE_DSP)" if dsp else "#else")
        for p in sorted({px, 1}, reverse=True):
            _tile(w, shape, config, p, dsp, tag)
    w("#endif")
    a = _A
    w.open(f"void {name}(const mn_word *args)")
    w(f"mn_ctx16 c = {{(const int64_t *)args[{a['BIAS']}], (const int32_t *)args[{a['MULT']}], "
      f"(const int32_t *)args[{a['SHIFT']}], (int32_t)args[{a['ACT_MIN']}], (int32_t)args[{a['ACT_MAX']}]}};")
    w("const mn_ctx16 *cx = &c;")
    w(f"const int16_t *in = (const int16_t *)args[{a['IN']}];")
    w(f"const int8_t *filter = (const int8_t *)args[{a['FILTER']}];")
    w(f"int16_t *out = (int16_t *)args[{a['OUT']}];")
    w(f"const int stage = (int32_t)args[{a['STAGE']}];")
    w("int pix = 0;")
    if shape.pixels // px:
        w("MN_NO_UNROLL")
        w(f"for (; pix < {shape.pixels // px * px}; pix += {px}) mn_tile{px}_{tag}(in, filter, out, pix, cx, stage);")
    for _ in range(shape.pixels % px):
        w(f"mn_tile1_{tag}(in, filter, out, pix++, cx, stage);")
    w("(void)pix;")
    w.close()
    w("")


def source(shape: Shape, configs: list[dict[str, int]]) -> tuple[list[str], str]:
    """``(symbols, C source)``: one translation unit with a kernel per config."""
    return _knobs.source(sys.modules[__name__], shape, configs, _PRELUDE)


def generate(shape: Shape, config: dict[str, int]) -> tuple[str, str]:
    names, text = source(shape, [config])
    return names[0], text
