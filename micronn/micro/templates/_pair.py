"""C snippets the FULLY_CONNECTED and SVDF templates share: matrix-vector products over paired weight rows.

The weights come in ``lower.paired_rows``'s layout (see ``mn_kernels.h``): halfwords 256 * w[r+1] + w[r] per pair
of rows, four rows a tile, the input widened once to int16 lanes in SXTB16's order. With the DSP extension a raw
weight word's SMLAD adds 256 * dot(row r+1) + dot(row r) and its SXTB16's SMLAD dot(row r): three instructions per
four multiply-accumulates. The generated code fixes the group count at compile time, so the loops over a tile's
groups unroll as the config says and its sums stay in registers.
"""

from __future__ import annotations

from micronn.micro.templates._knobs import Writer as _Writer

PRELUDE = """\
#include "mn_kernels.h"

#if defined(__clang__)
#define MN_NO_UNROLL _Pragma("clang loop unroll(disable)")
#else
#define MN_NO_UNROLL _Pragma("GCC unroll 1")
#endif
#define MN_INLINE static inline __attribute__((always_inline))

/* mn_rq's folded requantization (mn_rq_clamp before its clamp): t * m plus the constant whose high word is h
 * (h + 1 less for negative t) and low word 2^30 (0xC0000000), the high word shifted right by s */
#if defined(__ARM_FEATURE_DSP) && defined(__thumb2__)
MN_INLINE int32_t mn_fold(int32_t t, int32_t m, uint32_t h, int s) {
    uint32_t lo = ((uint32_t)t & 0x80000000u) | 0x40000000u, hi = h + (uint32_t)(t >> 31);
    __asm__("smlal %0, %1, %2, %3" : "+r"(lo), "+r"(hi) : "r"(t), "r"(m));
    return (int32_t)hi >> s;
}
MN_INLINE int32_t mn_smmlar(int32_t x, int32_t m2) {
    int32_t y;
    __asm__("smmlar %0, %1, %2, %1" : "=r"(y) : "r"(x), "r"(m2));
    return y;
}
#endif
"""


def folded(mult: int, shift: int, zp: int) -> bool:
    """mn_rq's folded form applies (mn_rq_init's test): one 64-bit multiply-accumulate does both roundings."""
    return mult > 1 << 30 and -22 <= shift <= -2 and -255 <= zp <= 255


def fold(value: str, mult: int, shift: int, zp: int) -> str:
    """C for mn_rq's folded requantization of int32 ``value`` (before the clamp), constants compiled in."""
    e = -shift
    hi = ((1 << (e - 2)) + zp * (1 << (e - 1))) & 0xFFFFFFFF
    return f"mn_fold({value}, {mult}, {hi}u, {e - 1})"


def widen(w: _Writer, depth: int, zp: int) -> None:
    """``uint32_t xe[2 * G]``: the input ``x`` (``depth`` int8 values) less ``zp``, as int16 lanes (x0, x2),
    (x1, x3) per group of four; the last, partial group read byte by byte (never past the input)."""
    groups, whole = -(-depth // 4), depth // 4
    w(f"uint32_t xe[{2 * groups}] __attribute__((aligned(8)));")

    def lanes(at: int, v: str) -> None:
        if zp:
            w(f"xe[{at}] = (uint32_t)__builtin_arm_ssub16((int32_t)MN_EVEN({v}), (int32_t)zp2);")
            w(f"xe[{at} + 1] = (uint32_t)__builtin_arm_ssub16((int32_t)MN_ODD({v}), (int32_t)zp2);")
        else:
            w(f"xe[{at}] = MN_EVEN({v}), xe[{at} + 1] = MN_ODD({v});")

    if zp:
        w(f"const uint32_t zp2 = ((uint32_t)({zp}) & 0xFFFFu) * 0x10001u;")
    if whole:
        w("MN_NO_UNROLL")
        w.open(f"for (int g = 0; g < {whole}; g++)")
        w("const uint32_t v = mn_word4(x + 4 * g);")
        lanes("2 * g", "v")
        w.close()
    if depth % 4:
        w.open("")
        w("uint32_t v = 0;")
        for i in range(4 * whole, depth):
            w(f"v |= (uint32_t)(uint8_t)x[{i}] << {8 * (i - 4 * whole)};")
        lanes(str(2 * whole), "v")
        w.close()


def _group(w: _Writer, g: str) -> None:
    """One group of four inputs for the four rows of a tile: two input words, four weight words."""
    w.open("")
    w(f"const uint32_t x02 = xe[2 * ({g})], x13 = xe[2 * ({g}) + 1];")
    w(f"const uint32_t k0 = wq[4 * ({g})], k1 = wq[4 * ({g}) + 1], k2 = wq[4 * ({g}) + 2], k3 = wq[4 * ({g}) + 3];")
    w("b1 = MN_SMLAD(k0, x02, b1), a0 = MN_SMLAD(MN_EVEN(k0), x02, a0);")
    w("b1 = MN_SMLAD(k1, x13, b1), a0 = MN_SMLAD(MN_EVEN(k1), x13, a0);")
    w("b3 = MN_SMLAD(k2, x02, b3), a2 = MN_SMLAD(MN_EVEN(k2), x02, a2);")
    w("b3 = MN_SMLAD(k3, x13, b3), a2 = MN_SMLAD(MN_EVEN(k3), x13, a2);")
    w.close()


def tile_dot(w: _Writer, groups: int, unroll: int) -> None:
    """``uint32_t a0 .. a3``: the four rows of the tile at ``wq`` (4 * groups words, groups <= MAX_GROUPS, so the
    sums are exact) dotted with ``xe``. ``unroll``: groups per trip of the loop (0: every group, no loop)."""
    assert 0 < groups <= MAX_GROUPS
    w("uint32_t a0 = 0, b1 = 0, a2 = 0, b3 = 0;")
    u = groups if unroll == 0 else min(unroll, groups)
    if groups // u > 1:
        w("MN_NO_UNROLL")
        w.open(f"for (int g = 0; g < {groups // u * u}; g += {u})")
        for i in range(u):
            _group(w, f"g + {i}")
        w.close()
    else:
        for i in range(u):
            _group(w, f"{i}")
    for i in range(groups // u * u, groups):
        _group(w, f"{i}")
    w("uint32_t a1 = (uint32_t)((int32_t)(b1 - a0) >> 8), a3 = (uint32_t)((int32_t)(b3 - a2) >> 8);")


MAX_GROUPS = 63  # mn_kernels.h's MN_PAIR_GROUPS: the paired sums are exact over at most this many groups


def tile_dot_asm(w: _Writer, groups: int, unroll: int) -> None:
    """``uint32_t a0 .. a3``: ``tile_dot``'s sums in Thumb-2 assembly (groups <= MAX_GROUPS): per group one LDRD
    of input lanes, two LDRD of weight words (post-indexed ``wq``), four SXTB16 and eight SMLAD; the first group
    starts the sums with SMUAD. ``unroll`` 0 unrolls every group (the input read at fixed offsets); otherwise
    ``unroll`` groups per trip of a counted loop after the first."""
    assert 0 < groups <= MAX_GROUPS

    def group(first: bool, at: str) -> list[str]:
        mla = "smuad {0}, {1}, {2}" if first else "smlad {0}, {1}, {2}, {0}"
        out = [f"ldrd r4, r5, {at}"]
        for lo, hi in (("%[a0]", "%[b1]"), ("%[a2]", "%[b3]")):
            out += ["ldrd r8, r9, [%[w]], #8", mla.format(hi, "r8", "r4"), "sxtb16 r8, r8",
                    mla.format(lo, "r8", "r4"), f"smlad {hi}, r9, r5, {hi}", "sxtb16 r9, r9",
                    f"smlad {lo}, r9, r5, {lo}"]
        return out

    lines = group(True, "[%[x]]" if unroll == 0 else "[%[x]], #8")
    if unroll == 0:
        for g in range(1, groups):
            lines += group(False, f"[%[x], #{8 * g}]")
    else:
        trips, rest = divmod(groups - 1, unroll)
        if trips:
            lines += [f"mov %[n], #{trips}", "2:"]
            for _ in range(unroll):
                lines += group(False, "[%[x]], #8")
            lines += ["subs %[n], %[n], #1", "bne 2b"]
        for _ in range(rest):
            lines += group(False, "[%[x]], #8")
    lines += ["sub %[b1], %[b1], %[a0]", "asr %[b1], %[b1], #8", "sub %[b3], %[b3], %[a2]", "asr %[b3], %[b3], #8"]
    text = "\\n\\t".join(lines)
    w("uint32_t a0, a1, a2, a3;")
    w.open("")
    w("const uint32_t *xp = xe;")
    if unroll:
        w("uint32_t n;")
    w(f'__asm__("{text}"')
    outs = '[a0] "=&r"(a0), [b1] "=&r"(a1), [a2] "=&r"(a2), [b3] "=&r"(a3), [w] "+r"(wq), [x] "+r"(xp)'
    if unroll:
        outs += ', [n] "=&r"(n)'
    w(f"        : {outs}")
    w('        :')
    w('        : "r4", "r5", "r8", "r9", "cc", "memory");')
    w.close()
