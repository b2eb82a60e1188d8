"""The int8 DEPTHWISE_CONV_2D host port's two builds, called directly: depthwise_conv_2d.c as NativeModel builds it
(on an AVX-512 VNNI host: quads of uint8 x + 128 summed by vpdpbusd from bias_full - 128 * sum(w), 32-channel groups
whose blocks' results pack into channel order and are clamped as bytes) and with -DMNH_NO_VNNI (the pairs of int16 and
madd, on a VNNI host too) give the portable kernel's bytes: depth multipliers, channel counts around the 8-, 16- and
32-channel steps, strides, dilations, paddings, filter widths off the 4-tap step, left shifts and shifts of 0, sums
beyond the short requantization (the per-pixel path), mnh_fr's requantization (multipliers 0 and small, zero points
at the rails), activation ranges, random data and data at the rails (weights all -128, inputs and the input zero
point at both ends), the output streamed over the input (`stage`)."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from test_native_ports_direct import _kernel_library

_KEEP: list = []  # argument arrays stay alive: the ports cache their packed weights by the argument array's address
_LIBS: dict = {}


def _libs() -> list[tuple[ctypes.CDLL, str]]:
    if not _LIBS:
        _LIBS["vnni"] = _kernel_library("depthwise_conv_2d")
        _LIBS["avx2"] = _kernel_library("depthwise_conv_2d", ("MNH_NO_VNNI",))
    vnni, avx2 = _LIBS["vnni"], _LIBS["avx2"]
    return [(vnni, "mn_depthwise_conv_2d_s8_portable"), (vnni, "mn_depthwise_conv_2d_s8"),
            (avx2, "mn_depthwise_conv_2d_s8")]


def _words(out: int, x: np.ndarray, arrays: tuple, n: int, h: int, w: int, c: int, oh: int, ow: int, mult: int,
           fh: int, fw: int, stride: tuple, dil: tuple, pad: tuple, in_off: int, out_zp: int, act: tuple,
           stage: int) -> np.ndarray:
    weights, bias, bias_full, m, shift = arrays
    words = [out, x, weights.ctypes.data, bias.ctypes.data, bias_full.ctypes.data, m.ctypes.data, shift.ctypes.data,
             n, h, w, c, oh, ow, mult, fh, fw, *stride, *dil, *pad, in_off, out_zp, *act, stage]
    return np.array([v & (2**64 - 1) for v in words], np.uint64)


def _params(rng: np.random.Generator, weights: np.ndarray, in_off: int, shifts: tuple[int, int], bias_span: int
            ) -> tuple:
    oc = weights.shape[-1]
    bias = rng.integers(-bias_span, bias_span, oc).astype(np.int32)
    sums = weights.reshape(-1, oc).sum(0, dtype=np.int64)
    bias_full = ((bias + in_off * sums) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    mult = rng.integers(1 << 30, (1 << 31) - 1, oc).astype(np.int32)
    shift = rng.integers(shifts[0], shifts[1] + 1, oc).astype(np.int8)
    return weights, bias, bias_full, mult, shift


# (n, h, w, c, mult, fh, fw, stride, dilation, pad (top, left)): channels c * mult around the 8-, 16- and 32-channel
# steps (1 group + 1 block, 2 groups + 2 blocks, 3 groups + a tail of 1..7, exactly 8: two pixels a step, odd rows),
# filter widths 1..5 (quads of 1..4 taps)
CASES = [(1, 9, 10, 32, 1, 3, 3, 1, 1, (1, 1)), (2, 11, 12, 40, 1, 3, 3, 2, 1, (1, 1)),
         (1, 10, 11, 80, 1, 3, 3, 1, 1, (0, 0)), (1, 12, 9, 101, 1, 3, 3, 2, 1, (1, 0)),
         (1, 8, 13, 51, 1, 5, 5, 1, 1, (2, 2)), (1, 14, 13, 33, 1, 3, 3, 1, (2, 3), (2, 3)),
         (1, 13, 14, 64, 1, 2, 4, 2, (1, 2), (0, 1)), (1, 9, 9, 7, 1, 3, 3, 3, 1, (1, 1)),
         (1, 8, 10, 4, 8, 3, 3, 1, 1, (1, 1)), (1, 9, 8, 3, 12, 3, 5, (2, 1), 1, (1, 2)),
         (2, 7, 7, 2, 16, 3, 3, 2, 2, (2, 2)), (1, 6, 9, 5, 3, 1, 3, 1, 1, (0, 1)),
         (1, 10, 7, 96, 1, 3, 1, 1, 1, (1, 0)), (1, 5, 6, 48, 2, 3, 3, 1, 1, (1, 1)),
         (1, 12, 12, 16, 1, 7, 7, 1, 1, (3, 3)), (2, 11, 9, 8, 1, 3, 3, 1, 1, (1, 1)),
         (1, 10, 13, 2, 4, 3, 3, 2, 1, (1, 1)), (1, 9, 10, 8, 1, 5, 5, 1, (1, 2), (2, 1))]


def _pair(v: int | tuple) -> tuple[int, int]:
    return v if isinstance(v, tuple) else (v, v)


def _run(case: tuple, x: np.ndarray, arrays: tuple, in_off: int, act: tuple[int, int], out_zp: int) -> list[bytes]:
    n, h, w, c, mult, fh, fw, stride, dil, pad = case
    (sh, sw), (dh, dw) = _pair(stride), _pair(dil)
    oh = (h + 2 * pad[0] - dh * (fh - 1) - 1) // sh + 1
    ow = (w + 2 * pad[1] - dw * (fw - 1) - 1) // sw + 1
    results = []
    for lib, fn in _libs():
        out = np.full(n * oh * ow * c * mult + 64, 77, np.int8)
        args = _words(out.ctypes.data, x.ctypes.data, arrays, n, h, w, c, oh, ow, mult, fh, fw, (sh, sw), (dh, dw),
                      pad, in_off, out_zp, act, 0)
        _KEEP.append((args, out, x, arrays))
        getattr(lib, fn)(args.ctypes.data_as(ctypes.c_void_p))
        results.append(out.tobytes())
    return results


def _assert_same(results: list[bytes]) -> None:
    assert results[1] == results[0], "VNNI build"
    assert results[2] == results[0], "MNH_NO_VNNI build"


@pytest.mark.parametrize("case", CASES, ids=[str(c) for c in CASES])
def test_vnni_and_avx2_builds_agree(case: tuple) -> None:
    """Random data with right shifts, then the rails: inputs at 127 or -128 with weights all -128 and the input
    offset at both ends (the -128 * sum(w) start and every partial sum at its extremes), random rail values."""
    n, h, w, c, mult, fh, fw = case[:7]
    oc = c * mult
    rng = np.random.default_rng(sum(case[:7]))
    datas = [(rng.integers(-128, 128, (n, h, w, c)), rng.integers(-128, 128, (1, fh, fw, oc)), 5, (-128, 127), -3),
             (np.full((n, h, w, c), 127), np.full((1, fh, fw, oc), -128), -127, (-128, 127), 127),
             (np.full((n, h, w, c), -128), np.full((1, fh, fw, oc), -128), 128, (-128, 127), -128),
             (rng.choice([-128, 127], (n, h, w, c)), rng.choice([-128, 127], (1, fh, fw, oc)), 128, (-20, 90), 4),
             (rng.integers(-128, 128, (n, h, w, c)), rng.integers(-128, 128, (1, fh, fw, oc)), -127, (-128, 127),
              -128)]
    for x, weights, in_off, act, out_zp in datas:
        arrays = _params(rng, weights.astype(np.int8), in_off, (-14, -6), 30000)
        _assert_same(_run(case, x.astype(np.int8), arrays, in_off, act, out_zp))


@pytest.mark.parametrize("case", [CASES[1], CASES[3], CASES[8], CASES[13], CASES[15]], ids=str)
@pytest.mark.parametrize("shifts", [(-20, 1), (0, 0), (1, 3)], ids=["mixed", "zero", "left"])
def test_shifts(case: tuple, shifts: tuple[int, int]) -> None:
    """Right shifts beside shifts of 0 and left shifts (mnh_fq's LEFT and E0 variants), and all left."""
    n, h, w, c, mult, fh, fw = case[:7]
    rng = np.random.default_rng(sum(case[:7]) + shifts[0])
    x = rng.integers(-128, 128, (n, h, w, c)).astype(np.int8)
    weights = rng.integers(-128, 128, (1, fh, fw, c * mult)).astype(np.int8)
    span = 300 if shifts[0] >= 0 else 30000
    arrays = _params(rng, weights, 7, shifts, span)
    arrays = (*arrays[:3], (arrays[3] >> (12 if shifts[0] >= 0 else 0)).astype(np.int32), arrays[4])
    _assert_same(_run(case, x, arrays, 7, (-128, 127), 2))


@pytest.mark.parametrize("case", [CASES[0], CASES[2], CASES[3], CASES[10], CASES[15]], ids=str)
@pytest.mark.parametrize("out_zp", [-128, 0, 127])
def test_folded_requantization(case: tuple, out_zp: int) -> None:
    """The 32-, 16- and 8-channel outputs' requantization by mnh_fr (zp and rounding in the product's add, TFLM's
    unit off a negative sum by one compare): multipliers 0, 1, small and across [2^30, 2^31) (small ones leave many
    negative sums at h = 0), shifts -20..3 (shifts of 0 beside right and left ones), zero points at the rails."""
    n, h, w, c, mult, fh, fw = case[:7]
    oc = c * mult
    rng = np.random.default_rng(sum(case[:7]) + out_zp + 128)
    x = rng.integers(-128, 128, (n, h, w, c)).astype(np.int8)
    weights = rng.integers(-128, 128, (1, fh, fw, oc)).astype(np.int8)
    for shifts, span in (((-20, 0), 30000), ((-3, 3), 300)):
        arrays = _params(rng, weights, -5, shifts, span)
        m = rng.choice([0, 1, 3, 1 << 12, 1 << 20, (1 << 30) + 1, (1 << 31) - 1], oc).astype(np.int32)
        if shifts[1] > 0:
            m = (m >> 12).astype(np.int32)
        arrays = (*arrays[:3], m, arrays[4])
        _assert_same(_run(case, x, arrays, -5, (-128, 127), out_zp))
        _assert_same(_run(case, x, arrays, -5, (-100, 50), out_zp))


@pytest.mark.parametrize("case", [CASES[0], CASES[3], CASES[9]], ids=str)
def test_sums_beyond_the_short_requantization(case: tuple) -> None:
    """Biases near 2^28: the paired path declines, the per-pixel path runs (both builds)."""
    n, h, w, c, mult, fh, fw = case[:7]
    rng = np.random.default_rng(11)
    x = rng.integers(-128, 128, (n, h, w, c)).astype(np.int8)
    weights = rng.integers(-128, 128, (1, fh, fw, c * mult)).astype(np.int8)
    arrays = _params(rng, weights, -3, (-20, -14), (1 << 28) + 5)
    _assert_same(_run(case, x, arrays, -3, (-128, 127), 0))


@pytest.mark.parametrize("c,k,stride", [(32, 3, 1), (40, 3, 2), (72, 5, 1), (19, 3, 1), (8, 3, 1), (8, 3, 2)])
def test_streamed_output_over_the_input(c: int, k: int, stride: int) -> None:
    """`stage` set, the output starting `gap` pixels before the input (32-channel groups, blocks after them)."""
    rng = np.random.default_rng(c + k)
    h, w, pt = 7, 13, (k - 1) // 2
    oh, ow = (h + stride - 1) // stride, (w + stride - 1) // stride
    gap = (w + 1) * pt + 1
    x = rng.integers(-128, 128, (h, w, c)).astype(np.int8)
    arrays = _params(rng, rng.integers(-128, 128, (1, k, k, c)).astype(np.int8), 5, (-12, -6), 30000)
    results = []
    for lib, fn in _libs():
        arena = np.zeros((gap + h * w) * c + 64, np.int8)
        arena[gap * c:(gap + h * w) * c] = x.ravel()
        ptr = arena.ctypes.data
        args = _words(ptr, ptr + gap * c, arrays, 1, h, w, c, oh, ow, 1, k, k, (stride, stride), (1, 1), (pt, pt), 5,
                      -3, (-128, 127), 1)
        _KEEP.append((args, arena, arrays))
        getattr(lib, fn)(args.ctypes.data_as(ctypes.c_void_p))
        results.append(arena[:oh * ow * c].tobytes())
    _assert_same(results)
