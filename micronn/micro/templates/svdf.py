"""Schedule template: int8 SVDF of rank 1 with an int16 state, specialised to one layer.

TFLM's SVDF projects the input on every filter's feature weights, requantizes each projection into the newest slot
of that filter's state (the state first shifted one slot older), dots each state window with the filter's time
weights, adds the bias and requantizes. The generic kernel (``kernels/svdf.c``) runs each stage over 64 filters
at a time with its sizes and requantizations read at run time; this template writes one C function for a layer
(sizes and both requantizations compile-time constants: shifts become immediates) that takes tiles of four
filters through the stages. Knobs:

* ``dot`` (1, 0): the tile's projection (paired weight rows, ``_pair``) in Thumb-2 assembly or in C;
* ``unroll`` (0 = all, 1, 2, 4): groups of four inputs per trip of the projection loop;
* ``split`` (1, 0): first the projections and new state values of 32 filters into a stack stage, then their
  time steps and outputs in one loop (``_steps_asm``: all in assembly, a memory of 8q slots), else each tile of
  four through every stage while its sums are in registers;
* ``time`` (1, 0): the state shift and time dot product in assembly (eight slots a block: four unaligned loads,
  one STM, two LDRD of weights, four SMLADs) or in C.

The function takes the argument words of the ``mn_svdf_s8`` task (``lower._svdf``). It covers what keyword
models use: rank 1, paired feature weights, a filter count divisible by 4, an even memory of at least 4 slots, at
most 96 inputs (the widened input lives on the stack), a state zero point of 0 and multipliers in the ranges its
fused requantizations take (``shape_of`` reads them from the task's words). Cores without the DSP extension, and
state or time weights that are not word-aligned (checked per call), take a portable path with the same stages
built from mn_kernels.h's helpers.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from micronn.micro.templates import _knobs, _pair

NAME = "svdf"
OP = "SVDF"
VERSION = 1
KNOBS: dict[str, tuple[int, ...]] = {"unroll": (1, 2, 4, 0), "time": (0, 1), "split": (0, 1), "dot": (0, 1)}
DEFAULTS: dict[str, int] = {}
ARGS = ("OUT", "IN", "W_FEATURE", "W_TIME", "BIAS", "STATE", "BATCHES", "INPUT_SIZE", "FILTERS", "MEMORY", "RANK",
        "IN_ZP", "STATE_ZP", "OUT_ZP", "MULT_1", "SHIFT_1", "MULT_2", "SHIFT_2", "PAIRED", "FIX")
GENERIC_SYMBOL = "mn_svdf_s8"
_A = {name: i for i, name in enumerate(ARGS)}
MAX_GROUPS = 24  # mn_kernels.h's MN_PAIR_SLAB: the widened input lives on the stack (firmware RAM counts it)
CHUNK = 32  # filters per round of the split stages: a 256-byte stage on the stack


@dataclass(frozen=True)
class Shape:
    """What the generated code is specialised to: the layer's sizes and its quantization (the requantizations
    are compiled with their constants, so shifts become immediates and nothing spills for them)."""

    batches: int
    input_size: int
    filters: int
    memory: int
    in_zp: int
    mult_1: int
    shift_1: int
    mult_2: int
    shift_2: int
    out_zp: int

    @property
    def key(self) -> str:
        return (f"{NAME}:batches={self.batches},input_size={self.input_size},filters={self.filters},"
                f"memory={self.memory},in_zp={self.in_zp},q1={self.mult_1}:{self.shift_1},"
                f"q2={self.mult_2}:{self.shift_2},out_zp={self.out_zp}")

    @property
    def macs(self) -> int:
        return self.batches * self.filters * (self.input_size + self.memory)


def shape_of(symbol: str, args: list[Any]) -> Shape | None:
    """The shape of an ``mn_svdf_s8`` task the template covers (see the module docstring), else None."""
    if symbol != GENERIC_SYMBOL or len(args) != len(ARGS):
        return None
    v = {n: args[_A[n]] for n in ARGS if n not in ("OUT", "IN", "W_FEATURE", "W_TIME", "BIAS", "STATE", "FIX")}
    if not all(isinstance(x, int) for x in v.values()):
        return None
    if v["RANK"] != 1 or v["PAIRED"] != 1 or v["FILTERS"] % 4 or v["MEMORY"] % 2 or v["MEMORY"] < 4:
        return None
    if min(v["BATCHES"], v["INPUT_SIZE"], v["FILTERS"]) < 1 or v["INPUT_SIZE"] > 4 * MAX_GROUPS:
        return None
    # the state's requantization: mn_rq_s16_loop's SMMLAR form (no right shift) or the folded one; the output's
    # folded; a state zero point of 0
    smmlar = v["MULT_1"] >= 1 << 30 and 0 <= v["SHIFT_1"] < 31
    if v["STATE_ZP"] or not (smmlar or _pair.folded(v["MULT_1"], v["SHIFT_1"], 0)) or \
            not _pair.folded(v["MULT_2"], v["SHIFT_2"], v["OUT_ZP"]) or not -255 <= v["IN_ZP"] <= 255:
        return None
    return Shape(v["BATCHES"], v["INPUT_SIZE"], v["FILTERS"], v["MEMORY"], v["IN_ZP"], v["MULT_1"], v["SHIFT_1"],
                 v["MULT_2"], v["SHIFT_2"], v["OUT_ZP"])


def space(shape: Shape) -> list[dict[str, int]]:
    """Every config (32): assembly first, whole unrolling first."""
    return [{"unroll": u, "time": t, "split": sp, "dot": d} for d in (1, 0) for sp in (1, 0) for t in (1, 0)
            for u in (0, 4, 2, 1)]


def features(shape: Shape, config: dict[str, int]) -> list[float]:
    config = check_config(config)
    groups = -(-shape.input_size // 4)
    u = config["unroll"] or groups
    return [config["unroll"], config["time"], config["split"], config["dot"], shape.batches, shape.input_size,
            shape.filters, shape.memory, groups % u, shape.memory % 8]


def symbol(shape: Shape, config: dict[str, int]) -> str:
    dims = f"{shape.input_size}x{shape.filters}x{shape.memory}x{shape.batches}"
    return _knobs.symbol(sys.modules[__name__], shape, config, dims)


def check_config(config: dict[str, int]) -> dict[str, int]:
    return _knobs.check_config(NAME, KNOBS, {**DEFAULTS, **config})


_PRELUDE = _pair.PRELUDE + """
typedef uint32_t __attribute__((may_alias)) mn_state_word;
"""


def _time_c(w: _knobs.Writer, memory: int, tag: str) -> None:
    """``mn_time_<tag>(s, k, v, acc)``: acc + the filter's time dot product over its window shifted one slot
    older with ``v`` newest, the state shifted in place (word k of the new window is the unaligned word one slot
    up, stored one slot lower)."""
    words = memory // 2
    w.open(f"MN_INLINE uint32_t mn_time_{tag}(int16_t *s, const uint32_t *k, uint32_t v, uint32_t acc)")
    w("mn_state_word *d = (mn_state_word *)s;")
    w("const mn_u32_any *src = (const mn_u32_any *)(s + 1);")
    w(f"const uint32_t last = (uint32_t)(uint16_t)s[{memory - 1}] | v << 16;")
    for i in range(words - 1):
        w(f"const uint32_t n{i} = src[{i}];")
    for i in range(words - 1):
        w(f"d[{i}] = n{i};")
    w(f"d[{words - 1}] = last;")
    for i in range(words - 1):
        w(f"acc = MN_SMLAD(n{i}, k[{i}], acc);")
    w(f"return MN_SMLAD(last, k[{words - 1}], acc);")
    w.close()


def _time_asm(w: _knobs.Writer, memory: int, tag: str) -> None:
    """``_time_c`` in Thumb-2 assembly, eight slots a block (the last block packs the oldest-but-one slot with
    the new value); a memory of 8q + 4 slots ends with a C step of two words. The pointers come back advanced to
    the next filter."""
    blocks, rest = memory // 8, memory % 8
    w(f"MN_INLINE uint32_t mn_time_{tag}(int16_t **ps, const uint32_t **pk, uint32_t v, uint32_t acc)")
    w.open("")
    w("int16_t *s = *ps;")
    w("const uint32_t *k = *pk;")
    lines = []
    full = blocks if rest else blocks - 1
    for _ in range(full):
        lines += ["ldr r8, [%[s], #2]", "ldr r9, [%[s], #6]", "ldr r10, [%[s], #10]", "ldr r11, [%[s], #14]",
                  "stmia %[s]!, {r8, r9, r10, r11}", "ldrd r4, r5, [%[k]], #8", "smlad %[a], r8, r4, %[a]",
                  "smlad %[a], r9, r5, %[a]", "ldrd r4, r5, [%[k]], #8", "smlad %[a], r10, r4, %[a]",
                  "smlad %[a], r11, r5, %[a]"]
    if not rest:
        lines += ["ldrh r5, [%[s], #14]", "ldr r8, [%[s], #2]", "ldr r9, [%[s], #6]", "ldr r10, [%[s], #10]",
                  "pkhbt r11, r5, %[v], lsl #16", "stmia %[s]!, {r8, r9, r10, r11}", "ldrd r4, r5, [%[k]], #8",
                  "smlad %[a], r8, r4, %[a]", "smlad %[a], r9, r5, %[a]", "ldrd r4, r5, [%[k]], #8",
                  "smlad %[a], r10, r4, %[a]", "smlad %[a], r11, r5, %[a]"]
    text = "\\n\\t".join(lines)
    w(f'__asm__ volatile("{text}"')
    w('        : [s] "+r"(s), [k] "+r"(k), [a] "+r"(acc)')
    w('        : [v] "r"(v)')
    w('        : "r4", "r5", "r8", "r9", "r10", "r11", "memory");')
    if rest:  # four slots left: (s[1], s[2]), (s[3], v)
        w("const uint32_t n0 = *(const mn_u32_any *)(s + 1), last = (uint32_t)(uint16_t)s[3] | v << 16;")
        w("((mn_state_word *)s)[0] = n0, ((mn_state_word *)s)[1] = last;")
        w("acc = MN_SMLAD(last, k[1], MN_SMLAD(n0, k[0], acc));")
        w("s += 4, k += 2;")
    w("*ps = s, *pk = k;")
    w("return acc;")
    w.close()


def _portable(w: _knobs.Writer, shape: Shape, tag: str) -> None:
    """``mn_svdf_portable_<tag>``: the same stages per tile of four filters with mn_kernels.h's portable helpers
    (any core, any alignment): the paired product of mn_pair_block, mn_rq's requantizations, the time loop."""
    groups, mem, a = -(-shape.input_size // 4), shape.memory, _A
    w.open(f"static void mn_svdf_portable_{tag}(const mn_word *args)")
    w(f"const int8_t *in = MN_P(const int8_t, {a['IN']});")
    w(f"const int32_t in_zp = MN_I({a['IN_ZP']});")
    w(f"const mn_rq q1 = mn_rq_init(MN_I({a['MULT_1']}), MN_I({a['SHIFT_1']}), 0);")
    w(f"const mn_rq q2 = mn_rq_init(MN_I({a['MULT_2']}), MN_I({a['SHIFT_2']}), MN_I({a['OUT_ZP']}));")
    w(f"uint32_t xe[{2 * groups}];")
    w("MN_NO_UNROLL")
    w.open(f"for (int b = 0; b < {shape.batches}; b++)")
    w(f"const int8_t *x = in + b * {shape.input_size};")
    w(f"int8_t *o = MN_P(int8_t, {a['OUT']}) + b * {shape.filters};")
    w(f"int16_t *s = MN_P(int16_t, {a['STATE']}) + b * {shape.filters * mem};")
    w(f"const int16_t *k = MN_P(const int16_t, {a['W_TIME']});")
    w(f"const int32_t *fix = MN_P(const int32_t, {a['FIX']}), *bias = MN_P(const int32_t, {a['BIAS']});")
    w(f"mn_pair_widen(x, {shape.input_size}, in_zp, xe);")
    w("MN_NO_UNROLL")
    w.open(f"for (int f = 0; f < {shape.filters}; f += 4)")
    w("uint32_t acc[4] = {0, 0, 0, 0};")
    w(f"mn_pair_block(xe, MN_P(const uint32_t, {a['W_FEATURE']}) + (size_t)f * {groups}, 0, {groups}, {groups}, 4, "
      "acc);")
    w("fix = mn_pair_fix(fix, f, f + 4, x, in_zp, acc);")
    w("MN_NO_UNROLL")
    w.open(f"for (int j = 0; j < 4; j++, s += {mem}, k += {mem})")
    w("const int16_t v = (int16_t)mn_rq_clamp(&q1, (int32_t)acc[j], -32768, 32767);")
    w("uint32_t t = (uint32_t)bias[f + j];")
    w("MN_NO_UNROLL")
    w(f"for (int m = 0; m < {mem - 1}; m++) s[m] = s[m + 1], t += (uint32_t)(s[m] * k[m]);")
    w(f"s[{mem - 1}] = v;")
    w(f"t += (uint32_t)(v * k[{mem - 1}]);")
    w("o[f + j] = (int8_t)mn_rq_clamp(&q2, (int32_t)t, -128, 127);")
    w.close()
    w.close()
    w.close()
    w.close()
    w("")


def _fresh(shape: Shape, acc: str) -> str:
    """C for the requantized projection ``acc`` before its clamp to int16: SMMLAR(x, 2 * mult - 2^32, x) for
    floor((x * mult + 2^30) / 2^31) (mn_rq_s16_loop's form, no right shift), else the folded form."""
    if shape.shift_1 >= 0:
        return f"mn_smmlar((int32_t)({acc} << {shape.shift_1}), (int32_t){(2 * shape.mult_1) & 0xFFFFFFFF}u)"
    return _pair.fold(f"(int32_t){acc}", shape.mult_1, shape.shift_1, 0)


def _time_call(w: _knobs.Writer, asm: int, tag: str, mem: int, v: str, init: str) -> None:
    """``t``: ``init`` (the filter's bias) plus its time step with new value ``v``, the state and weights pointers
    moved on."""
    if asm:
        w(f"const int32_t t = (int32_t)mn_time_{tag}(&s, &k, {v}, (uint32_t){init});")
    else:
        w(f"const int32_t t = (int32_t)mn_time_{tag}(s, k, {v}, (uint32_t){init});")
        w(f"s += {mem}, k += {mem // 2};")


def _steps_asm(w: _knobs.Writer, shape: Shape) -> None:
    """The time steps and outputs of filters c0 .. c1 as one Thumb-2 loop (a memory of 8q slots): per filter its
    bias from the stage, q blocks of state shift and dot product (``_time_asm``'s), the new value from the stage
    into the last block, then mn_rq's folded requantization with its constants as immediates (the high word's
    (1 + 2 zp) * 2^(e-2) is an 8-bit value shifted: Thumb-2 encodes it) and a post-indexed byte store."""
    e, zp = -shape.shift_2, shape.out_zp
    hi = (1 + 2 * zp) << (e - 2)
    block = ["ldrd r4, r5, [%[k]], #8", "smlad %[a], r8, r4, %[a]", "smlad %[a], r9, r5, %[a]",
             "ldrd r4, r5, [%[k]], #8", "smlad %[a], r10, r4, %[a]", "smlad %[a], r11, r5, %[a]"]
    lines = ["1:", "ldr %[a], [%[st]], #4"]
    for _ in range(shape.memory // 8 - 1):
        lines += ["ldr r8, [%[s], #2]", "ldr r9, [%[s], #6]", "ldr r10, [%[s], #10]", "ldr r11, [%[s], #14]",
                  "stmia %[s]!, {r8, r9, r10, r11}", *block]
    lines += ["ldrh r5, [%[s], #14]", "ldrh r4, [%[st]], #4", "ldr r8, [%[s], #2]", "ldr r9, [%[s], #6]",
              "ldr r10, [%[s], #10]", "pkhbt r11, r5, r4, lsl #16", "stmia %[s]!, {r8, r9, r10, r11}", *block,
              "and r4, %[a], #0x80000000", "orr r4, r4, #0x40000000", "asr r5, %[a], #31",
              f"add r5, r5, #{hi}" if hi >= 0 else f"sub r5, r5, #{-hi}", "smlal r4, r5, %[a], %[m]",
              f"ssat r5, #8, r5, asr #{e - 1}", "strb r5, [%[o]], #1", "subs %[n], %[n], #1", "bne 1b"]
    w.open("")
    w("const int32_t *st = stage;")
    w("int8_t *oo = o + c0;")
    w("uint32_t n = (uint32_t)(c1 - c0), acc;")
    w(f"const int32_t m = {shape.mult_2};")
    text = "\\n\\t".join(lines)
    w(f'__asm__ volatile("{text}"')
    w('        : [s] "+r"(s), [k] "+r"(k), [st] "+r"(st), [o] "+r"(oo), [n] "+r"(n), [a] "=&r"(acc)')
    w('        : [m] "r"(m)')
    w('        : "r4", "r5", "r8", "r9", "r10", "r11", "cc", "memory");')
    w.close()


def _kernel(w: _knobs.Writer, shape: Shape, config: dict[str, int], name: str) -> None:
    tag = name.rsplit("_", 1)[1]
    groups, mem = -(-shape.input_size // 4), shape.memory
    asm = config["time"]
    a = _A
    _portable(w, shape, tag)
    w("#if defined(__ARM_FEATURE_DSP) && defined(__thumb2__)")
    (_time_asm if asm else _time_c)(w, mem, tag)
    w("")
    w.open(f"void {name}(const mn_word *args)")
    w(f"const int16_t *wt = (const int16_t *)args[{a['W_TIME']}];")
    w(f"int16_t *state = (int16_t *)args[{a['STATE']}];")
    w("if (((uintptr_t)state | (uintptr_t)wt) & 3) { /* word steps need word-aligned state and time weights */")
    w(f"    mn_svdf_portable_{tag}(args);")
    w("    return;")
    w("}")
    w(f"const int32_t *bias = (const int32_t *)args[{a['BIAS']}];")
    w("MN_NO_UNROLL")
    w.open(f"for (int b = 0; b < {shape.batches}; b++)")
    w(f"const int8_t *x = (const int8_t *)args[{a['IN']}] + b * {shape.input_size};")
    w(f"int8_t *o = (int8_t *)args[{a['OUT']}] + b * {shape.filters};")
    w(f"int16_t *s = state + b * {shape.filters * mem};")
    w("const uint32_t *k = (const uint32_t *)wt;")
    w(f"const int32_t *fix = (const int32_t *)args[{a['FIX']}];")
    _pair.widen(w, shape.input_size, shape.in_zp)
    w(f"const uint32_t *wq = (const uint32_t *)args[{a['W_FEATURE']}];")
    step = "" if config["dot"] else f", wq += {4 * groups}"  # the assembly moves wq on itself
    if config["split"]:  # CHUNK filters at a time: bias and new state value per filter on the stack, then time steps
        w(f"int32_t stage[{2 * CHUNK}];")
        w("MN_NO_UNROLL")
        w.open(f"for (int c0 = 0; c0 < {shape.filters}; c0 += {CHUNK})")
        w(f"const int c1 = c0 + {CHUNK} < {shape.filters} ? c0 + {CHUNK} : {shape.filters};")
        w("MN_NO_UNROLL")
        w.open(f"for (int f = c0; f < c1; f += 4{step})")
    else:
        w("MN_NO_UNROLL")
        w.open(f"for (int f = 0; f < {shape.filters}; f += 4{step})")
    if config["dot"]:
        _pair.tile_dot_asm(w, groups, config["unroll"])
    else:
        _pair.tile_dot(w, groups, config["unroll"])
    # lower.paired_rows's corrections fall on the odd rows (the second of a pair)
    w("MN_NO_UNROLL")
    w(f"for (; fix[0] < f + 4; fix += 2) {{ const uint32_t d = (uint32_t)(x[fix[1]] - {shape.in_zp}); "
      "if (fix[0] & 2) a3 -= d; else a1 -= d; }")
    split = config["split"]
    for j in range(4):
        w.open("")
        w(f"const int32_t y = {_fresh(shape, f'a{j}')};")
        if split:
            w(f"stage[2 * (f - c0) + {2 * j}] = bias[f + {j}];")
            w(f"stage[2 * (f - c0) + {2 * j + 1}] = __builtin_arm_ssat(y, 16);")
            w.close()
            continue
        w("const uint32_t v = (uint32_t)__builtin_arm_ssat(y, 16); /* its low half: the new slot */")
        _time_call(w, asm, tag, mem, "v", f"bias[f + {j}]")
        w(f"o[f + {j}] = (int8_t)__builtin_arm_ssat({_pair.fold('t', shape.mult_2, shape.shift_2, shape.out_zp)}, 8);")
        w.close()
    w.close()
    if split and asm and mem % 8 == 0:
        _steps_asm(w, shape)
        w.close()
    elif split:
        w("MN_NO_UNROLL")
        w.open("for (int f = c0; f < c1; f++)")
        _time_call(w, asm, tag, mem, "(uint32_t)stage[2 * (f - c0) + 1]", "stage[2 * (f - c0)]")
        w(f"o[f] = (int8_t)__builtin_arm_ssat({_pair.fold('t', shape.mult_2, shape.shift_2, shape.out_zp)}, 8);")
        w.close()
        w.close()
    w.close()
    w.close()
    w("#else")
    w(f"void {name}(const mn_word *args) {{ mn_svdf_portable_{tag}(args); }}")
    w("#endif")
    w("")


def source(shape: Shape, configs: list[dict[str, int]]) -> tuple[list[str], str]:
    """``(symbols, C source)``: one translation unit with a kernel per config."""
    return _knobs.source(sys.modules[__name__], shape, configs, _PRELUDE)


def generate(shape: Shape, config: dict[str, int]) -> tuple[str, str]:
    names, text = source(shape, [config])
    return names[0], text
