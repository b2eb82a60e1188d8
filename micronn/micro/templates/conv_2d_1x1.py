"""Schedule template: int8 CONV_2D with a 1x1 filter, stride 1 and no padding, as a matrix product.

The layer is ``pixels x in_c`` (the input rows) times ``in_c x out_c`` (the filter, stored ``out_c`` rows of
``in_c``), requantized per output channel. ``generate(shape, config)`` writes one C function specialised to the
shape (all loop bounds compile-time constants) and shaped by the config's knobs, in the spirit of AutoTVM:

* ``tile_oc`` (1, 2, 4): output channels accumulated at once, each input word feeding that many filters;
* ``tile_px`` (1, 2, 4): pixels accumulated at once, each filter word feeding that many pixels;
* ``expand`` (0, 1): first widen the tile's input pixels to int16 in a stack buffer (with the DSP extension in
  SXTB16's lane order, so the inner loop loads two ready lanes per word and only the filter is extended), else
  extend the input in the inner loop;
* ``unroll`` (1, 2, 4): copies of the four-channel step per trip of the inner loop;
* ``fused`` (1, 0): requantize each output block as soon as its sums are done, else keep the tile's sums in an
  int32 buffer and requantize them in a second loop;
* ``step`` (4, 1), portable path only: input channels per step of the inner loop. 4 writes the four channels'
  products as one block, which clang reassociates into trees whose temporaries spill on cores without SIMD once the
  tile passes 2x2; 1 keeps one chain of multiply-adds per accumulator, so a 4x4 or 8x2 tile stays in RV32's 31
  registers (one multiply and one add per MAC, ``tile_oc + tile_px`` loads per channel);
* ``requant`` (0, 1): the output stage. 1 copies each channel's constants into locals before the tile's stores
  (an ``int8_t`` store may alias them, so they were reloaded per output) and takes the high half of the doubled
  product with one signed x unsigned multiply (``mulhsu`` on RV32) instead of a 64-bit add with carry.

``step`` and ``requant`` are newer than the shipped Cortex-M4 log: a config without them takes the defaults (4, 0),
which write the very code (and symbol) the template wrote before they existed.

The function takes the argument words of the ``mn_conv_2d_s8`` task of the layer (``lower._conv``), so a tuned
kernel replaces the generic one without new arguments: it reads the output, input, filter, ``bias_full`` (bias
with the input zero point folded in), multipliers, shifts, output zero point, activation range and ``stage``.
The arithmetic is ``mn_requant_s8``'s (TFLM's double rounding) rewritten branch-free from per-channel constants
computed once per call; layers whose multipliers are negative or shifts out of [-31, 31] take
``mn_requant_s8`` itself. With the DSP extension (``__ARM_FEATURE_DSP``) the products are SMLADs over SXTB16
lanes; elsewhere plain C.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass
from typing import Any

from micronn.micro.templates import _knobs

NAME = "conv_2d_1x1"
OP = "CONV_2D"
VERSION = 1  # bump when the generated code changes: tuning logs key their configs by it
KNOBS: dict[str, tuple[int, ...]] = {"tile_oc": (1, 2, 4, 8), "tile_px": (1, 2, 4), "expand": (0, 1),
                                     "unroll": (1, 2, 4), "fused": (1, 0), "step": (4, 1), "requant": (0, 1)}
# what a config that predates a knob gets: the code generated before the knob existed
DEFAULTS: dict[str, int] = {"step": 4, "requant": 0}

# The argument words of mn_conv_2d_s8 (kernels/conv_2d.c's enum, checked by tests/micro/test_tune.py)
ARGS = ("OUT", "IN", "FILTER", "BIAS", "BIAS_FULL", "MULT", "SHIFT", "N", "IN_H", "IN_W", "IN_C", "OUT_H", "OUT_W",
        "OUT_C", "F_H", "F_W", "F_C", "S_H", "S_W", "D_H", "D_W", "PAD_T", "PAD_L", "IN_OFF", "OUT_ZP", "ACT_MIN",
        "ACT_MAX", "STAGE")
GENERIC_SYMBOL = "mn_conv_2d_s8"
_A = {name: i for i, name in enumerate(ARGS)}


@dataclass(frozen=True)
class Shape:
    """What the generated code is specialised to: input channels, output channels, pixels (batch x rows x cols)."""

    in_c: int
    out_c: int
    pixels: int

    @property
    def key(self) -> str:
        """The tuning log's layer shape key."""
        return f"{NAME}:in_c={self.in_c},out_c={self.out_c},pixels={self.pixels}"

    @property
    def macs(self) -> int:
        return self.in_c * self.out_c * self.pixels


def shape_of(symbol: str, args: list[Any]) -> Shape | None:
    """The shape of an ``mn_conv_2d_s8`` task if the template covers it (1x1 filter, stride 1, no padding, one
    group, output as large as the input), else None. Reads only the integer words, so it works on any task list."""
    if symbol != GENERIC_SYMBOL or len(args) != len(ARGS):
        return None
    v = {name: args[i] for name, i in _A.items() if name not in ("OUT", "IN", "FILTER", "BIAS", "BIAS_FULL", "MULT",
                                                                   "SHIFT")}
    if not all(isinstance(x, int) for x in v.values()):
        return None
    if (v["F_H"], v["F_W"], v["S_H"], v["S_W"], v["PAD_T"], v["PAD_L"]) != (1, 1, 1, 1, 0, 0):
        return None
    if v["F_C"] != v["IN_C"] or v["OUT_H"] != v["IN_H"] or v["OUT_W"] != v["IN_W"]:
        return None
    pixels = v["N"] * v["IN_H"] * v["IN_W"]
    if min(v["IN_C"], v["OUT_C"], pixels) < 1:
        return None
    return Shape(v["IN_C"], v["OUT_C"], pixels)


def space(shape: Shape) -> list[dict[str, int]]:
    """The configs the tuner searches (all valid for every shape: remainders get their own code). First the
    no-SIMD schedules, largest register tiles first (single-channel steps with the cheaper output stage, tiles up
    to 16 accumulators; then four-channel steps with it, tiles up to 4 accumulators, beyond which they spill),
    then the original space (four-channel steps, the first output stage, tiles up to 4x4). The int16 copy of the
    input and the unfused output loop only add work to the first group, so it leaves them out."""
    new = [{"tile_oc": oc, "tile_px": px, "expand": 0, "unroll": u, "fused": 1, "step": st, "requant": 1}
           for st in (1, 4) for oc in KNOBS["tile_oc"] for px in KNOBS["tile_px"] for u in KNOBS["unroll"]
           if oc * px <= 16 and not (st == 4 and oc * px > 4)]
    new.sort(key=lambda c: (c["step"] != 1, -c["tile_oc"] * c["tile_px"], -c["unroll"]))
    old = [dict(zip(KNOBS, values), **DEFAULTS) for values in itertools.product(
        (1, 2, 4), KNOBS["tile_px"], KNOBS["expand"], KNOBS["unroll"], KNOBS["fused"])]
    return new + old


def features(shape: Shape, config: dict[str, int]) -> list[float]:
    """The cost model's features: the knobs, the shape, and the remainders the knobs leave."""
    config = check_config(config)
    chunks = shape.in_c // config["step"]
    return [config["tile_oc"], config["tile_px"], config["expand"], config["unroll"], config["fused"],
            config["step"], config["requant"], shape.in_c, shape.out_c, shape.pixels, shape.in_c % 4,
            shape.out_c % config["tile_oc"], chunks % config["unroll"], shape.pixels % config["tile_px"]]


def symbol(shape: Shape, config: dict[str, int]) -> str:
    """``mn_conv_2d_1x1_<shape>_<hash>``: the hash covers the template version, shape and config (knobs at their
    ``DEFAULTS`` left out, so a config from before those knobs keeps its symbol)."""
    kept = [(k, v) for k, v in sorted(config.items()) if DEFAULTS.get(k) != v]
    blob = json.dumps([VERSION, shape.in_c, shape.out_c, shape.pixels, kept])
    return f"mn_{NAME}_{shape.in_c}x{shape.out_c}x{shape.pixels}_{hashlib.sha1(blob.encode()).hexdigest()[:10]}"


def check_config(config: dict[str, int]) -> dict[str, int]:
    """The config with every knob present (those of ``DEFAULTS`` may be absent) and in range (raises ValueError
    otherwise)."""
    return _knobs.check_config(NAME, KNOBS, {**DEFAULTS, **config})


# ---- code generation -----------------------------------------------------------------------------------------

_PRELUDE = """\
#include "mn_kernels.h"

#if defined(__clang__)
#define MN_NO_UNROLL _Pragma("clang loop unroll(disable)")
#else
#define MN_NO_UNROLL _Pragma("GCC unroll 1")
#endif
#define MN_INLINE static inline __attribute__((always_inline))

/* One output channel's output stage, precomputed once per call: mn_requant_s8 for a multiplier >= 0 and a shift
 * in [-31, 31] is h = ((acc << left) * mult + 2^30) >> 31, then RoundingDivideByPOT(h, right) written as
 * (h >> right) + ((h & mask) > half + (h < 0)), which needs no 64-bit sum. */
typedef struct { int32_t bias, mult, left, right, mask, half; } mn_ch;
typedef struct { const mn_ch *ch; const int32_t *mult; const int8_t *shift; int32_t zp, lo, hi, generic; } mn_ctx;

/* sat: the activation range is all of int8 and every channel takes the fast path (checked once per call) */
MN_INLINE int8_t mn_out(uint32_t acc, const mn_ctx *cx, int c, const int sat) {
    if (!sat && cx->generic) return mn_requant_s8((int32_t)acc, cx->mult[c], cx->shift[c], cx->zp, cx->lo, cx->hi);
    const mn_ch *q = cx->ch + c;
    const int32_t x = (int32_t)(acc << q->left);
    const int32_t h = (int32_t)(((int64_t)x * q->mult + (1 << 30)) >> 31);
    const int32_t y = (h >> q->right) + ((h & q->mask) > q->half - (h >> 31));
#if defined(__ARM_FEATURE_DSP)
    if (sat) return (int8_t)__builtin_arm_ssat(__builtin_arm_qadd(y, cx->zp), 8);
#endif
    return (int8_t)mn_add_clamp(y, cx->zp, sat ? -128 : cx->lo, sat ? 127 : cx->hi);
}
"""

# The output stage of ``requant`` 1: the channel's constants come in a local copy ``q`` (loaded once per channel
# of a tile, not once per output) and the zero point as ``zp``. For a multiplier m >= 0, with P = x * m and
# m2 = 2m < 2^32 unsigned: floor(P / 2^31) is the high word of x * m2 (signed x unsigned) and bit 30 of P, the
# rounding bit of (P + 2^30) >> 31, is bit 31 of the low word of x * m2; their sum is mn_out's h.
_OUT_Q = """\
MN_INLINE int8_t mn_out_q(uint32_t acc, const mn_ch *q, const mn_ctx *cx, int c, int32_t zp, const int sat) {
    if (!sat && cx->generic) return mn_requant_s8((int32_t)acc, cx->mult[c], cx->shift[c], zp, cx->lo, cx->hi);
    const int32_t x = (int32_t)(acc << q->left);
    const uint32_t m2 = (uint32_t)q->mult << 1;
    const int32_t h = (int32_t)(((int64_t)x * (int64_t)(uint64_t)m2) >> 32) + (int32_t)(((uint32_t)x * m2) >> 31);
    const int32_t y = (h >> q->right) + ((h & q->mask) > q->half - (h >> 31));
#if defined(__ARM_FEATURE_DSP)
    if (sat) return (int8_t)__builtin_arm_ssat(__builtin_arm_qadd(y, zp), 8);
#endif
    return (int8_t)mn_add_clamp(y, zp, sat ? -128 : cx->lo, sat ? 127 : cx->hi);
}
"""

# One multiply-add as one asm statement on RV32 (the product in its own scratch register, so the scheduler cannot
# hoist a tile's products ahead of their adds); plain C elsewhere. The depthwise template's ``chain`` knob uses it.
_MAC = """\
#if defined(__riscv) && !defined(MN_HOST)
#define MN_MAC(A_, X_, K_) do { uint32_t mn_p_; __asm__("mul %0, %2, %3\\n\\tadd %1, %1, %0" \\
    : "=&r"(mn_p_), "+r"(A_) : "r"(X_), "r"(K_)); } while (0)
#else
#define MN_MAC(A_, X_, K_) ((A_) += (uint32_t)((X_) * (K_)))
#endif
"""


def _row_fits(shape: Shape, config: dict[str, int]) -> bool:
    """Whether every filter offset a ``step`` 1 row reads fits RV32's 12-bit load offset."""
    return (config["tile_oc"] - 1) * shape.in_c + config["unroll"] < 2048


def _rows(counts: list[int]) -> str:
    """``MN_ROW<n>(w, off, acc..., x...)``: one filter value at ``w + off`` times ``n`` input values, added to ``n``
    accumulators. On RV32 one asm statement (a load, then a multiply and an add per accumulator, two scratch
    registers): clang's generic RV32 schedule hoists a tile's loads and products ahead of their adds, which needs
    more live registers than RV32 has once a tile passes 2x2. Elsewhere (and on the host) plain C. The asm reads
    the filter, which nothing writes while a kernel runs, so it declares no memory operand."""
    lines = ["#if defined(__riscv) && !defined(MN_HOST)"]
    for n in counts:
        params = ", ".join(["W_", "O_", *[f"A{i}_" for i in range(n)], *[f"X{i}_" for i in range(n)]])
        body = ["lb %0, %c[mo](%[mw])"] + [f"mul %1, %0, %[mx{i}]\\n\\tadd %{2 + i}, %{2 + i}, %1" for i in range(n)]
        text = "\\n\\t".join(body)
        outs = ", ".join(['"=&r"(mn_k_)', '"=&r"(mn_p_)', *[f'"+r"(A{i}_)' for i in range(n)]])
        ins = ", ".join(['[mw] "r"(W_)', '[mo] "i"(O_)', *[f'[mx{i}] "r"(X{i}_)' for i in range(n)]])
        lines.append(f"#define MN_ROW{n}({params}) do {{ uint32_t mn_k_, mn_p_; "
                     f"__asm__(\"{text}\" : {outs} : {ins}); }} while (0)")
    lines.append("#else")
    for n in counts:
        params = ", ".join(["W_", "O_", *[f"A{i}_" for i in range(n)], *[f"X{i}_" for i in range(n)]])
        adds = " ".join(f"(A{i}_) += (uint32_t)((X{i}_) * mn_k_);" for i in range(n))
        lines.append(f"#define MN_ROW{n}({params}) do {{ const int32_t mn_k_ = (W_)[O_]; {adds} }} while (0)")
    lines.append("#endif")
    return "\n".join(lines) + "\n"


_Writer = _knobs.Writer


def _channels(config: dict[str, int], dsp: bool) -> int:
    """Input channels per step of the inner loop (the DSP path always takes four: one word of each operand)."""
    return 4 if dsp else config["step"]


def _layout(shape: Shape, config: dict[str, int], dsp: bool) -> tuple[str, int, int]:
    """(C type the inner loop reads the input as, elements per step, elements between tile pixels)."""
    if config["expand"] and dsp:  # per four channels two words of SXTB16 lanes, then the last in_c % 4 as words
        return "uint32_t", 2, 2 * (shape.in_c // 4) + shape.in_c % 4
    return ("int16_t" if config["expand"] else "int8_t"), _channels(config, dsp), shape.in_c


def _step(w: _Writer, shape: Shape, config: dict[str, int], px: int, oc: int, u: int, dsp: bool) -> None:
    """One step (four input channels, or one) at ``xq``/``wq`` + step ``u``: every accumulator of the block gets
    its products."""
    _, per, stride = _layout(shape, config, dsp)
    w.open("")
    if dsp:
        for p in range(px):
            at = p * stride + per * u
            if config["expand"]:
                w(f"const uint32_t xe{p} = xq[{at}], xo{p} = xq[{at + 1}];")
            else:
                w(f"const uint32_t v{p} = mn_word4(xq + {at}), xe{p} = MN_EVEN(v{p}), xo{p} = MN_ODD(v{p});")
        for t in range(oc):
            w(f"{'' if t else 'uint32_t '}k = mn_word4(wq + {t * shape.in_c + 4 * u});")
            w(f"{'' if t else 'uint32_t '}ke = MN_EVEN(k);")
            w("k = MN_ODD(k);")
            for p in range(px):
                w(f"a{p}_{t} = MN_SMLAD(xo{p}, k, MN_SMLAD(xe{p}, ke, a{p}_{t}));")
    else:
        for j in range(per):
            for p in range(px):
                w(f"const int32_t x{p}_{j} = xq[{p * stride + per * u + j}];")
            for t in range(oc):
                at = t * shape.in_c + per * u + j
                if config["step"] == 1 and _row_fits(shape, config):
                    acc = ", ".join(f"a{p}_{t}" for p in range(px))
                    xs = ", ".join(f"x{p}_{j}" for p in range(px))
                    w(f"MN_ROW{px}(wq, {at}, {acc}, {xs});")
                    continue
                w(f"{'' if t or j else 'int32_t '}k = wq[{at}];")
                for p in range(px):
                    w(f"a{p}_{t} += (uint32_t)(x{p}_{j} * k);")
    w.close()


def _block(w: _Writer, shape: Shape, config: dict[str, int], px: int, oc: int, dsp: bool) -> None:
    """Output channels ``oc0 .. oc0 + oc`` of the tile's ``px`` pixels: sums over every input channel (pointers
    walking the input and the filters), then the output stage (or the sums buffer)."""
    ctype, per, stride = _layout(shape, config, dsp)
    w.open("")
    w("const int8_t *wq = filter + (size_t)oc0 * IC;")
    w(f"const {ctype} *xq = {'xb' if config['expand'] else 'xr'};")
    for t in range(oc):
        w(f"const uint32_t b{t} = (uint32_t)cx->ch[oc0 + {t}].bias;")
        for p in range(px):
            w(f"uint32_t a{p}_{t} = b{t};")
    step = _channels(config, dsp)
    chunks, u = shape.in_c // step, config["unroll"]
    if chunks // u:
        w("MN_NO_UNROLL")
        w.open(f"for (int kk = 0; kk < {chunks // u}; kk++)")
        for i in range(u):
            _step(w, shape, config, px, oc, i, dsp)
        w(f"xq += {per * u};")
        w(f"wq += {step * u};")
        w.close()
    for i in range(chunks % u):
        _step(w, shape, config, px, oc, i, dsp)
    tail = shape.in_c % step
    for j in range(tail):  # the last in_c % 4 channels, one at a time
        for t in range(oc):
            for p in range(px):
                x = f"(int32_t)xq[{p * stride + per * (chunks % u) + j}]"
                w(f"a{p}_{t} += (uint32_t)({x} * wq[{t * shape.in_c + step * (chunks % u) + j}]);")
    if not (chunks % u or tail):
        w("(void)xq, (void)wq;")
    if config["fused"] and config["requant"]:  # channel by channel: one channel's constants live at a time
        for t in range(oc):
            w.open("")
            w(f"const mn_ch q = cx->ch[oc0 + {t}];")
            for p in range(px):
                w(f"o{p}[oc0 + {t}] = mn_out_q(a{p}_{t}, &q, cx, oc0 + {t}, zp, sat);")
            w.close()
    for p in range(px if not (config["fused"] and config["requant"]) else 0):
        for t in range(oc):
            if config["fused"]:
                w(f"o{p}[oc0 + {t}] = mn_out(a{p}_{t}, cx, oc0 + {t}, sat);")
            else:
                w(f"sums[{p} * OC + oc0 + {t}] = a{p}_{t};")
    w.close()


def _tile(w: _Writer, shape: Shape, config: dict[str, int], px: int, dsp: bool, tag: str) -> None:
    """The tile function of ``px`` pixels starting at pixel ``pix``."""
    w.open(f"MN_INLINE void mn_tile{px}_{tag}(const int8_t *in, const int8_t *filter, int8_t *out, int pix, "
           "const mn_ctx *cx, const int stage, const int sat)")
    w("(void)stage;")
    if config["requant"]:
        w("const int32_t zp = cx->zp;")
    staged = not config["expand"] and config["fused"]  # outputs written while the tile's input is still read
    if staged:
        w(f"int8_t staged[{px} * OC];")
    if not config["fused"]:
        w(f"uint32_t sums[{px} * OC];")
    ctype, _, stride = _layout(shape, config, dsp)
    chunks = shape.in_c // 4
    w("const int8_t *xr = in + (size_t)pix * IC;")
    if config["expand"]:
        w(f"{ctype} xb[{px * stride}] __attribute__((aligned(8)));")
        if dsp:  # SXTB16 lanes: words (x0, x2), (x1, x3) per four channels, then the rest
            for p in range(px):
                if chunks:
                    w("MN_NO_UNROLL")
                    w.open(f"for (int c = 0; c < {chunks}; c++)")
                    w(f"const uint32_t v = mn_word4(xr + {p * shape.in_c} + 4 * c);")
                    w(f"xb[{p * stride} + 2 * c] = MN_EVEN(v), xb[{p * stride} + 2 * c + 1] = MN_ODD(v);")
                    w.close()
                for c in range(4 * chunks, shape.in_c):
                    w(f"xb[{p * stride + 2 * chunks + c - 4 * chunks}] = (uint32_t)(int32_t)xr[{p * shape.in_c + c}];")
        else:
            w("MN_NO_UNROLL")
            w(f"for (int c = 0; c < {px} * IC; c++) xb[c] = xr[c];")
    for p in range(px):
        o = f"(stage ? staged + {p} * OC : out + (size_t)(pix + {p}) * OC)" if staged else \
            f"out + (size_t)(pix + {p}) * OC"
        if config["fused"]:
            w(f"int8_t *o{p} = {o};")
    t = config["tile_oc"]
    if shape.out_c // t:
        w("int oc0 = 0;")
        w("MN_NO_UNROLL")
        w.open(f"for (; oc0 < {shape.out_c // t * t}; oc0 += {t})")
        _block(w, shape, config, px, t, dsp)
        w.close()
    if shape.out_c % t:
        w("MN_NO_UNROLL")
        w.open(f"for (int oc0 = {shape.out_c // t * t}; oc0 < OC; oc0++)")
        _block(w, shape, config, px, 1, dsp)
        w.close()
    if not config["fused"]:
        for p in range(px):
            w(f"int8_t *o{p} = out + (size_t)(pix + {p}) * OC;")
            w("MN_NO_UNROLL")
            if config["requant"]:
                w(f"for (int c = 0; c < OC; c++) {{ const mn_ch q = cx->ch[c]; "
                  f"o{p}[c] = mn_out_q(sums[{p} * OC + c], &q, cx, c, zp, sat); }}")
            else:
                w(f"for (int c = 0; c < OC; c++) o{p}[c] = mn_out(sums[{p} * OC + c], cx, c, sat);")
    if staged:
        w(f"if (stage) memcpy(out + (size_t)pix * OC, staged, {px} * OC);")
    w.close()
    w("")


def _tiles(w: _Writer, shape: Shape, config: dict[str, int], dsp: bool, tag: str) -> None:
    for px in sorted({config["tile_px"], 1}, reverse=True):
        _tile(w, shape, config, px, dsp, tag)


def _kernel(w: _Writer, shape: Shape, config: dict[str, int], name: str) -> None:
    """The tile functions, the pixel loop and the entry point ``name`` of one config."""
    tag = name.rsplit("_", 1)[1]
    w("#if defined(__ARM_FEATURE_DSP)")
    _tiles(w, shape, config, True, tag)
    w("#else")
    _tiles(w, shape, config, False, tag)
    w("#endif")
    px = config["tile_px"]
    w.open(f"MN_INLINE void mn_body_{tag}(const int8_t *in, const int8_t *filter, int8_t *out, const mn_ctx *cx, "
           "const int stage, const int sat)")
    w("int pix = 0;")
    if shape.pixels // px:
        w("MN_NO_UNROLL")
        w(f"for (; pix < {shape.pixels // px * px}; pix += {px}) mn_tile{px}_{tag}(in, filter, out, pix, cx, stage, "
          "sat);")
    for _ in range(shape.pixels % px):
        w(f"mn_tile1_{tag}(in, filter, out, pix++, cx, stage, sat);")
    w("(void)pix;")
    w.close()
    w("")
    w.open(f"void {name}(const mn_word *args)")
    a = _A
    w(f"int8_t *out = (int8_t *)args[{a['OUT']}];")
    w(f"const int8_t *in = (const int8_t *)args[{a['IN']}], *filter = (const int8_t *)args[{a['FILTER']}];")
    w(f"const int32_t *bias = (const int32_t *)args[{a['BIAS_FULL']}];")
    w(f"const int32_t *mult = (const int32_t *)args[{a['MULT']}];")
    w(f"const int8_t *shift = (const int8_t *)args[{a['SHIFT']}];")
    w(f"const int stage = (int32_t)args[{a['STAGE']}];")
    w("mn_ch ch[OC];")
    w(f"mn_ctx cx = {{ch, mult, shift, (int32_t)args[{a['OUT_ZP']}], (int32_t)args[{a['ACT_MIN']}], "
      f"(int32_t)args[{a['ACT_MAX']}], 0}};")
    w("MN_NO_UNROLL")
    w.open("for (int c = 0; c < OC; c++)")
    w("const int32_t s = shift[c], right = s < 0 ? -s : 0;")
    w("cx.generic |= mult[c] < 0 || s < -31 || s > 31;")
    w("ch[c].bias = bias[c], ch[c].mult = mult[c], ch[c].left = s > 0 ? s : 0, ch[c].right = right & 31;")
    w("ch[c].mask = (int32_t)((1u << (right & 31)) - 1u), ch[c].half = ch[c].mask >> 1;")
    w.close()
    w(f"if (!cx.generic && cx.lo == -128 && cx.hi == 127) mn_body_{tag}(in, filter, out, &cx, stage, 1);")
    w(f"else mn_body_{tag}(in, filter, out, &cx, stage, 0);")
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
    w(_PRELUDE)
    if any(c["requant"] for c in configs):
        w(_OUT_Q)
    rows = sorted({c["tile_px"] for c in configs if c["step"] == 1} | {1})
    if any(c["step"] == 1 for c in configs):
        w(_rows(rows))
    w(f"enum {{ IC = {shape.in_c}, OC = {shape.out_c}, PIX = {shape.pixels} }};")
    w("")
    done = set()
    for c, name in zip(configs, names):
        if name not in done:
            done.add(name)
            w(f"/* {name}: {json.dumps(_shown(c), sort_keys=True)} */")
            _kernel(w, shape, c, name)
    return names, "\n".join(w.lines) + "\n"


def generate(shape: Shape, config: dict[str, int]) -> tuple[str, str]:
    """``(symbol, C source)`` of the kernel for ``shape`` under ``config``."""
    names, text = source(shape, [config])
    return names[0], text
