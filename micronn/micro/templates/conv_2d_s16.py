"""Schedule template: int16x8 CONV_2D of any window (int16 activations, int8 weights), im2col per output pixel.

Each output pixel's window (``f_h x f_w x in_c`` values, taps outside the image 0: TFLM's 16x8 convolution ignores
the zero points) is gathered into a stack buffer in SXTB16's lane order, so that with the DSP extension one filter
word (four int8 weights, two SXTB16 words) meets two input words in two SMLADs. The generated function fixes the
layer's geometry at compile time (window, strides, dilation, padding: the gather's loops and bounds are constants).
Knobs:

* ``tile_oc`` (1, 2, 4): output channels accumulated at once, each gathered word feeding that many filters;
* ``tile_px`` (1, 2): output pixels gathered and accumulated at once, each filter word feeding both;
* ``unroll`` (1, 2): steps of four window values per trip of the inner loop.

Covered: one group (``F_C == IN_C``), sums that provably fit int32 (``wide`` 0), windows of at most 512 values (the
stack buffer holds ``tile_px`` of them). The output stages are ``kernels/conv_2d_s16.c``'s (64-bit Q15 or 32-bit).
Every pixel's window is gathered before its outputs are stored, so outputs the plan streams over the input stay
exact. Cores without the DSP extension run the same gather and tiles in plain C.
"""

from __future__ import annotations

import itertools
import sys
from dataclasses import dataclass, fields
from typing import Any

from micronn.micro.templates import _knobs
from micronn.micro.templates.conv_2d_1x1_s16 import _PRELUDE, ARGS, GENERIC_SYMBOL, _out

NAME = "conv_2d_s16"
OP = "CONV_2D"
VERSION = 1
KNOBS: dict[str, tuple[int, ...]] = {"tile_oc": (4, 2, 1), "tile_px": (2, 1), "unroll": (1, 2)}
DEFAULTS: dict[str, int] = {}
_A = {name: i for i, name in enumerate(ARGS)}
MAX_WINDOW = 512


@dataclass(frozen=True)
class Shape:
    n: int
    in_h: int
    in_w: int
    in_c: int
    out_h: int
    out_w: int
    out_c: int
    f_h: int
    f_w: int
    s_h: int
    s_w: int
    d_h: int
    d_w: int
    pad_t: int
    pad_l: int
    requant32: int

    @property
    def key(self) -> str:
        return f"{NAME}:" + ",".join(f"{f.name}={getattr(self, f.name)}" for f in fields(self))

    @property
    def window(self) -> int:
        return self.f_h * self.f_w * self.in_c

    @property
    def macs(self) -> int:
        return self.n * self.out_h * self.out_w * self.out_c * self.window


def shape_of(symbol: str, args: list[Any]) -> Shape | None:
    """The shape of an ``mn_conv_2d_s16`` task the template covers (see the module docstring), else None."""
    if symbol != GENERIC_SYMBOL or len(args) != len(ARGS):
        return None
    v = {n: args[_A[n]] for n in ARGS[6:]}
    if not all(isinstance(x, int) for x in v.values()):
        return None
    if v["WIDE"] or v["F_C"] != v["IN_C"] or min(v["N"], v["IN_C"], v["OUT_C"], v["OUT_H"], v["OUT_W"]) < 1:
        return None
    if v["F_H"] * v["F_W"] * v["IN_C"] > MAX_WINDOW or min(v["S_H"], v["S_W"], v["D_H"], v["D_W"], v["F_H"],
                                                            v["F_W"]) < 1:
        return None
    return Shape(v["N"], v["IN_H"], v["IN_W"], v["IN_C"], v["OUT_H"], v["OUT_W"], v["OUT_C"], v["F_H"], v["F_W"],
                 v["S_H"], v["S_W"], v["D_H"], v["D_W"], v["PAD_T"], v["PAD_L"], int(bool(v["REQUANT32"])))


def space(shape: Shape) -> list[dict[str, int]]:
    """Every config (12), in KNOBS order."""
    return [dict(zip(KNOBS, values)) for values in itertools.product(*KNOBS.values())]


def features(shape: Shape, config: dict[str, int]) -> list[float]:
    config = check_config(config)
    return [config["tile_oc"], config["tile_px"], config["unroll"], shape.window, shape.out_c,
            shape.out_h * shape.out_w, shape.window % 4, shape.out_c % config["tile_oc"]]


def symbol(shape: Shape, config: dict[str, int]) -> str:
    return _knobs.symbol(sys.modules[__name__], shape, config, f"{shape.f_h}x{shape.f_w}x{shape.in_c}x{shape.out_c}")


def check_config(config: dict[str, int]) -> dict[str, int]:
    return _knobs.check_config(NAME, KNOBS, {**DEFAULTS, **config})


def _gather(w: _knobs.Writer, shape: Shape, dst: str, dsp: bool) -> None:
    """The window of output pixel (oy, ox) of image ``image`` into ``dst``: value k of the window (row-major over
    f_h, f_w, in_c) at halfword k - k % 4 + [0, 2, 1, 3][k % 4] with the DSP extension (words (x0, x2), (x1, x3)),
    at k otherwise; 0 outside the image."""
    s = shape
    w.open("")
    w(f"const int iy0 = oy * {s.s_h} - {s.pad_t}, ix0 = ox * {s.s_w} - {s.pad_l};")
    w("int k = 0;")
    w("MN_NO_UNROLL")
    w.open(f"for (int fy = 0; fy < {s.f_h}; fy++)")
    w(f"const int iy = iy0 + fy * {s.d_h};")
    w("MN_NO_UNROLL")
    w.open(f"for (int fx = 0; fx < {s.f_w}; fx++)")
    w(f"const int ix = ix0 + fx * {s.d_w};")
    w(f"const int inside = iy >= 0 && iy < {s.in_h} && ix >= 0 && ix < {s.in_w};")
    w(f"const int16_t *src = image + ((size_t)(inside ? iy : 0) * {s.in_w} + (inside ? ix : 0)) * {s.in_c};")
    w("MN_NO_UNROLL")
    w.open(f"for (int c = 0; c < {s.in_c}; c++, k++)")
    at = "(k & ~3) + ((k & 1) << 1) + ((k >> 1) & 1)" if dsp else "k"
    w(f"{dst}[{at}] = inside ? src[c] : 0;")
    w.close()
    w.close()
    w.close()
    w.close()


def _kernel(w: _knobs.Writer, shape: Shape, config: dict[str, int], name: str) -> None:
    s, a = shape, _A
    win, px, t, u = shape.window, config["tile_px"], config["tile_oc"], config["unroll"]
    quads, rest = win // 4, win % 4
    w.open(f"void {name}(const mn_word *args)")
    w(f"mn_ctx16 c = {{(const int64_t *)args[{a['BIAS']}], (const int32_t *)args[{a['MULT']}], "
      f"(const int32_t *)args[{a['SHIFT']}], (int32_t)args[{a['ACT_MIN']}], (int32_t)args[{a['ACT_MAX']}]}};")
    w("const mn_ctx16 *cx = &c;")
    w(f"const int8_t *filter = (const int8_t *)args[{a['FILTER']}];")
    w(f"int16_t *out = (int16_t *)args[{a['OUT']}];")
    w(f"int16_t xb[{px} * {-(-win // 4) * 4}] __attribute__((aligned(4)));")
    total = s.out_h * s.out_w
    w("MN_NO_UNROLL")
    w.open(f"for (int b = 0; b < {s.n}; b++)")
    w(f"const int16_t *image = (const int16_t *)args[{a['IN']}] + (size_t)b * {s.in_h * s.in_w * s.in_c};")
    w(f"int16_t *ob = out + (size_t)b * {total * s.out_c};")

    def pixels(p_n: int) -> None:
        """``p_n`` pixels from ``pix``: gather every window first, then all output channels."""
        for p in range(p_n):
            w.open("")
            w(f"const int oy = (pix + {p}) / {s.out_w}, ox = (pix + {p}) % {s.out_w};")
            for dsp in (True, False):
                w("#if defined(__ARM_FEATURE_DSP)" if dsp else "#else")
                _gather(w, shape, f"(xb + {p * -(-win // 4) * 4})", dsp)
            w("#endif")
            w.close()

        def block(tn: int) -> None:
            w.open("")
            w(f"const int8_t *wq = filter + (size_t)oc0 * {win};")
            for j in range(tn):
                for p in range(p_n):
                    w(f"uint32_t a{p}_{j} = 0;")
            w("#if defined(__ARM_FEATURE_DSP)")
            w("const mn_alias_word *xw = (const mn_alias_word *)xb; /* the gather stored int16 values there */")

            def step(i: str) -> None:
                w.open("")
                for p in range(p_n):
                    base = p * -(-win // 4) * 2
                    w(f"const uint32_t xe{p} = xw[{base} + 2 * ({i})], xo{p} = xw[{base} + 2 * ({i}) + 1];")
                for j in range(tn):
                    w(f"{'uint32_t ' if j == 0 else ''}k = mn_word4(wq + {j * win} + 4 * ({i}));")
                    w(f"{'uint32_t ' if j == 0 else ''}ke = MN_EVEN(k), ko = MN_ODD(k);")
                    for p in range(p_n):
                        w(f"a{p}_{j} = MN_SMLAD(xo{p}, ko, MN_SMLAD(xe{p}, ke, a{p}_{j}));")
                w.close()

            _knobs.unrolled(w, quads, u, "q", step)
            for r in range(rest):  # the last window % 4 values, in order after the whole quads
                for p in range(p_n):
                    x = f"(int32_t)xb[{p * -(-win // 4) * 4 + 4 * quads + ((r & 1) << 1) + ((r >> 1) & 1)}]"
                    for j in range(tn):
                        w(f"a{p}_{j} += (uint32_t)({x} * wq[{j * win + 4 * quads + r}]);")
            w("#else")
            w("MN_NO_UNROLL")
            w.open(f"for (int k = 0; k < {win}; k++)")
            for p in range(p_n):
                w(f"const int32_t x{p} = xb[{p * -(-win // 4) * 4} + k];")
            for j in range(tn):
                w(f"{'int32_t ' if j == 0 else ''}wk = wq[{j * win} + k];")
                for p in range(p_n):
                    w(f"a{p}_{j} += (uint32_t)(x{p} * wk);")
            w.close()
            w("#endif")
            for p in range(p_n):
                for j in range(tn):
                    w(f"ob[(size_t)(pix + {p}) * {s.out_c} + oc0 + {j}] = {_out(shape, f'a{p}_{j}', f'oc0 + {j}')};")
            w.close()

        if s.out_c // t:
            w("MN_NO_UNROLL")
            w.open(f"for (int oc0 = 0; oc0 < {s.out_c // t * t}; oc0 += {t})")
            block(t)
            w.close()
        if s.out_c % t:
            w("MN_NO_UNROLL")
            w.open(f"for (int oc0 = {s.out_c // t * t}; oc0 < {s.out_c}; oc0++)")
            block(1)
            w.close()

    w("int pix = 0;")
    if total // px:
        w("MN_NO_UNROLL")
        w.open(f"for (; pix < {total // px * px}; pix += {px})")
        pixels(px)
        w.close()
    if total % px:
        w.open("")
        pixels(1)
        w("pix++;")
        w.close()
    w("(void)pix;")
    w.close()
    w.close()
    w("")


def source(shape: Shape, configs: list[dict[str, int]]) -> tuple[list[str], str]:
    """``(symbols, C source)``: one translation unit with a kernel per config."""
    return _knobs.source(sys.modules[__name__], shape, configs,
                         _PRELUDE + "typedef uint32_t __attribute__((may_alias)) mn_alias_word;")


def generate(shape: Shape, config: dict[str, int]) -> tuple[str, str]:
    names, text = source(shape, [config])
    return names[0], text
