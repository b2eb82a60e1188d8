"""The CONV_2D port's direct path requantized by mn_host.h's mnh_fr (the zero point and rounding constant inside the
64-bit unsigned product, TFLM's negative-h unit and the unsigned product's excess as one masked subtraction, the
clamp on saturated bytes) and its stores (16-channel blocks two pixels at a time, 8-channel blocks four at a time,
an odd or partial last group repeated):
mnh_fr8_apply against mn_requant_s8 over every accumulator of a range around 0 and random ones up to mnh_fq's bound,
multipliers 0, 1 and across [2^30, 2^31), shifts -20..10, zero points at the rails; and conv_2d.c, built as
NativeModel builds it, with -DMNH_NO_VNNI and for -march=haswell (no AVX-512), against the portable kernel on layers
whose pixel counts are not whole groups or blocks, with channel tails, activation bounds inside the int8 range, left
shifts and shifts of 0, and ReLU outputs (the clamp at the output zero point, where negative sums are taken as 0)."""

from __future__ import annotations

import ctypes
import tempfile
from pathlib import Path

import numpy as np
import pytest
from test_native_ports_direct import CHECK_ACCS, _kernel_library, c_check_library, call_kernel, rails

from micronn.export.native import FLAGS, host_toolchain
from micronn.micro import lower

FR_TEST = r"""
#include "mn_host.h"
""" + CHECK_ACCS + r"""
/* For each parameter set: every acc in [-span, span] and `randoms` random ones within the bound mnh_fq accepts, each
 * through mnh_fr8_apply (both LEFT forms where no lane shifts left), clamped to [lo, hi]; returns the number of
 * differences from mn_requant_s8, or -1 where mnh_fq refused a set it should accept. */
long mnh_fr_check(const int32_t *mult, const int32_t *shift, const int32_t *zp, int sets, int32_t span, int randoms,
                  int32_t lo, int32_t hi) {
    long bad = 0;
    uint64_t s = 88172645463325252ull;
    for (int i = 0; i < sets; i++) {
        const int left = shift[i] > 0 ? shift[i] : 0;
        const int64_t lim = (((int64_t)1 << 28) >> left) - 1;
        int32_t m8[8], s8[8];
        int64_t b8[8];
        for (int j = 0; j < 8; j++) m8[j] = mult[(i + j) % sets], s8[j] = shift[i], b8[j] = lim;
        mnh_fq q;
        mnh_fr f;
        if (!mnh_fq_init(&q, m8, s8, b8, zp[i], 8, 8) || !q.ok || !mnh_fr_init(&f, &q, 8, 8)) return -1;
        const mnh_fr8 r = mnh_fr8_load(&f, 0);
        const int32_t sp = span < lim ? span : (int32_t)lim;
        for (int64_t a0 = -(int64_t)sp; a0 <= sp + 8 * (int64_t)randoms; a0 += 8) {
            int32_t acc[8], got[8];
            check_accs(acc, a0, sp, lim, &s);
            for (int form = 0; form < 2; form++) { /* LEFT 0 and 1; a left shift needs LEFT */
                if (left && !form) continue;
                const __m256i a = _mm256_loadu_si256((const __m256i *)acc);
                const __m256i y = form ? mnh_fr8_apply(a, &r, 1) : mnh_fr8_apply(a, &r, 0);
                _mm256_storeu_si256((__m256i *)got, y);
                for (int j = 0; j < 8; j++) {
                    const int32_t v = got[j] < lo ? lo : got[j] > hi ? hi : got[j];
                    bad += v != mn_requant_s8(acc[j], m8[j], s8[j], zp[i], lo, hi);
                }
            }
        }
    }
    return bad;
}
"""


@pytest.mark.parametrize("lo,hi", [(-128, 127), (-5, 90)])
def test_folded_requantization_is_mn_requant_s8(lo: int, hi: int) -> None:
    """Shifts -20..10 (within mnh_fq's bound), multipliers 0, 1, small, at both ends of [2^30, 2^31) and between
    (eight different ones a vector: even and odd lanes), zero points at both rails: every accumulator in
    [-2^19, 2^19] and 2^16 random ones up to the bound."""
    lib = c_check_library("fr", FR_TEST)
    if not hasattr(lib, "mnh_fr_check"):
        pytest.skip("no AVX2")
    lib.mnh_fr_check.restype = ctypes.c_long
    rng = np.random.default_rng(7)
    params = []
    for shift in range(-20, 11):
        for m in ((1 << 30), (1 << 31) - 1, int(rng.integers(1 << 30, 1 << 31)), 0, 1, 12345, (1 << 30) - 1):
            params.append((m, shift, int(rng.choice([-128, -5, 0, 127]))))
    mult, shift, zp = (np.array(v, np.int32) for v in zip(*params))
    n, i32 = ctypes.c_int, ctypes.c_int32
    bad = lib.mnh_fr_check(mult.ctypes.data_as(ctypes.c_void_p), shift.ctypes.data_as(ctypes.c_void_p),
                           zp.ctypes.data_as(ctypes.c_void_p), n(len(params)), i32(1 << 19), n(1 << 13), i32(lo),
                           i32(hi))
    assert bad == 0


def _haswell_library() -> ctypes.CDLL:
    """conv_2d.c for AVX2 without AVX-512 (6-pixel blocks, the high words gathered by a blend), runnable here."""
    d = Path(tempfile.mkdtemp(prefix="micronn-port-"))
    (d / "conv_2d.c").write_text((lower.include_dir() / "host" / "conv_2d.c").read_text())
    (d / "conv_2d.portable.inc").write_text((lower.include_dir() / "conv_2d.c").read_text())
    flags = [f for f in FLAGS if not f.startswith("-march=")] + ["-march=haswell"]
    inc = [d, lower.include_dir(), lower.include_dir() / "host"]
    so = host_toolchain().shared_object([d / "conv_2d.c"], inc, flags)
    return ctypes.CDLL(str(so))


# (n, h, w, in_c, out_c, fh, fw, stride, pad, lo, hi): 1x1 layers with channel tails and pixel counts off the pairs,
# fours, 6- and 12-pixel blocks; images of at most 9 pixels; activation bounds inside the int8 range
CASES = [(1, 5, 7, 16, 16, 1, 1, 1, 0, -128, 127), (1, 7, 5, 16, 24, 1, 1, 1, 0, -128, 127),
         (2, 3, 11, 24, 17, 1, 1, 1, 0, -3, 127), (1, 13, 1, 8, 8, 1, 1, 1, 0, -128, 127),
         (1, 11, 3, 32, 7, 1, 1, 1, 0, -128, 100), (1, 1, 7, 40, 40, 1, 1, 1, 0, -128, 127),
         (1, 3, 3, 16, 33, 1, 1, 1, 0, 0, 127), (1, 1, 5, 12, 3, 1, 1, 1, 0, -128, 127),
         (1, 9, 9, 16, 16, 3, 3, 1, 1, -128, 127), (1, 10, 7, 8, 15, 3, 3, 2, 1, -20, 20),
         (1, 1, 1, 16, 16, 1, 1, 1, 0, -128, 127), (1, 2, 1, 16, 9, 1, 1, 1, 0, -128, 127),
         (1, 4, 5, 16, 25, 1, 1, 1, 0, -128, 127), (1, 5, 5, 8, 9, 3, 3, 1, 1, -128, 127),
         (1, 3, 5, 16, 13, 1, 1, 1, 0, -128, 127),
         # images of at most 9 pixels over 16-channel blocks: 4 (3 of them stored) and 2 pixels, 9 of a 3x3 filter
         (1, 1, 3, 16, 40, 1, 1, 1, 0, -128, 127), (1, 2, 1, 8, 24, 1, 1, 1, 0, -9, 127),
         (1, 3, 3, 8, 32, 3, 3, 1, 1, -128, 127),
         # 1x1 heads of one or two channels (8 pixels in the lanes; partial last groups, two images), and one whose
         # depth is not a multiple of 4 (the direct path)
         (1, 5, 7, 16, 1, 1, 1, 1, 0, -128, 127), (2, 3, 11, 8, 2, 1, 1, 1, 0, -128, 127),
         (1, 4, 2, 4, 1, 1, 1, 1, 0, -5, 60), (1, 3, 3, 12, 2, 1, 1, 1, 0, -128, 127),
         (1, 4, 4, 6, 1, 1, 1, 1, 0, -128, 127),
         # an 8x8 image in 16-channel blocks of 8 pixels, with an 8-channel block after them
         (1, 8, 8, 16, 24, 3, 3, 1, 1, -128, 127), (1, 16, 8, 8, 32, 1, 1, 2, 0, -128, 127),
         # windows one step apart across rows, blocks, bands of blocks and images (1x1, stride 1, unpadded), and a 1x1
         # stride-2 layer whose rows are not
         (2, 7, 13, 8, 24, 1, 1, 1, 0, -128, 127), (1, 20, 23, 8, 16, 1, 1, 1, 0, -5, 90),
         (1, 8, 10, 16, 16, 1, 1, 2, 0, -128, 127)]


def _params(rng: np.random.Generator, oc: int, kind: int) -> tuple[np.ndarray, np.ndarray]:
    if kind == 0:  # QuantizeMultiplier's: [2^30, 2^31), right shifts
        return rng.integers(1 << 30, (1 << 31) - 1, oc).astype(np.int32), rng.integers(-14, -6, oc).astype(np.int8)
    if kind == 1:  # the ends of the range, shifts of 0 and left shifts beside right ones
        mult = rng.choice([1 << 30, (1 << 31) - 1, 1 << 30 | 1], oc).astype(np.int32)
        return mult, rng.choice([-20, -1, 0, 1, 3], oc).astype(np.int8)
    if kind == 3:  # scales near 1: outputs follow the sums unit by unit (with small data, unsaturated)
        return rng.integers(1 << 30, (1 << 31) - 1, oc).astype(np.int32), rng.choice([0, -1, -2], oc).astype(np.int8)
    mult = rng.choice([0, 1, 3, 77777, (1 << 30) - 1], oc).astype(np.int32)  # small multipliers
    return mult, rng.choice([-2, -1, 0] if kind == 4 else [-2, -1, 0, 2], oc).astype(np.int8)  # 4: no left shifts


@pytest.mark.parametrize("case", CASES, ids=[str(c) for c in CASES])
def test_blocks_match_the_portable_kernel(case: tuple) -> None:
    """conv_2d.c (VNNI, -DMNH_NO_VNNI and -march=haswell builds) against its portable kernel: random data, then the
    rails, with three kinds of requantization parameters; then small data under scales near 1, where an output
    follows its sum unit by unit."""
    _check_blocks(case)


# ReLU outputs (the clamp's low end at the output zero point): whole 12 x 16 blocks take negative sums as 0; with the
# zero point at -128 (no clamp left on the bytes) and above it
RELU_CASES = [(1, 9, 9, 16, 16, 3, 3, 1, 1, -128, 127), (1, 6, 8, 8, 32, 1, 1, 1, 0, -128, 127),
              (1, 7, 7, 16, 16, 3, 3, 1, 1, -3, 127)]


@pytest.mark.parametrize("case", RELU_CASES, ids=[str(c) for c in RELU_CASES])
def test_relu_blocks_match_the_portable_kernel(case: tuple) -> None:
    """As above with the output zero point at the clamp's low end, as TFLM sets a ReLU's."""
    _check_blocks(case, relu=True)


def _check_blocks(case: tuple, relu: bool = False) -> None:
    n, h, w, c, oc, fh, fw, stride, pad, lo, hi = case
    oh, ow = (h + 2 * pad - fh) // stride + 1, (w + 2 * pad - fw) // stride + 1
    vnni, avx2, hsw = _kernel_library("conv_2d"), _kernel_library("conv_2d", ("MNH_NO_VNNI",)), _haswell_library()
    rng = np.random.default_rng(sum(case) + 11)
    datas = [(*r, kind) for r, kind in zip(rails(rng, (n, h, w, c), (oc, fh, fw, c)), (0, 1, 2, 0))] + [
             (rng.integers(-128, 128, (n, h, w, c)), rng.integers(-128, 128, (oc, fh, fw, c)), -7, 1),
             (rng.integers(-128, 128, (n, h, w, c)), rng.integers(-128, 128, (oc, fh, fw, c)), 0, 2),
             (rng.integers(-4, 5, (n, h, w, c)), rng.integers(-4, 5, (oc, fh, fw, c)), 3, 3)] + [
             (rng.integers(-128, 128, (n, h, w, c)), rng.integers(-128, 128, (oc, fh, fw, c)), 2, 4)] * relu
    for x, weights, in_off, kind in datas:
        x, weights = x.astype(np.int8), weights.astype(np.int8)
        bias = rng.integers(-60, 60, oc) if kind == 3 else rng.integers(-30000, 30000, oc)
        bias = bias.astype(np.int32)
        bias_full = (bias + in_off * weights.reshape(oc, -1).sum(1, dtype=np.int64)).astype(np.int32)
        mult, shift = _params(rng, oc, kind)
        out_zp = lo if relu else int(rng.choice([-128, -3, 127]))
        results = []
        for lib, fn in ((vnni, "mn_conv_2d_s8_portable"), (vnni, "mn_conv_2d_s8"), (avx2, "mn_conv_2d_s8"),
                        (hsw, "mn_conv_2d_s8")):
            out = np.full(n * oh * ow * oc + 64, 77, np.int8)
            words = [out.ctypes.data, x.ctypes.data, weights.ctypes.data, bias.ctypes.data, bias_full.ctypes.data,
                     mult.ctypes.data, shift.ctypes.data, n, h, w, c, oh, ow, oc, fh, fw, c, stride, stride, 1, 1,
                     pad, pad, in_off, out_zp, lo, hi, 0]
            results.append(call_kernel(lib, fn, words, out, x, weights, bias, bias_full, mult, shift))
        assert results[1] == results[0], "VNNI build"
        assert results[2] == results[0], "MNH_NO_VNNI build"
        assert results[3] == results[0], "-march=haswell build"
