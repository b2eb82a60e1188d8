"""The direct int8 CONV_2D path (windows read in place from a zero-point-padded image, widened to int16 or, with
AVX-512 VNNI, as uint8 x + 128 in steps of 4 taps; register blocks of pixels x 8/16 channels), the paired int8
DEPTHWISE_CONV_2D path (a ring of column-pair rows) and their shorter exact requantization (mn_host.h's mnh_fq) give
the interpreter's and the wheel's bytes: odd window runs, dilation, strides leaving rows and columns unread, channel
tails, depth multipliers, left shifts and shifts of 0 beside right shifts in one layer, sums too large for mnh_fq
(the general requantization), the output streamed over the input (`stage`), run lengths off the VNNI step; the VNNI
and AVX2 (-DMNH_NO_VNNI) builds of the CONV_2D port against the portable kernel; mnh_fq8_apply against mn_requant_s8
over every accumulator of a range around 0 and random ones up to its bound."""

from __future__ import annotations

import ctypes
import tempfile
from pathlib import Path

import numpy as np
import pytest
from test_native_ports import assert_ported_same, conv, depthwise

from micronn.export.native import FLAGS, host_toolchain
from micronn.kernels._conv_util import compute_out_size
from micronn.micro import lower
from micronn.testing import T, op_model
from micronn.tflite import schema


def _scaled(op: str, *, c: int = 16, cout: int = 16, fh: int = 3, fw: int = 3, h: int = 7, w: int = 9,
            w_scales: list[float], out_scale: float, bias: int = 30000, stride: int = 1, pad: int = 0,
            seed: int = 0) -> bytes:
    """A CONV_2D or DEPTHWISE_CONV_2D whose per-channel effective scales are w_scales * 0.05 / out_scale (above 1:
    a left shift; in [0.5, 1): no shift)."""
    rng = np.random.default_rng(seed)
    oh, ow = compute_out_size(pad, h, fh, stride, 1), compute_out_size(pad, w, fw, stride, 1)
    x, y = T((1, h, w, c), "int8", 0.05, 7), T((1, oh, ow, cout), "int8", out_scale, -3)
    b = T((cout,), "int32", data=rng.integers(-bias, bias, cout))
    if op == "CONV_2D":
        shape = (cout, fh, fw, c)
        wt = T(shape, "int8", w_scales, 0, data=rng.integers(-128, 128, shape))
        opts = schema.options(op, padding=pad, stride_h=stride, stride_w=stride)
    else:
        wt = T((1, fh, fw, cout), "int8", w_scales, 0, axis=3, data=rng.integers(-128, 128, (1, fh, fw, cout)))
        opts = schema.options(op, padding=pad, stride_h=stride, stride_w=stride, depth_multiplier=cout // c)
    return op_model(op, [x, wt, b], [y], opts)


CONV = [
    {"cin": 3, "cout": 8, "h": 13, "w": 12, "stride": (2, 2), "pad": 1},  # runs of 9: one value past each
    {"cin": 1, "cout": 8, "h": 10, "w": 11, "fh": 5, "fw": 5},  # runs of 5, SAME
    {"cin": 5, "cout": 24, "dil": (2, 2), "h": 11, "w": 12},  # one run per tap; 16 + 8 channels
    {"cin": 4, "cout": 9, "stride": (2, 3), "h": 12, "w": 13, "pad": 1},  # VALID: last rows/columns unread
    {"cin": 8, "cout": 1, "fh": 1, "fw": 1, "h": 5, "w": 7},
    {"cin": 112, "cout": 40, "fh": 1, "fw": 1, "h": 3, "w": 3},  # nine pixels: a partial block of six
    {"cin": 17, "cout": 33, "fh": 1, "fw": 1, "h": 4, "w": 5, "stride": (2, 2), "pad": 1},
    {"cin": 6, "cout": 20, "n": 2, "act": 3, "in_zp": -128, "out_zp": 127},
    {"cin": 64, "cout": 32, "fh": 5, "fw": 5, "h": 6, "w": 6},
    # runs off the 4-tap step of the VNNI build (taps past a run's end weigh 0): 6, 2 per tap, 7, 3 per tap
    {"cin": 2, "cout": 16, "h": 9, "w": 10, "pad": 1, "in_zp": 127},
    {"cin": 2, "cout": 8, "dil": (1, 2), "h": 8, "w": 11, "in_zp": -128},
    {"cin": 7, "cout": 17, "fh": 1, "fw": 1, "h": 6, "w": 7},
    {"cin": 3, "cout": 32, "fh": 3, "fw": 3, "h": 10, "w": 9, "stride": (2, 2), "dil": (2, 2), "pad": 1},
]

DEPTHWISE = [
    {"c": 16, "stride": (2, 2), "dil": (2, 2), "h": 13, "w": 12},  # even positions, pairs 2 apart
    {"c": 24, "stride": (3, 3), "h": 14, "w": 13},  # odd stride: every position
    {"c": 8, "stride": (2, 2), "fw": 2, "fh": 4, "h": 12, "w": 11},
    {"c": 8, "stride": (2, 2), "fw": 5, "fh": 5, "h": 15, "w": 14, "pad": 1},
    {"c": 1, "mult": 8, "h": 20, "w": 19, "stride": (2, 2), "pad": 1},  # person_detect's first layer
    {"c": 2, "mult": 16, "h": 9, "w": 10},
    {"c": 3, "mult": 3, "h": 9, "w": 10, "stride": (2, 1)},
    {"c": 11, "fh": 1, "fw": 3, "h": 5, "w": 9},  # a ring of one row
    {"c": 9, "dil": (3, 1), "h": 14, "w": 9},  # a ring of seven rows
    {"c": 40, "n": 3, "act": 1, "in_zp": -128, "out_zp": 127},
]


def _id(case: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in case.items()) or "default"


@pytest.mark.parametrize("case", CONV, ids=_id)
def test_conv_direct(case: dict) -> None:
    assert_ported_same(conv(**case), wheel=True)


@pytest.mark.parametrize("case", DEPTHWISE, ids=_id)
def test_depthwise_paired(case: dict) -> None:
    assert_ported_same(depthwise(**case), wheel=True)


@pytest.mark.parametrize("op", ["CONV_2D", "DEPTHWISE_CONV_2D"])
def test_left_shifts_and_shifts_of_zero(op: str) -> None:
    """Effective scales above 1 (left shifts), in [0.5, 1) (no shift) and below (right shifts) side by side."""
    rng = np.random.default_rng(3)
    ws = list(rng.choice([0.6, 0.15, 0.0004, 0.002], 16) * rng.uniform(1, 1.9, 16))
    assert_ported_same(_scaled(op, w_scales=ws, out_scale=0.02), wheel=True)
    assert_ported_same(_scaled(op, w_scales=[0.3] * 16, out_scale=0.01, bias=50), wheel=True)  # all left


@pytest.mark.parametrize("op", ["CONV_2D", "DEPTHWISE_CONV_2D"])
def test_sums_beyond_the_short_requantization(op: str) -> None:
    """Biases near 2^28: mnh_fq does not hold, the general requantization runs."""
    assert_ported_same(_scaled(op, w_scales=[1e-6] * 16, out_scale=1.0, bias=(1 << 28) + 5), wheel=True)


# ---- the ports called directly: the output streamed over the input (`stage`), against the portable kernels ----


def rails(rng: np.random.Generator, x_shape: tuple, w_shape: tuple) -> list[tuple[np.ndarray, np.ndarray, int]]:
    """(input, weights, input offset) int8 cases: random, then the rails (weights all -128, inputs at 127 and -128,
    the input offset at both ends: sums and -128 * sum(w) terms at their extremes), then random rail values."""
    return [(rng.integers(-128, 128, x_shape).astype(np.int8), rng.integers(-128, 128, w_shape).astype(np.int8), 5),
            (np.full(x_shape, 127, np.int8), np.full(w_shape, -128, np.int8), -127),
            (np.full(x_shape, -128, np.int8), np.full(w_shape, -128, np.int8), 128),
            (rng.choice([-128, 127], x_shape).astype(np.int8), rng.choice([-128, 127], w_shape).astype(np.int8), 128)]


def c_check_library(name: str, source: str) -> ctypes.CDLL:
    """A C test of the host helpers (``source``, including mn_host.h) built as NativeModel builds kernels."""
    d = Path(tempfile.mkdtemp(prefix=f"micronn-{name}-"))
    (d / f"{name}.c").write_text(source)
    return ctypes.CDLL(str(host_toolchain().shared_object([d / f"{name}.c"], [d, lower.include_dir(),
                                                                              lower.include_dir() / "host"], FLAGS)))


def _kernel_library(name: str, defines: tuple[str, ...] = ()) -> ctypes.CDLL:
    d = Path(tempfile.mkdtemp(prefix="micronn-port-"))
    (d / f"{name}.c").write_text((lower.include_dir() / "host" / f"{name}.c").read_text())
    (d / f"{name}.portable.inc").write_text((lower.include_dir() / f"{name}.c").read_text())
    so = host_toolchain().shared_object([d / f"{name}.c"], [d, lower.include_dir(), lower.include_dir() / "host"],
                                        [*FLAGS, *(f"-D{m}" for m in defines)])
    return ctypes.CDLL(str(so))


@pytest.mark.parametrize("depthwise_op", [False, True], ids=["conv", "depthwise"])
@pytest.mark.parametrize("c,k,stride", [(8, 3, 1), (16, 3, 2), (24, 1, 1), (11, 5, 1)])
def test_streamed_output_over_the_input(depthwise_op: bool, c: int, k: int, stride: int) -> None:
    """`stage` set, the output starting `gap` pixels before the input: the same bytes as the portable kernel."""
    name = "depthwise_conv_2d" if depthwise_op else "conv_2d"
    lib, rng, keep = _kernel_library(name), np.random.default_rng(c + k), []
    h, w, pt = 7, 13, (k - 1) // 2
    oh, ow = (h + stride - 1) // stride, (w + stride - 1) // stride
    gap = (w + 1) * pt + 1
    x = rng.integers(-128, 128, (h, w, c)).astype(np.int8)
    weights = rng.integers(-128, 128, (1, k, k, c) if depthwise_op else (c, k, k, c)).astype(np.int8)
    in_off = 5
    sums = weights.reshape(-1, c).sum(0) if depthwise_op else weights.reshape(c, -1).sum(1)
    bias = rng.integers(-30000, 30000, c).astype(np.int32)
    bias_full = (bias + in_off * sums).astype(np.int32)
    mult = rng.integers(1 << 30, (1 << 31) - 1, c).astype(np.int32)
    shift = rng.integers(-12, -6, c).astype(np.int8)
    results = []
    for fn in (f"mn_{name}_s8_portable", f"mn_{name}_s8"):
        arena = np.zeros((gap + h * w) * c + 64, np.int8)
        arena[gap * c:(gap + h * w) * c] = x.ravel()
        ptr = arena.ctypes.data
        shape = [1, k, k] if depthwise_op else [c, k, k, c]  # DEPTH_MULT, F_H, F_W or OUT_C, F_H, F_W, F_C
        words = [ptr, ptr + gap * c, weights.ctypes.data, bias.ctypes.data, bias_full.ctypes.data, mult.ctypes.data,
                 shift.ctypes.data, 1, h, w, c, oh, ow, *shape, stride, stride, 1, 1, pt, pt, in_off, -3, -128, 127,
                 1]
        args = np.array([v & (2**64 - 1) for v in words], np.uint64)
        keep.append((args, arena))  # the ports cache their packed weights by the argument array's address
        getattr(lib, fn)(args.ctypes.data_as(ctypes.c_void_p))
        results.append(arena[:oh * ow * c].copy())
    assert results[0].tobytes() == results[1].tobytes()


# ---- the direct path's two builds: AVX-512 VNNI (where the compiler targets it) and AVX2 (MNH_NO_VNNI) ----

_KEEP: list = []  # argument arrays stay alive: the ports cache their packed weights by the argument array's address


def call_kernel(lib: ctypes.CDLL, fn: str, words: list[int], out: np.ndarray, *keep: np.ndarray) -> bytes:
    """Symbol ``fn`` of ``lib`` called on ``words`` (pointers and integers, as uint64 argument words), then out's
    bytes. The words and ``keep`` stay alive for the session: a port caches its packs by the words' address, which
    must not be reused by another layer's arguments."""
    args = np.array([v & (2**64 - 1) for v in words], np.uint64)
    _KEEP.append((args, out, *keep))
    getattr(lib, fn)(args.ctypes.data_as(ctypes.c_void_p))
    return out.tobytes()

# (n, h, w, in_c, out_c, fh, fw, stride, dilation, pad): runs of every length mod 4, one run per tap, 1x1, channel
# tails of 1..7 beside whole 8- and 16-channel blocks, images of at most 9 pixels (one block of pixels)
BUILDS = [(1, 11, 10, 3, 16, 3, 3, 1, 1, 1), (2, 9, 13, 1, 9, 5, 5, 2, 1, 2), (1, 8, 12, 2, 24, 3, 3, 1, 2, 2),
          (1, 7, 9, 5, 33, 3, 2, 1, 1, 0), (1, 6, 6, 16, 40, 1, 1, 1, 1, 0), (1, 9, 9, 7, 7, 3, 3, 2, 2, 1),
          (1, 3, 3, 64, 20, 3, 3, 1, 1, 1), (1, 12, 14, 32, 48, 3, 3, 2, 1, 1), (1, 6, 7, 6, 10, 3, 3, 1, 3, 0),
          (1, 10, 9, 1, 8, 3, 3, 1, 2, 1)]


@pytest.mark.parametrize("case", BUILDS, ids=[str(c) for c in BUILDS])
def test_vnni_and_avx2_builds_agree(case: tuple) -> None:
    """conv_2d.c built as NativeModel builds it and with -DMNH_NO_VNNI (the AVX2 direct path, on a VNNI host too)
    give the portable kernel's bytes: random data, then the rails (weights all -128, inputs at -128 and 127, the
    input offset at both ends: sums and -128 * sum(w) terms that wrap int32 nowhere they must not)."""
    n, h, w, c, oc, fh, fw, stride, dil, pad = case
    oh, ow = (h + 2 * pad - dil * (fh - 1) - 1) // stride + 1, (w + 2 * pad - dil * (fw - 1) - 1) // stride + 1
    vnni, avx2 = _kernel_library("conv_2d"), _kernel_library("conv_2d", ("MNH_NO_VNNI",))
    rng = np.random.default_rng(sum(case))
    for x, weights, in_off in rails(rng, (n, h, w, c), (oc, fh, fw, c)):
        bias = rng.integers(-30000, 30000, oc).astype(np.int32)
        bias_full = (bias + in_off * weights.reshape(oc, -1).sum(1, dtype=np.int64)).astype(np.int32)
        mult = rng.integers(1 << 30, (1 << 31) - 1, oc).astype(np.int32)
        shift = rng.integers(-14, -6, oc).astype(np.int8)
        results = []
        for lib, fn in ((vnni, "mn_conv_2d_s8_portable"), (vnni, "mn_conv_2d_s8"), (avx2, "mn_conv_2d_s8")):
            out = np.full(n * oh * ow * oc + 64, 77, np.int8)
            words = [out.ctypes.data, x.ctypes.data, weights.ctypes.data, bias.ctypes.data, bias_full.ctypes.data,
                     mult.ctypes.data, shift.ctypes.data, n, h, w, c, oh, ow, oc, fh, fw, c, stride, stride, dil, dil,
                     pad, pad, in_off, -3, -128, 127, 0]
            results.append(call_kernel(lib, fn, words, out, x, weights, bias, bias_full, mult, shift))
        assert results[1] == results[0], "VNNI build"
        assert results[2] == results[0], "MNH_NO_VNNI build"


# ---- mnh_fq8_apply against mn_requant_s8 ----

# The accumulators a requantization check runs through, 8 at a time: a0 .. a0 + 7 (at most lim) while a0 <= sp, then
# random ones in [-lim, lim] from the xorshift state *s.
CHECK_ACCS = r"""
static void check_accs(int32_t acc[8], int64_t a0, int32_t sp, int64_t lim, uint64_t *s) {
    for (int j = 0; j < 8; j++) {
        if (a0 <= sp) {
            const int64_t a = a0 + j;
            acc[j] = (int32_t)(a > lim ? lim : a);
        } else {
            *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
            acc[j] = (int32_t)((int64_t)(*s % (uint64_t)(2 * lim + 1)) - lim);
        }
    }
}
"""

FQ_TEST = r"""
#include "mn_host.h"
""" + CHECK_ACCS + r"""
/* For each parameter set: every acc in [-span, span] and `randoms` random ones within the bound mnh_fq accepts;
 * returns the number of differences, or -1 where mnh_fq refused a set it should accept. */
long mnh_fq_check(const int32_t *mult, const int32_t *shift, const int32_t *zp, int sets, int32_t span, int randoms) {
    long bad = 0;
    uint64_t s = 88172645463325252ull;
    for (int i = 0; i < sets; i++) {
        const int left = shift[i] > 0 ? shift[i] : 0;
        const int64_t lim = (((int64_t)1 << 28) >> left) - 1;
        int32_t m8[8], s8[8];
        int64_t b8[8];
        for (int j = 0; j < 8; j++) m8[j] = mult[i], s8[j] = shift[i], b8[j] = lim;
        mnh_fq q;
        if (!mnh_fq_init(&q, m8, s8, b8, zp[i], 8, 8) || !q.ok) return -1;
        const mnh_fq8 r = mnh_fq8_load(&q, 0, -128, 127);
        const int32_t sp = span < lim ? span : (int32_t)lim;
        for (int64_t a0 = -(int64_t)sp; a0 <= sp + 8 * (int64_t)randoms; a0 += 8) {
            int32_t acc[8], got[8];
            check_accs(acc, a0, sp, lim, &s);
            const __m256i y = mnh_fq8_apply(_mm256_loadu_si256((const __m256i *)acc), &r, 1, 1);
            _mm256_storeu_si256((__m256i *)got, y);
            for (int j = 0; j < 8; j++)
                bad += got[j] != mn_requant_s8(acc[j], mult[i], shift[i], zp[i], -128, 127);
        }
    }
    return bad;
}
"""


def test_short_requantization_is_mn_requant_s8() -> None:
    """Shifts -20..10 (within mnh_fq's bound), multipliers at both ends of [2^30, 2^31) and between, zero points at
    both rails: every accumulator in [-2^20, 2^20] and 2^17 random ones up to the bound."""
    lib = c_check_library("fq", FQ_TEST)
    if not hasattr(lib, "mnh_fq_check"):
        pytest.skip("no AVX2")
    lib.mnh_fq_check.restype = ctypes.c_long
    rng = np.random.default_rng(5)
    params = []
    for shift in range(-20, 11):
        for m in ((1 << 30), (1 << 31) - 1, int(rng.integers(1 << 30, 1 << 31)), 0):
            params.append((m, shift, int(rng.choice([-128, -5, 0, 127]))))
    mult, shift, zp = (np.array(v, np.int32) for v in zip(*params))
    n = ctypes.c_int
    bad = lib.mnh_fq_check(mult.ctypes.data_as(ctypes.c_void_p), shift.ctypes.data_as(ctypes.c_void_p),
                           zp.ctypes.data_as(ctypes.c_void_p), n(len(params)), ctypes.c_int32(1 << 20), n(1 << 14))
    assert bad == 0
