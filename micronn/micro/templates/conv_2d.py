"""Schedule template: general int8 CONV_2D (any filter size, stride, dilation and padding, any input depth).

Covers every ``mn_conv_2d_s8`` task (one group) that the 1x1 template does not take. ``generate(shape, config)``
writes one C function specialised to the layer (every bound a compile-time constant), shaped by the knobs:

* ``im2col`` (1, 0): 1 gathers each output pixel's receptive field (filter rows x columns x input channels, the
  filter's own order) into an int16 stack buffer before the channel loop; padded taps hold the input zero point,
  so that with ``bias_full`` (bias + input offset x filter sum) they add nothing, exactly as the generic kernel's
  skipped taps. With the DSP extension the buffer is in SXTB16's lane order (per four taps: x0 x2 | x1 x3), so
  the inner loop loads ready int16 pairs and only sign-extends the filter. 0 reads the input in place, per valid
  filter row: whole windows from ``bias_full``, windows the border cuts from the plain bias adding the input
  offset per tap, as the generic kernel (no buffer: the choice for receptive fields too large to copy);
* ``tile_oc`` (1, 2, 4): output channels accumulated at once, each input word feeding that many filters;
* ``tile_px`` (1, 2): output pixels accumulated at once (im2col only), each filter word feeding both;
* ``unroll`` (1, 2, 4): copies of the four-tap step per trip of the inner loop;
* ``table`` (1, 0): 1 precomputes each output channel's requantization constants once per call into a stack
  table; 0 derives them from the multiplier and shift at every output (no table: for wide layers).

Stack buffers (the firmware export measures the stack; their sum stays within ``BUFFER_LIMIT`` bytes, and
``space`` leaves out configs that would not): the im2col buffer, ``tile_px`` receptive fields of int16 (each
padded to a multiple of four taps); the table, 16 bytes per output channel; the direct path's staged output
pixel, ``out_c`` bytes (the planner may stream the output over the input). The im2col path needs no staging: a
tile's inputs are all copied before any of its outputs is written.

The arithmetic is the generic kernel's: int32 sums with wrap-around, then ``mn_requant_s8`` (TFLM's double
rounding) rewritten branch-free; layers with a negative multiplier or a shift out of [-31, 31] call
``mn_requant_s8`` itself. SMLAD over SXTB16 lanes with ``__ARM_FEATURE_DSP``; plain C elsewhere (Cortex-M0/M3,
RV32, the host).
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import astuple, dataclass
from typing import Any

from micronn.micro.templates import _knobs, conv_2d_1x1

NAME = "conv_2d"
OP = "CONV_2D"
VERSION = 2  # bump when the generated code changes: tuning logs key their configs by it (2: the direct path reads
# BIAS only for windows the border cuts, as lower._biases now defines it; the im2col code is as in 1)
KNOBS: dict[str, tuple[int, ...]] = {"im2col": (1, 0), "tile_oc": (1, 2, 4), "tile_px": (1, 2), "unroll": (1, 2, 4),
                                     "table": (1, 0)}
BUFFER_LIMIT = 3584  # bytes of stack buffers a config may take (the kernel's whole frame stays within 4 KiB)
TABLE_ENTRY = 16  # bytes per output channel of the requantization table (sizeof mn_ch below)

ARGS = conv_2d_1x1.ARGS  # mn_conv_2d_s8's argument words (the same kernel, so the same enum)
GENERIC_SYMBOL = conv_2d_1x1.GENERIC_SYMBOL
_A = {name: i for i, name in enumerate(ARGS)}
_DIMS = ("N", "IN_H", "IN_W", "IN_C", "OUT_H", "OUT_W", "OUT_C", "F_H", "F_W", "S_H", "S_W", "D_H", "D_W", "PAD_T",
         "PAD_L")


@dataclass(frozen=True)
class Shape:
    """What the generated code is specialised to: the layer's geometry (no quantization: that comes in words)."""

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

    @property
    def key(self) -> str:
        """The tuning log's layer shape key."""
        return (f"{NAME}:n={self.n},in={self.in_h}x{self.in_w}x{self.in_c},out={self.out_h}x{self.out_w}x"
                f"{self.out_c},f={self.f_h}x{self.f_w},s={self.s_h}x{self.s_w},d={self.d_h}x{self.d_w},"
                f"pad={self.pad_t}x{self.pad_l}")

    @property
    def taps(self) -> int:
        """Elements of one receptive field (the filter's size per output channel)."""
        return self.f_h * self.f_w * self.in_c

    @property
    def pixels(self) -> int:
        return self.n * self.out_h * self.out_w

    @property
    def macs(self) -> int:
        """Nominal multiply-accumulates, padded taps included (as the benchmarks count them)."""
        return self.pixels * self.out_c * self.taps


def shape_of(symbol: str, args: list[Any]) -> Shape | None:
    """The shape of an ``mn_conv_2d_s8`` task with one group that the 1x1 template does not cover, else None.
    Reads only the integer words, so it works on any task list."""
    if symbol != GENERIC_SYMBOL or len(args) != len(ARGS):
        return None
    v = {name: args[_A[name]] for name in (*_DIMS, "F_C")}
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in v.values()):
        return None
    if v["F_C"] != v["IN_C"] or min(v.values()) < 0 or min(v[k] for k in _DIMS if k not in ("PAD_T", "PAD_L")) < 1:
        return None
    if conv_2d_1x1.shape_of(symbol, args) is not None:  # the matrix-product template's (and its log's) layers
        return None
    return Shape(*(v[k] for k in _DIMS))


def _padded_taps(shape: Shape) -> int:
    """Elements per receptive field in the im2col buffer: a multiple of four (8-byte aligned pixels)."""
    return (shape.taps + 3) // 4 * 4


def buffer_bytes(shape: Shape, config: dict[str, int]) -> int:
    """The stack buffers a config's kernel declares (see the module docstring)."""
    n = TABLE_ENTRY * shape.out_c if config["table"] else 0
    if config["im2col"]:
        return n + 2 * _padded_taps(shape) * config["tile_px"]
    return n + shape.out_c


def space(shape: Shape) -> list[dict[str, int]]:
    """The configs valid for ``shape``: pixel tiles only with im2col, and buffers within ``BUFFER_LIMIT`` (the
    direct path without a table always qualifies, so the space is never empty)."""
    out = []
    for values in itertools.product(*KNOBS.values()):
        c = dict(zip(KNOBS, values))
        if c["im2col"] == 0 and c["tile_px"] != 1:
            continue
        if buffer_bytes(shape, c) <= BUFFER_LIMIT or (c["im2col"] == 0 and c["table"] == 0):
            out.append(c)
    return out


def features(shape: Shape, config: dict[str, int]) -> list[float]:
    """The cost model's features: the knobs, the shape, and the remainders the knobs leave."""
    chunks = shape.taps // 4
    return [config["im2col"], config["tile_oc"], config["tile_px"], config["unroll"], config["table"],
            shape.in_c, shape.out_c, shape.pixels, shape.f_h * shape.f_w, shape.taps, shape.taps % 4,
            shape.out_c % config["tile_oc"], chunks % config["unroll"], shape.pixels % config["tile_px"],
            shape.in_c % 4, shape.s_w, shape.d_w]


def symbol(shape: Shape, config: dict[str, int]) -> str:
    """``mn_conv_2d_<filter>_<hash>``: the hash covers the template version, shape and config."""
    blob = json.dumps([VERSION, astuple(shape), sorted(config.items())])
    return (f"mn_{NAME}_{shape.f_h}x{shape.f_w}x{shape.in_c}x{shape.out_c}_"
            f"{hashlib.sha1(blob.encode()).hexdigest()[:10]}")


def check_config(config: dict[str, int]) -> dict[str, int]:
    """The config with every knob present and in range (raises ValueError otherwise)."""
    c = _knobs.check_config(NAME, KNOBS, config)
    if c["im2col"] == 0 and c["tile_px"] != 1:
        raise ValueError("conv_2d: tile_px 2 needs im2col (the direct path has one pixel's valid taps at a time)")
    return c


# ---- code generation -----------------------------------------------------------------------------------------

_PRELUDE = """\
#include "mn_kernels.h"

#if defined(__clang__)
#define MN_NO_UNROLL _Pragma("clang loop unroll(disable)")
#else
#define MN_NO_UNROLL _Pragma("GCC unroll 1")
#endif
#define MN_INLINE static inline __attribute__((always_inline))
typedef int16_t __attribute__((may_alias)) mn_h16; /* the im2col buffer, written as int16 ... */
typedef uint32_t __attribute__((may_alias)) mn_w32; /* ... and read (DSP: written too) as words of two lanes */

/* One output channel's requantization constants (16 bytes): mn_requant_s8 for a multiplier >= 0 and a shift in
 * [-31, 31] is h = ((acc << left) * mult + 2^30) >> 31, then RoundingDivideByPOT(h, right) written as
 * (h >> right) + ((h & mask) > (mask >> 1) + (h < 0)), which needs no 64-bit sum. */
typedef struct { int32_t bias, mult, mask; int16_t left, right; } mn_ch;
typedef struct {
    const mn_ch *ch;
    const int32_t *bias, *mult;
    const int8_t *shift;
    int32_t zp, lo, hi, generic;
} mn_ctx;

/* sat: the activation range is all of int8 and every channel takes the fast path (checked once per call);
 * table: the constants come from the per-call table, else from the multiplier and shift words */
MN_INLINE int8_t mn_out(uint32_t acc, const mn_ctx *cx, int c, const int sat, const int table) {
    if (!sat && cx->generic) return mn_requant_s8((int32_t)acc, cx->mult[c], cx->shift[c], cx->zp, cx->lo, cx->hi);
    int32_t mult, left, right, mask;
    if (table) {
        const mn_ch *q = cx->ch + c;
        mult = q->mult, left = q->left, right = q->right, mask = q->mask;
    } else {
        const int32_t s = cx->shift[c];
        mult = cx->mult[c], left = s > 0 ? s : 0, right = s > 0 ? 0 : -s;
        mask = (int32_t)((1u << right) - 1u);
    }
    const int32_t x = (int32_t)(acc << left);
    const int32_t h = (int32_t)(((int64_t)x * mult + (1 << 30)) >> 31);
    const int32_t y = (h >> right) + ((h & mask) > (mask >> 1) - (h >> 31));
#if defined(__ARM_FEATURE_DSP)
    if (sat) return (int8_t)__builtin_arm_ssat(__builtin_arm_qadd(y, cx->zp), 8);
#endif
    return (int8_t)mn_add_clamp(y, cx->zp, sat ? -128 : cx->lo, sat ? 127 : cx->hi);
}

MN_INLINE uint32_t mn_bias(const mn_ctx *cx, int c, const int table) {
    return (uint32_t)(table ? cx->ch[c].bias : cx->bias[c]);
}
"""

# The im2col gather, shared by every config of a shape: element e of a receptive field is filter row e / R,
# column e % R / IC, channel e % IC (the filter's order). With DSP, elements below K4 sit in SXTB16 lane order.
_GATHER = """\
#if defined(__ARM_FEATURE_DSP)
/* buffer position of element e: within each four, bytes 0 1 2 3 of a word go to lanes 0 2 1 3 */
#define MN_POS(e) ((e) < K4 ? (((e) & ~3) | (((e) & 1) << 1) | (((e) >> 1) & 1)) : (e))
#else
#define MN_POS(e) (e)
#endif

/* n input bytes s[0..n) as elements e .. e + n - 1 (four at a time where they fill a whole word pair); inlined
 * with constant e and n for whole filter rows, so the compiler lays each row's copy out straight */
MN_INLINE void mn_run(mn_h16 *b, int e, const int8_t *s, int n) {
    int i = 0;
#if defined(__ARM_FEATURE_DSP)
    for (; i < n && ((e + i) & 3); i++) b[MN_POS(e + i)] = s[i];
    mn_w32 *w = (mn_w32 *)(b + e + i);
    for (; i + 4 <= n && e + i + 4 <= K4; i += 4, w += 2) {
        const uint32_t v = mn_word4(s + i);
        w[0] = MN_EVEN(v), w[1] = MN_ODD(v);
    }
#endif
    for (; i < n; i++) b[MN_POS(e + i)] = s[i];
}

/* n padded taps from element e: the input zero point, which adds nothing once bias_full holds the offset */
static __attribute__((noinline)) void mn_pad(mn_h16 *b, int e, int n, int16_t zp) {
    MN_NO_UNROLL
    for (int i = 0; i < n; i++) b[MN_POS(e + i)] = zp;
}

/* a filter row cut by the left or right padding, or dilated: column by column (one out-of-line copy) */
static __attribute__((noinline)) void mn_row_cut(mn_h16 *b, int e, const int8_t *row, int ix0, int16_t zp) {
    MN_NO_UNROLL
    for (int fx = 0; fx < FW; fx++) {
        const int ix = ix0 + fx * DW;
        if (ix >= 0 && ix < IW) mn_run(b, e + fx * IC, row + ix * IC, IC);
        else mn_pad(b, e + fx * IC, IC, zp);
    }
}

/* one filter row's taps (row fy of the window at (iy0, ix0)) from element e = fy * R */
MN_INLINE void mn_row(mn_h16 *b, int e, const int8_t *img, int iy, int ix0, int xin, int16_t zp) {
    if (iy < 0 || iy >= IH) mn_pad(b, e, R, zp);
    else if (DW == 1 && xin) mn_run(b, e, img + ((size_t)iy * IW + ix0) * IC, R);
    else mn_row_cut(b, e, img + (size_t)iy * IW * IC, ix0, zp);
}
"""


_Writer = conv_2d_1x1._Writer


def _fill(w: _Writer, shape: Shape) -> None:
    """``mn_gather``: output pixel ``pix``'s receptive field into the buffer (rows unrolled when few)."""
    w.open("MN_INLINE void mn_gather(mn_h16 *b, const int8_t *in, int pix, int16_t zp)")
    w("const int ox = pix % OW, t = pix / OW, oy = t % OH, bi = t / OH;")
    w("const int iy0 = oy * SH - PT, ix0 = ox * SW - PL;")
    w("const int xin = ix0 >= 0 && ix0 + (FW - 1) * DW < IW;")
    w("const int8_t *img = in + (size_t)bi * IH * IW * IC;")
    if shape.f_h <= 8:
        for fy in range(shape.f_h):
            w(f"mn_row(b, {fy * shape.f_w * shape.in_c}, img, iy0 + {fy * shape.d_h}, ix0, xin, zp);")
    else:
        w("MN_NO_UNROLL")
        w("for (int fy = 0; fy < FH; fy++) mn_row(b, fy * R, img, iy0 + fy * DH, ix0, xin, zp);")
    w.close()
    w("")


def _step(w: _Writer, shape: Shape, px: int, oc: int, u: int, dsp: bool) -> None:
    """Four taps at ``xq``/``wq`` + step ``u`` from the im2col buffer: every accumulator gets its four products."""
    kp, k = _padded_taps(shape), shape.taps
    w.open("")
    if dsp:
        for p in range(px):
            at = p * kp // 2 + 2 * u
            w(f"const uint32_t xe{p} = xq[{at}], xo{p} = xq[{at + 1}];")
        for t in range(oc):
            w(f"{'' if t else 'uint32_t '}kv = mn_word4(wq + {t * k + 4 * u});")
            w(f"{'' if t else 'uint32_t '}ke = MN_EVEN(kv);")
            w("kv = MN_ODD(kv);")
            for p in range(px):
                w(f"a{p}_{t} = MN_SMLAD(xo{p}, kv, MN_SMLAD(xe{p}, ke, a{p}_{t}));")
    else:
        for j in range(4):
            for p in range(px):
                w(f"const int32_t x{p}_{j} = xq[{p * kp + 4 * u + j}];")
            for t in range(oc):
                w(f"{'' if t or j else 'int32_t '}kv = wq[{t * k + 4 * u + j}];")
                for p in range(px):
                    w(f"a{p}_{t} += (uint32_t)(x{p}_{j} * kv);")
    w.close()


def _block(w: _Writer, shape: Shape, config: dict[str, int], px: int, oc: int, dsp: bool) -> None:
    """Output channels ``oc0 .. oc0 + oc`` of the tile's ``px`` buffered pixels: the sums over every tap, then the
    output stage."""
    k, kp, tab = shape.taps, _padded_taps(shape), config["table"]
    w.open("")
    w("const int8_t *wq = filter + (size_t)oc0 * K;")
    w(f"const {'mn_w32' if dsp else 'mn_h16'} *xq = xb;")
    for t in range(oc):
        w(f"const uint32_t b{t} = mn_bias(cx, oc0 + {t}, {tab});")
        for p in range(px):
            w(f"uint32_t a{p}_{t} = b{t};")
    chunks, u = k // 4, config["unroll"]
    if chunks // u:
        w("MN_NO_UNROLL")
        w.open(f"for (int kk = 0; kk < {chunks // u}; kk++)")
        for i in range(u):
            _step(w, shape, px, oc, i, dsp)
        w(f"xq += {(2 if dsp else 4) * u};")
        w(f"wq += {4 * u};")
        w.close()
    for i in range(chunks % u):
        _step(w, shape, px, oc, i, dsp)
    rest = 4 * (chunks % u)
    for j in range(k % 4):  # the last taps % 4 elements (plain order), one at a time
        for p in range(px):
            x = f"((const mn_h16 *)xq)[{p * kp + rest + j}]" if dsp else f"xq[{p * kp + rest + j}]"
            w(f"const int32_t xt{p}_{j} = {x};")
        for t in range(oc):
            for p in range(px):
                w(f"a{p}_{t} += (uint32_t)(xt{p}_{j} * wq[{t * k + rest + j}]);")
    w("(void)xq, (void)wq;")
    for p in range(px):
        for t in range(oc):
            w(f"out[{p} * OC + oc0 + {t}] = mn_out(a{p}_{t}, cx, oc0 + {t}, sat, {tab});")
    w.close()


def _oc_loop(w: _Writer, shape: Shape, config: dict[str, int], block: Any) -> None:
    t = config["tile_oc"]
    if shape.out_c // t:
        w("MN_NO_UNROLL")
        w.open(f"for (int oc0 = 0; oc0 < {shape.out_c // t * t}; oc0 += {t})")
        block(t)
        w.close()
    if shape.out_c % t:
        w("MN_NO_UNROLL")
        w.open(f"for (int oc0 = {shape.out_c // t * t}; oc0 < OC; oc0++)")
        block(1)
        w.close()


def _tile(w: _Writer, shape: Shape, config: dict[str, int], px: int, dsp: bool, tag: str) -> None:
    """The im2col tile function: ``px`` gathered pixels (``xb``) times every filter into ``out``."""
    w.open(f"MN_INLINE void mn_tile{px}_{tag}(const {'mn_w32' if dsp else 'mn_h16'} *xb, const int8_t *filter, "
           "int8_t *out, const mn_ctx *cx, const int sat)")
    _oc_loop(w, shape, config, lambda oc: _block(w, shape, config, px, oc, dsp))
    w.close()
    w("")


def _dot(w: _Writer, shape: Shape, config: dict[str, int], oc: int, dsp: bool) -> None:
    """``n`` taps at ``x`` (input, offset added here) and ``wr`` (+ t * K per filter) into ``a0_t``."""
    u = config["unroll"]
    w("int i = 0;")
    for trip in sorted({u, 1}, reverse=True):  # unrolled trips, then single steps, then single taps
        if dsp:
            w("MN_NO_UNROLL")
            w.open(f"for (; i + {4 * trip} <= n; i += {4 * trip})")
            for s in range(trip):
                w.open("")
                w(f"const uint32_t v = mn_word4(x + i + {4 * s});")
                w("const uint32_t xe = (uint32_t)__builtin_arm_sadd16((int32_t)MN_EVEN(v), (int32_t)off2);")
                w("const uint32_t xo = (uint32_t)__builtin_arm_sadd16((int32_t)MN_ODD(v), (int32_t)off2);")
                for t in range(oc):
                    w(f"{'' if t else 'uint32_t '}kv = mn_word4(wr + {t} * K + i + {4 * s});")
                    w(f"{'' if t else 'uint32_t '}ke = MN_EVEN(kv);")
                    w("kv = MN_ODD(kv);")
                    w(f"a0_{t} = MN_SMLAD(xo, kv, MN_SMLAD(xe, ke, a0_{t}));")
                w.close()
            w.close()
        elif trip > 1:
            w("MN_NO_UNROLL")
            w.open(f"for (; i + {trip} <= n; i += {trip})")
            for s in range(trip):
                w(f"{'' if s else 'int32_t '}xv = x[i + {s}] + off;")
                for t in range(oc):
                    w(f"a0_{t} += (uint32_t)(xv * wr[{t} * K + i + {s}]);")
            w.close()
    w("MN_NO_UNROLL")
    w.open("for (; i < n; i++)")
    w("const int32_t xv = x[i] + off;")
    for t in range(oc):
        w(f"a0_{t} += (uint32_t)(xv * wr[{t} * K + i]);")
    w.close()


def _direct_block(w: _Writer, shape: Shape, config: dict[str, int], oc: int, dsp: bool) -> None:
    """Output channels ``oc0 .. oc0 + oc`` of one pixel read in place: bias_full + x * w over a whole window,
    bias + (x + offset) * w over the valid taps of one the border cuts (``off`` is 0 for whole ones)."""
    tab = config["table"]
    w.open("")
    for t in range(oc):
        w(f"uint32_t a0_{t} = full ? mn_bias(cx, oc0 + {t}, {tab}) : (uint32_t)bias_cut[oc0 + {t}];")
    w("MN_NO_UNROLL")
    w.open("for (int fy = fy0; fy < fy1; fy++)")
    w("const int8_t *xr = img + (size_t)(iy0 + fy * DH) * IW * IC, *wf = filter + (size_t)oc0 * K + fy * R;")
    if shape.d_w == 1:  # the valid columns of a filter row are one contiguous run of input and of filter
        w.open("")
        w("const int8_t *x = xr + (ix0 + fx0) * IC, *wr = wf + fx0 * IC;")
        w("const int n = (fx1 - fx0) * IC;")
        _dot(w, shape, config, oc, dsp)
        w.close()
    else:
        w("MN_NO_UNROLL")
        w.open("for (int fx = fx0; fx < fx1; fx++)")
        w("const int8_t *x = xr + (ix0 + fx * DW) * IC, *wr = wf + fx * IC;")
        w("const int n = IC;")
        _dot(w, shape, config, oc, dsp)
        w.close()
    w.close()
    for t in range(oc):
        w(f"o[oc0 + {t}] = mn_out(a0_{t}, cx, oc0 + {t}, sat, {tab});")
    w.close()


def _direct(w: _Writer, shape: Shape, config: dict[str, int], dsp: bool, tag: str) -> None:
    """The direct path's pixel function: one output pixel, every filter, input read where it lies."""
    w.open(f"MN_INLINE void mn_pixel_{tag}(const int8_t *in, const int8_t *filter, int8_t *out, int pix, "
           "const mn_ctx *cx, const int32_t *bias_cut, int32_t in_off, int8_t *staged, const int stage, "
           "const int sat)")
    w("const int ox = pix % OW, t = pix / OW, oy = t % OH, bi = t / OH;")
    w("const int iy0 = oy * SH - PT, ix0 = ox * SW - PL;")
    w("int fy0, fy1, fx0, fx1;")
    w("mn_valid_taps(iy0, DH, IH, FH, &fy0, &fy1);")
    w("mn_valid_taps(ix0, DW, IW, FW, &fx0, &fx1);")
    w("const int8_t *img = in + (size_t)bi * IH * IW * IC;")
    w("int8_t *o = stage ? staged : out + (size_t)pix * OC;")
    # the plain bias (BIAS) is defined only for windows the border cuts (lower._biases): whole windows take
    # bias_full and no offset, as the generic kernel
    w("const int full = fy0 == 0 && fy1 == FH && fx0 == 0 && fx1 == FW;")
    w("const int32_t off = full ? 0 : in_off;")
    if dsp:
        w("const uint32_t off2 = ((uint32_t)off & 0xFFFFu) * 0x10001u;")
    _oc_loop(w, shape, config, lambda oc: _direct_block(w, shape, config, oc, dsp))
    w("if (stage) memcpy(out + (size_t)pix * OC, staged, OC);")
    w.close()
    w("")


def _kernel(w: _Writer, shape: Shape, config: dict[str, int], name: str) -> None:
    """The tile (or pixel) functions, the pixel loop and the entry point ``name`` of one config."""
    tag = name.rsplit("_", 1)[1]
    im2col, px, tab = config["im2col"], config["tile_px"], config["table"]
    kp = _padded_taps(shape)
    for dsp in (True, False):
        w("#if defined(__ARM_FEATURE_DSP)" if dsp else "#else")
        if im2col:
            for p in sorted({px, 1}, reverse=True):
                _tile(w, shape, config, p, dsp, tag)
        else:
            _direct(w, shape, config, dsp, tag)
    w("#endif")
    cut = "" if im2col else "const int32_t *bias_cut, "  # the direct path's bias for windows the border cuts
    w.open(f"MN_INLINE void mn_body_{tag}(const int8_t *in, const int8_t *filter, int8_t *out, const mn_ctx *cx, "
           f"{cut}int32_t off, const int stage, const int sat)")
    if im2col:
        w("(void)stage;")
        w(f"mn_w32 xw[{px * kp // 2}]; /* the im2col buffer: {px} receptive field(s) of {kp} int16 */")
        w("mn_h16 *xb = (mn_h16 *)xw;")
        w("const int16_t zp = (int16_t)-off;")
        w("#if defined(__ARM_FEATURE_DSP)")
        w("const mn_w32 *xt = xw;")
        w("#else")
        w("const mn_h16 *xt = xb;")
        w("#endif")
        w("int pix = 0;")
        if shape.pixels // px:
            w("MN_NO_UNROLL")
            w.open(f"for (; pix < {shape.pixels // px * px}; pix += {px})")
            for p in range(px):
                w(f"mn_gather(xb + {p * kp}, in, pix + {p}, zp);")
            w(f"mn_tile{px}_{tag}(xt, filter, out + (size_t)pix * OC, cx, sat);")
            w.close()
        for _ in range(shape.pixels % px):
            w("mn_gather(xb, in, pix, zp);")
            w(f"mn_tile1_{tag}(xt, filter, out + (size_t)pix * OC, cx, sat);")
            w("pix++;")
        w("(void)pix;")
    else:
        w("int8_t staged[OC]; /* one output pixel, when the output streams over the input */")
        w("MN_NO_UNROLL")
        w(f"for (int pix = 0; pix < PIX; pix++) mn_pixel_{tag}(in, filter, out, pix, cx, bias_cut, off, staged, stage, "
          "sat);")
    w.close()
    w("")
    a = _A
    w.open(f"void {name}(const mn_word *args)")
    w(f"int8_t *out = (int8_t *)args[{a['OUT']}];")
    w(f"const int8_t *in = (const int8_t *)args[{a['IN']}], *filter = (const int8_t *)args[{a['FILTER']}];")
    # im2col pads with the zero point, so every window is a whole one; the direct path reads BIAS for cut ones
    w(f"const int32_t *bias = (const int32_t *)args[{a['BIAS_FULL']}];")
    w(f"const int32_t *mult = (const int32_t *)args[{a['MULT']}];")
    w(f"const int8_t *shift = (const int8_t *)args[{a['SHIFT']}];")
    w(f"const int32_t off = (int32_t)args[{a['IN_OFF']}];")
    w(f"const int stage = (int32_t)args[{a['STAGE']}];")
    if tab:
        w(f"mn_ch ch[OC]; /* the requantization table, {TABLE_ENTRY} bytes per output channel */")
    w(f"mn_ctx cx = {{{'ch' if tab else '0'}, bias, mult, shift, (int32_t)args[{a['OUT_ZP']}], "
      f"(int32_t)args[{a['ACT_MIN']}], (int32_t)args[{a['ACT_MAX']}], 0}};")
    w("MN_NO_UNROLL")
    w.open("for (int c = 0; c < OC; c++)")
    w("const int32_t s = shift[c];")
    w("cx.generic |= mult[c] < 0 || s < -31 || s > 31;")
    if tab:
        w("const int32_t right = s < 0 ? -s : 0;")
        w("ch[c].bias = bias[c], ch[c].mult = mult[c], ch[c].left = (int16_t)(s > 0 ? s : 0);")
        w("ch[c].right = (int16_t)(right & 31), ch[c].mask = (int32_t)((1u << (right & 31)) - 1u);")
    w.close()
    cut = "" if im2col else f"(const int32_t *)args[{a['BIAS']}], "
    w(f"if (!cx.generic && cx.lo == -128 && cx.hi == 127) mn_body_{tag}(in, filter, out, &cx, {cut}off, stage, 1);")
    w(f"else mn_body_{tag}(in, filter, out, &cx, {cut}off, stage, 0);")
    w.close()
    w("")


def source(shape: Shape, configs: list[dict[str, int]]) -> tuple[list[str], str]:
    """``(symbols, C source)``: one translation unit with a kernel per config (a batch compiles once)."""
    configs = [check_config(c) for c in configs]
    names = [symbol(shape, c) for c in configs]
    s = shape
    w = _Writer()
    w(f"/* Generated by micronn.micro.templates.{NAME} (version {VERSION}) for {shape.key}: "
      f"{len(configs)} config(s). */")
    w(_PRELUDE)
    w(f"enum {{ IH = {s.in_h}, IW = {s.in_w}, IC = {s.in_c}, OH = {s.out_h}, OW = {s.out_w}, OC = {s.out_c}, "
      f"FH = {s.f_h}, FW = {s.f_w},")
    w(f"       SH = {s.s_h}, SW = {s.s_w}, DH = {s.d_h}, DW = {s.d_w}, PT = {s.pad_t}, PL = {s.pad_l}, "
      f"PIX = {s.pixels}, R = {s.f_w * s.in_c}, K = {s.taps}, K4 = {s.taps // 4 * 4} }};")
    w("")
    if any(c["im2col"] for c in configs):
        w(_GATHER)
        _fill(w, shape)
    done = set()
    for c, name in zip(configs, names):
        if name not in done:
            done.add(name)
            w(f"/* {name}: {json.dumps(c, sort_keys=True)} */")
            _kernel(w, shape, c, name)
    return names, "\n".join(w.lines) + "\n"


def generate(shape: Shape, config: dict[str, int]) -> tuple[str, str]:
    """``(symbol, C source)`` of the kernel for ``shape`` under ``config``."""
    names, text = source(shape, [config])
    return names[0], text
