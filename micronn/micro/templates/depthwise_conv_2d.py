"""Schedule template: int8 DEPTHWISE_CONV_2D (no dilation), specialised to the layer's shape.

Output channel ``oc`` of a depthwise layer with depth multiplier ``M`` filters input channel ``oc // M`` over a
``FH x FW`` window. ``generate(shape, config)`` writes one C function in which every size, stride and padding is a
compile-time constant. The output rows and columns are split (in Python, from the shape) into runs whose windows
lose the same filter rows / columns to the padding, so interior pixels run without bounds checks and start from
``bias_full`` (the input offset folded into the bias), while border pixels add the input offset to each valid tap
and start from the plain bias, as TFLM does. Knobs, in the spirit of AutoTVM:

* ``tile_c`` (1, 2, 4): output channels accumulated at once. With the DSP extension (``__ARM_FEATURE_DSP``) four
  channels are one word load split by SXTB16 into int16 lanes and multiplied lane by lane (SMLABB / SMLATT), two
  channels a halfword load; without it, plain C over the tile's channels. A depth multiplier the tile divides
  shares one input value across the tile (the first person_detect layer: 1 channel x 8);
* ``tile_w`` (1, 2, 4): interior output pixels along a row computed together, each loaded input column feeding
  every pixel whose window holds it;
* ``unroll`` (0, 1): filter rows as a loop (columns unrolled) or every tap unrolled;
* ``border`` (0, 1): border pixels through one function with run-time tap bounds, or a specialised function per
  border class (the valid taps unrolled);
* ``expand`` (0, 1): on DSP targets, widen the filter to int16 lanes once per call into a stack buffer, grouped per
  channel tile (else the filter bytes are split by SXTB16 at every tap); no effect on the portable path;
* ``chain`` (0, 1): the schedule for cores without SIMD. 1 writes each portable multiply-add as one chained step
  (on RV32 one asm statement, a multiply and an add through a scratch register: clang's generic RV32 schedule
  otherwise hoists a tile's products ahead of their adds and spills), and takes ``conv_2d_1x1``'s ``requant`` 1
  output stage (each channel's constants copied to locals once per tile, the high half of the doubled product by
  one signed x unsigned multiply, ``mulhsu`` on RV32); on the DSP path only the output stage changes.

``chain`` is newer than the shipped Cortex-M4 log: a config without it takes 0, which writes the very code (and
symbol) the template wrote before it existed.

Requantization is fused: each channel tile is requantized as soon as its sums are done, with the branch-free
output stage of ``conv_2d_1x1`` (``mn_requant_s8`` for layers whose multipliers or shifts it does not cover). The
function takes the argument words of the ``mn_depthwise_conv_2d_s8`` task (``lower._depthwise``), ``stage``
included: when the plan places the output over the input, every tile of pixels is finished in a stack buffer and
stored only after all its taps were read, in raster order, as the generic kernel does per pixel.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass, fields
from typing import Any

from micronn.micro.templates import _knobs, conv_2d_1x1

NAME = "depthwise_conv_2d"
OP = "DEPTHWISE_CONV_2D"
VERSION = 1  # bump when the generated code changes: tuning logs key their configs by it
KNOBS: dict[str, tuple[int, ...]] = {"tile_c": (1, 2, 4), "tile_w": (1, 2, 4), "unroll": (0, 1), "border": (0, 1),
                                     "expand": (0, 1), "chain": (0, 1)}
# what a config that predates a knob gets: the code generated before the knob existed
DEFAULTS: dict[str, int] = {"chain": 0}

# The argument words of mn_depthwise_conv_2d_s8 (kernels/depthwise_conv_2d.c's enum, checked by the tests)
ARGS = ("OUT", "IN", "FILTER", "BIAS", "BIAS_FULL", "MULT", "SHIFT", "N", "IN_H", "IN_W", "IN_C", "OUT_H", "OUT_W",
        "DEPTH_MULT", "F_H", "F_W", "S_H", "S_W", "D_H", "D_W", "PAD_T", "PAD_L", "IN_OFF", "OUT_ZP", "ACT_MIN",
        "ACT_MAX", "STAGE")
GENERIC_SYMBOL = "mn_depthwise_conv_2d_s8"
_A = {name: i for i, name in enumerate(ARGS)}
_POINTERS = ("OUT", "IN", "FILTER", "BIAS", "BIAS_FULL", "MULT", "SHIFT")
MAX_TAPS = 49  # filters up to 7x7 (the generated code unrolls taps)


@dataclass(frozen=True)
class Shape:
    """What the generated code is specialised to."""

    n: int
    in_h: int
    in_w: int
    in_c: int
    out_h: int
    out_w: int
    mult: int
    f_h: int
    f_w: int
    s_h: int
    s_w: int
    pad_t: int
    pad_l: int

    @property
    def out_c(self) -> int:
        return self.in_c * self.mult

    @property
    def key(self) -> str:
        """The tuning log's layer shape key."""
        return f"{NAME}:" + ",".join(f"{f.name}={getattr(self, f.name)}" for f in fields(self))

    @property
    def macs(self) -> int:
        return self.n * self.out_h * self.out_w * self.out_c * self.f_h * self.f_w


def shape_of(symbol: str, args: list[Any]) -> Shape | None:
    """The shape of an ``mn_depthwise_conv_2d_s8`` task if the template covers it (no dilation, filters up to
    ``MAX_TAPS`` taps), else None. Reads only the integer words."""
    if symbol != GENERIC_SYMBOL or len(args) != len(ARGS):
        return None
    v = {name: args[i] for name, i in _A.items() if name not in _POINTERS}
    if not all(isinstance(x, int) for x in v.values()):
        return None
    if (v["D_H"], v["D_W"]) != (1, 1) or min(v["F_H"], v["F_W"], v["S_H"], v["S_W"], v["DEPTH_MULT"]) < 1:
        return None
    if v["F_H"] * v["F_W"] > MAX_TAPS or min(v["N"], v["IN_H"], v["IN_W"], v["IN_C"], v["OUT_H"], v["OUT_W"]) < 1:
        return None
    if v["PAD_T"] < 0 or v["PAD_L"] < 0:
        return None
    return Shape(v["N"], v["IN_H"], v["IN_W"], v["IN_C"], v["OUT_H"], v["OUT_W"], v["DEPTH_MULT"], v["F_H"], v["F_W"],
                 v["S_H"], v["S_W"], v["PAD_T"], v["PAD_L"])


def space(shape: Shape) -> list[dict[str, int]]:
    """Every config of the template (all valid for every shape), less those ``expand`` cannot change (one-channel
    tiles never read the widened filter) and, with ``chain``, those with run-time border bounds (specialised
    borders are cheaper on every target measured). The ``chain`` configs come first (grid order)."""
    out = [dict(zip(KNOBS, values)) for values in itertools.product(*KNOBS.values())]
    out = [c for c in out if not (c["tile_c"] == 1 and c["expand"]) and not (c["chain"] and not c["border"])]
    return [c for c in out if c["chain"]] + [c for c in out if not c["chain"]]  # the no-SIMD schedules first


def features(shape: Shape, config: dict[str, int]) -> list[float]:
    """The cost model's features: the knobs, the shape, and what the knobs leave over."""
    config = check_config(config)
    return [config["tile_c"], config["tile_w"], config["unroll"], config["border"], config["expand"],
            config["chain"], shape.in_c, shape.mult, shape.out_h * shape.out_w, shape.s_w, shape.f_h * shape.f_w,
            shape.out_c % config["tile_c"], shape.out_w % config["tile_w"], float(shape.mult % config["tile_c"] == 0)]


def symbol(shape: Shape, config: dict[str, int]) -> str:
    """``mn_depthwise_conv_2d_<h>x<w>x<c>_<hash>``: the hash covers the template version, shape and config (knobs
    at their ``DEFAULTS`` left out, so a config from before those knobs keeps its symbol)."""
    kept = [(k, v) for k, v in sorted(config.items()) if DEFAULTS.get(k) != v]
    blob = json.dumps([VERSION, shape.key, kept])
    return (f"mn_{NAME}_{shape.in_h}x{shape.in_w}x{shape.in_c}x{shape.mult}_"
            f"{hashlib.sha1(blob.encode()).hexdigest()[:10]}")


def check_config(config: dict[str, int]) -> dict[str, int]:
    """The config with every knob present (those of ``DEFAULTS`` may be absent) and in range (raises ValueError
    otherwise)."""
    return _knobs.check_config(NAME, KNOBS, {**DEFAULTS, **config})


# ---- code generation -----------------------------------------------------------------------------------------

_DSP = """\
#if defined(__ARM_FEATURE_DSP)
typedef uint16_t __attribute__((aligned(1), may_alias)) mn_u16_any;
#define MN_BB(a, b, acc) ((uint32_t)__builtin_arm_smlabb((int32_t)(a), (int32_t)(b), (int32_t)(acc)))
#define MN_BT(a, b, acc) ((uint32_t)__builtin_arm_smlabt((int32_t)(a), (int32_t)(b), (int32_t)(acc)))
#define MN_TT(a, b, acc) ((uint32_t)__builtin_arm_smlatt((int32_t)(a), (int32_t)(b), (int32_t)(acc)))
#define MN_ADD16(a, b) ((uint32_t)__builtin_arm_sadd16((int32_t)(a), (int32_t)(b)))
#endif
/* Pixel functions are inlined into the two bodies (saturating output stage or not) on devices; the host only
 * checks bytes, and calls them (gcc takes several times longer to compile them inlined). */
#if defined(MN_HOST)
#define MN_PIXEL static __attribute__((noinline))
#else
#define MN_PIXEL MN_INLINE
#endif
"""

_Writer = conv_2d_1x1._Writer


def _runs(out: int, stride: int, pad: int, size: int, taps: int) -> list[tuple[int, int, int, int]]:
    """(first, end, lo, hi): consecutive outputs whose windows keep the same valid taps lo..hi along one axis."""
    runs: list[tuple[int, int, int, int]] = []
    for o in range(out):
        origin = o * stride - pad
        lo = min(max(0, -origin), taps)
        hi = max(lo, min(taps, size - origin))
        if runs and runs[-1][1] == o and runs[-1][2:] == (lo, hi):
            runs[-1] = (runs[-1][0], o + 1, lo, hi)
        else:
            runs.append((o, o + 1, lo, hi))
    return runs


class _Gen:
    """The C of one config of one shape."""

    def __init__(self, w: _Writer, shape: Shape, config: dict[str, int], tag: str):
        self.w, self.s, self.c, self.tag = w, shape, config, tag

    def groups(self, dsp: bool) -> tuple[int, int]:
        """(channels per tile, number of tiles): a depth multiplier > 1 that the tile does not divide would mix
        input channels inside a tile, so such layers take one channel at a time."""
        tc = self.c["tile_c"]
        if self.s.mult > 1 and self.s.mult % tc:
            tc = 1
        return tc, self.s.out_c // tc

    def fx_words(self, tc: int) -> int:
        """Words of the widened filter per channel tile and tap."""
        return 2 if tc == 4 else 1

    # -- one tap of one tile: x loaded once, then its products for every pixel that reads it
    def load_x(self, name: str, xp: str, tc: int, dsp: bool, off: bool) -> None:
        w, bcast = self.w, self.s.mult > 1
        if not dsp or tc == 1:
            if bcast:
                w(f"const int32_t {name} = ({xp})[0]{' + off' if off else ''};")
            else:
                for j in range(tc):
                    w(f"const int32_t {name}_{j} = ({xp})[{j}]{' + off' if off else ''};")
        elif bcast:
            w(f"const uint32_t {name} = (uint32_t)((int32_t)({xp})[0]{' + off' if off else ''});")
        elif tc == 4:
            w(f"const uint32_t {name}_v = mn_word4({xp});")
            e, o = f"MN_EVEN({name}_v)", f"MN_ODD({name}_v)"
            if off:
                e, o = f"MN_ADD16({e}, off2)", f"MN_ADD16({o}, off2)"
            w(f"const uint32_t {name}_e = {e}, {name}_o = {o};")
        else:
            w(f"const uint32_t {name}_v = *(const mn_u16_any *)({xp});")
            a = " + (uint32_t)off" if off else ""  # only the bottom lanes are read: a carry upwards is harmless
            w(f"const uint32_t {name}_e = MN_EVEN({name}_v){a}, {name}_o = MN_ODD({name}_v){a};")

    def load_f(self, name: str, t: str, tc: int, dsp: bool) -> None:
        w = self.w
        if not dsp or tc == 1:
            for j in range(tc):
                w(f"const int32_t {name}_{j} = wq[({t}) * OC + {j}];")
        elif self.c["expand"]:
            if tc == 4:
                w(f"const uint32_t {name}_e = fq[2 * ({t})], {name}_o = fq[2 * ({t}) + 1];")
            else:
                w(f"const uint32_t {name}_p = fq[{t}];")
        else:
            load = "mn_word4(wq + ({t}) * OC)" if tc == 4 else "*(const mn_u16_any *)(wq + ({t}) * OC)"
            w(f"const uint32_t {name}_v = {load.format(t=t)}, {name}_e = MN_EVEN({name}_v), "
              f"{name}_o = MN_ODD({name}_v);")

    def mac(self, x: str, f: str, p: int, tc: int, dsp: bool) -> None:
        w, bcast = self.w, self.s.mult > 1
        if not dsp or tc == 1:
            for j in range(tc):
                xj = x if bcast else f"{x}_{j}"
                w(f"MN_MAC(a{p}_{j}, {xj}, {f}_{j});" if self.c["chain"] else
                  f"a{p}_{j} += (uint32_t)({xj} * {f}_{j});")
            return
        if tc == 4:
            xe, xo = (x, x) if bcast else (f"{x}_e", f"{x}_o")
            top = "MN_BT" if bcast else "MN_TT"
            w(f"a{p}_0 = MN_BB({xe}, {f}_e, a{p}_0), a{p}_1 = MN_BB({xo}, {f}_o, a{p}_1);")
            w(f"a{p}_2 = {top}({xe}, {f}_e, a{p}_2), a{p}_3 = {top}({xo}, {f}_o, a{p}_3);")
        else:
            xe, xo = (x, x) if bcast else (f"{x}_e", f"{x}_o")
            if self.c["expand"]:
                w(f"a{p}_0 = MN_BB({xe}, {f}_p, a{p}_0), a{p}_1 = MN_BT({xo}, {f}_p, a{p}_1);")
            else:
                w(f"a{p}_0 = MN_BB({xe}, {f}_e, a{p}_0), a{p}_1 = MN_BB({xo}, {f}_o, a{p}_1);")

    def row(self, ky: str, dy: str, cols: tuple[int, int] | None, px: int, tc: int, dsp: bool, off: bool) -> None:
        """The taps of filter row ``ky`` (input row ``dy`` rows below ``xc``) for ``px`` pixels: constant columns
        ``cols`` (each input column loaded once for all pixels), or None for the run-time bounds fx0 .. fx1."""
        w, s = self.w, self.s
        if cols is None:
            w("MN_NO_UNROLL")
            w.open("for (int kx = fx0; kx < fx1; kx++)")
            self.load_x("xv", f"xc + (({dy}) * IW + kx - fx0) * IC", tc, dsp, off)
            self.load_f("f", f"({ky}) * FW + kx", tc, dsp)
            self.mac("xv", "f", 0, tc, dsp)
            w.close()
            return
        lo, hi = cols
        w.open("")
        for kx in range(lo, hi):
            self.load_f(f"f{kx}", f"({ky}) * FW + {kx}", tc, dsp)
        uses: dict[int, list[tuple[int, int]]] = {}
        for p in range(px):
            for kx in range(lo, hi):
                uses.setdefault(p * s.s_w + kx - lo, []).append((p, kx))
        for col in sorted(uses):
            w.open("")
            self.load_x("xv", f"xc + ({dy}) * (IW * IC) + {col * s.in_c}", tc, dsp, off)
            for p, kx in uses[col]:
                self.mac("xv", f"f{kx}", p, tc, dsp)
            w.close()
        w.close()

    def tile(self, px: int, tc: int, dsp: bool, rows: tuple[int, int] | None, cols: tuple[int, int] | None,
             off: bool, loop_rows: bool) -> None:
        """Sums of channels oc0 .. oc0 + tc of ``px`` pixels (x: the first pixel's first valid tap, channel 0),
        then their outputs at o."""
        w, s = self.w, self.s
        w("const int8_t *xc = x + oc0 / M;")
        w("const int8_t *wq = filter + oc0;")
        if dsp and tc > 1 and self.c["expand"]:
            w(f"const uint32_t *fq = fx + (size_t)(oc0 / {tc}) * {self.fx_words(tc) * s.f_h * s.f_w};")
        w("(void)xc, (void)wq;")
        for p in range(px):
            for j in range(tc):
                src = f"(uint32_t)bias[oc0 + {j}]" if off else f"(uint32_t)cx->ch[oc0 + {j}].bias"
                w(f"uint32_t a{p}_{j} = {src};")
        if rows is None:
            w("MN_NO_UNROLL")
            w.open("for (int ky = fy0; ky < fy1; ky++)")
            self.row("ky", "ky - fy0", cols, px, tc, dsp, off)
            w.close()
        elif loop_rows and rows[1] - rows[0] > 1:
            w("MN_NO_UNROLL")
            w.open(f"for (int ky = {rows[0]}; ky < {rows[1]}; ky++)")
            self.row("ky", f"ky - {rows[0]}", cols, px, tc, dsp, off)
            w.close()
        else:
            for ky in range(*rows):
                self.row(str(ky), str(ky - rows[0]), cols, px, tc, dsp, off)
        if self.c["chain"]:  # channel by channel: one channel's constants live at a time
            for j in range(tc):
                w.open("")
                w(f"const mn_ch q = cx->ch[oc0 + {j}];")
                for p in range(px):
                    w(f"o[{p} * OC + oc0 + {j}] = mn_out_q(a{p}_{j}, &q, cx, oc0 + {j}, zp, sat);")
                w.close()
            return
        for p in range(px):
            for j in range(tc):
                w(f"o[{p} * OC + oc0 + {j}] = mn_out(a{p}_{j}, cx, oc0 + {j}, sat);")

    def function(self, fname: str, px: int, dsp: bool, rows: tuple[int, int] | None,
                 cols: tuple[int, int] | None, off: bool, inline: bool = True) -> None:
        """A function computing every channel of ``px`` pixels: the channel tiles, then the remainder."""
        w = self.w
        bounds = ", int fy0, int fy1, int fx0, int fx1" if rows is None else ""
        w.open(f"{'MN_PIXEL' if inline else 'static __attribute__((noinline))'} void {fname}(const int8_t *x, "
               f"const int8_t *filter, const uint32_t *fx, int8_t *o, const mn_ctx *cx, const int32_t *bias, "
               f"uint32_t off2, int32_t off, const int sat{bounds})")
        w("(void)fx, (void)bias, (void)off2, (void)off;")
        if self.c["chain"]:
            w("const int32_t zp = cx->zp;")
        tc, groups = self.groups(dsp)
        loop_rows = not self.c["unroll"]
        if groups:
            w("MN_NO_UNROLL")
            w.open(f"for (int oc0 = 0; oc0 < {groups * tc}; oc0 += {tc})")
            self.tile(px, tc, dsp, rows, cols, off, loop_rows)
            w.close()
        if self.s.out_c % tc:
            w("MN_NO_UNROLL")
            w.open(f"for (int oc0 = {groups * tc}; oc0 < OC; oc0++)")
            self.tile(px, 1, dsp, rows, cols, off, loop_rows)
            w.close()
        w.close()
        w("")

    def functions(self, dsp: bool) -> list[str]:
        """The pixel functions of one path (DSP or portable); returns the body's lines (calls per run)."""
        s, c, tag = self.s, self.c, self.tag
        rows_runs = _runs(s.out_h, s.s_h, s.pad_t, s.in_h, s.f_h)
        col_runs = _runs(s.out_w, s.s_w, s.pad_l, s.in_w, s.f_w)
        made: set[str] = set()
        body: list[str] = []

        def need(fname: str, px: int, rows: Any, cols: Any, off: bool, inline: bool = True) -> str:
            if fname not in made:
                made.add(fname)
                self.function(fname, px, dsp, rows, cols, off, inline)
            return fname

        full_r, full_c = (0, s.f_h), (0, s.f_w)
        for y0, y1, fy0, fy1 in rows_runs:
            body.append(f"for (int oy = {y0}; oy < {y1}; oy++) {{")
            body.append(f"    const int8_t *xr = img + (size_t)(oy * SH - PT + {fy0}) * IW * IC;")
            body.append("    int8_t *orow = ob + (size_t)oy * OW * OC;")
            for x0, x1, fx0, fx1 in col_runs:
                xbase = f"(ox * SW - PL + {fx0}) * IC"
                interior = (fy0, fy1) == full_r and (fx0, fx1) == full_c
                if interior:
                    steps = [(c["tile_w"], (x1 - x0) // c["tile_w"] * c["tile_w"])]
                    if (x1 - x0) % c["tile_w"]:
                        steps.append((1, (x1 - x0) % c["tile_w"]))
                    at = x0
                    for px, count in steps:
                        if not count:
                            continue
                        f = need(f"mn_in{px}_{tag}", px, full_r, full_c, False)
                        body.append("    MN_NO_UNROLL")
                        body.append(f"    for (int ox = {at}; ox < {at + count}; ox += {px}) {{")
                        body.append("        int8_t *dst = stage ? staged : orow + (size_t)ox * OC;")
                        body.append(f"        {f}(xr + {xbase}, filter, fx, dst, cx, bias, off2, off, sat);")
                        body.append(f"        if (stage) memcpy(orow + (size_t)ox * OC, staged, {px} * OC);")
                        body.append("    }")
                        at += count
                    continue
                if c["border"]:
                    f = need(f"mn_b{fy0}{fy1}_{fx0}{fx1}_{tag}", 1, (fy0, fy1), (fx0, fx1), True)
                    call = f"{f}(xr + {xbase}, filter, fx, dst, cx, bias, off2, off, sat);"
                else:
                    f = need(f"mn_edge_{tag}", 1, None, None, True, inline=False)
                    call = f"{f}(xr + {xbase}, filter, fx, dst, cx, bias, off2, off, sat, {fy0}, {fy1}, {fx0}, {fx1});"
                body.append("    MN_NO_UNROLL")
                body.append(f"    for (int ox = {x0}; ox < {x1}; ox++) {{")
                body.append("        int8_t *dst = stage ? staged : orow + (size_t)ox * OC;")
                body.append(f"        {call}")
                body.append("        if (stage) memcpy(orow + (size_t)ox * OC, staged, OC);")
                body.append("    }")
            body.append("}")
        return body

    def kernel(self, name: str) -> None:
        w, s, c, tag = self.w, self.s, self.c, self.tag
        paths = []
        w("#if defined(__ARM_FEATURE_DSP)")
        paths.append(self.functions(True))
        w("#else")
        paths.append(self.functions(False))
        w("#endif")
        w.open(f"MN_INLINE void mn_body_{tag}(const int8_t *in, const int8_t *filter, const uint32_t *fx, "
               "int8_t *out, const mn_ctx *cx, const int32_t *bias, int32_t off, const int stage, const int sat)")
        w(f"int8_t staged[{c['tile_w']} * OC];")
        w("const uint32_t off2 = ((uint32_t)off & 0xFFFFu) * 0x10001u;")
        w("(void)off2;")
        w("MN_NO_UNROLL")
        w.open("for (int b = 0; b < NB; b++)")
        w("const int8_t *img = in + (size_t)b * IH * IW * IC;")
        w("int8_t *ob = out + (size_t)b * OH * OW * OC;")
        for i, body in enumerate(paths):
            w("#if defined(__ARM_FEATURE_DSP)" if i == 0 else "#else")
            for line in body:
                w(line)
        w("#endif")
        w.close()
        w.close()
        w("")
        a = _A
        w.open(f"void {name}(const mn_word *args)")
        w(f"int8_t *out = (int8_t *)args[{a['OUT']}];")
        w(f"const int8_t *in = (const int8_t *)args[{a['IN']}], *filter = (const int8_t *)args[{a['FILTER']}];")
        w(f"const int32_t *bias = (const int32_t *)args[{a['BIAS']}];")
        w(f"const int32_t *bias_full = (const int32_t *)args[{a['BIAS_FULL']}];")
        w(f"const int32_t *mult = (const int32_t *)args[{a['MULT']}];")
        w(f"const int8_t *shift = (const int8_t *)args[{a['SHIFT']}];")
        w(f"const int stage = (int32_t)args[{a['STAGE']}];")
        w(f"const int32_t off = (int32_t)args[{a['IN_OFF']}];")
        w("mn_ch ch[OC];")
        w(f"mn_ctx cx = {{ch, mult, shift, (int32_t)args[{a['OUT_ZP']}], (int32_t)args[{a['ACT_MIN']}], "
          f"(int32_t)args[{a['ACT_MAX']}], 0}};")
        w("MN_NO_UNROLL")
        w.open("for (int c = 0; c < OC; c++)")
        w("const int32_t s = shift[c], right = s < 0 ? -s : 0;")
        w("cx.generic |= mult[c] < 0 || s < -31 || s > 31;")
        w("ch[c].bias = bias_full[c], ch[c].mult = mult[c], ch[c].left = s > 0 ? s : 0, ch[c].right = right & 31;")
        w("ch[c].mask = (int32_t)((1u << (right & 31)) - 1u), ch[c].half = ch[c].mask >> 1;")
        w.close()
        tc, groups = self.groups(True)
        words = self.fx_words(tc) * groups * s.f_h * s.f_w
        if c["expand"] and tc > 1 and groups:
            w("#if defined(__ARM_FEATURE_DSP)")
            w(f"uint32_t fx[{words}];")
            w("MN_NO_UNROLL")
            w.open(f"for (int g = 0; g < {groups}; g++)")
            w("MN_NO_UNROLL")
            w.open(f"for (int t = 0; t < {s.f_h * s.f_w}; t++)")
            if tc == 4:
                w("const uint32_t v = mn_word4(filter + t * OC + g * 4);")
                w(f"fx[(g * {s.f_h * s.f_w} + t) * 2] = MN_EVEN(v), fx[(g * {s.f_h * s.f_w} + t) * 2 + 1] = MN_ODD(v);")
            else:
                w("const uint32_t v = *(const mn_u16_any *)(filter + t * OC + g * 2);")
                w(f"fx[g * {s.f_h * s.f_w} + t] = (MN_EVEN(v) & 0xFFFFu) | (MN_ODD(v) << 16);")
            w.close()
            w.close()
            w("#else")
            w("const uint32_t *fx = 0;")
            w("#endif")
        else:
            w("const uint32_t *fx = 0;")
        w(f"if (!cx.generic && cx.lo == -128 && cx.hi == 127) "
          f"mn_body_{tag}(in, filter, fx, out, &cx, bias, off, stage, 1);")
        w(f"else mn_body_{tag}(in, filter, fx, out, &cx, bias, off, stage, 0);")
        w.close()
        w("")


def _shown(config: dict[str, int]) -> dict[str, int]:
    """The config as the source's comment shows it: knobs at their ``DEFAULTS`` left out (as in ``symbol``)."""
    return {k: v for k, v in config.items() if DEFAULTS.get(k) != v}


def source(shape: Shape, configs: list[dict[str, int]]) -> tuple[list[str], str]:
    """``(symbols, C source)``: one translation unit with a kernel per config (a batch compiles once)."""
    configs = [check_config(c) for c in configs]
    names = [symbol(shape, c) for c in configs]
    w = _Writer()
    w(f"/* Generated by micronn.micro.templates.{NAME} (version {VERSION}) for {shape.key}: "
      f"{len(configs)} config(s). */")
    w(conv_2d_1x1._PRELUDE)
    if any(c["chain"] for c in configs):
        w(conv_2d_1x1._OUT_Q)
        w(conv_2d_1x1._MAC)
    w(_DSP)
    s = shape
    w(f"enum {{ NB = {s.n}, IH = {s.in_h}, IW = {s.in_w}, IC = {s.in_c}, OH = {s.out_h}, OW = {s.out_w}, "
      f"M = {s.mult}, OC = {s.out_c}, FH = {s.f_h}, FW = {s.f_w}, SH = {s.s_h}, SW = {s.s_w}, PT = {s.pad_t}, "
      f"PL = {s.pad_l} }};")
    w("")
    done = set()
    for c, name in zip(configs, names):
        if name not in done:
            done.add(name)
            w(f"/* {name}: {json.dumps(_shown(c), sort_keys=True)} */")
            _Gen(w, shape, c, name.rsplit("_", 1)[1]).kernel(name)
    return names, "\n".join(w.lines) + "\n"


def generate(shape: Shape, config: dict[str, int]) -> tuple[str, str]:
    """``(symbol, C source)`` of the kernel for ``shape`` under ``config``."""
    names, text = source(shape, [config])
    return names[0], text
