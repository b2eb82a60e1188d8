"""The int8 TRANSPOSE_CONV host port (micronn/micro/kernels/host/transpose_conv.c) gives the interpreter's and the
wheel's bytes. Filter == stride takes its own path (each output pixel one tap: a 1x1 convolution into fh * fw * out_c
columns, with AVX-512 VNNI uint8 x + 128 summed by vpdpbusd from bias + (offset - 128) * sum(w)); overlapping taps the
gathered one. Channel counts 1..20 (the columns' tails and 8-byte runs that do not line up), odd input depths (steps
reading past a pixel), SAME and VALID padding with output sizes that cut the last input's taps or start inside the
first's, zero points at both rails, weights all -128, batches, per-tensor and per-channel scales, left shifts and sums
beyond mnh_fq's bound; then the port built as NativeModel builds it and with -DMNH_NO_VNNI (the AVX2 path, on a VNNI
host too) against the portable kernel, called directly."""

from __future__ import annotations

import numpy as np
import pytest
from test_native_ports import assert_ported_same
from test_native_ports_direct import _kernel_library, call_kernel, rails

from micronn.ir import Padding
from micronn.kernels.transpose_conv import transpose_conv_padding
from micronn.testing import T, op_model
from micronn.tflite import schema

SAME, VALID = int(Padding.SAME), int(Padding.VALID)


def _id(case: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in case.items()) or "default"


def transpose_conv(*, n: int = 1, h: int = 4, w: int = 5, cin: int = 8, cout: int = 4, fh: int = 2, fw: int = 2,
                   stride: tuple[int, int] | None = None, pad: int = SAME, out_hw: tuple[int, int] | None = None,
                   act: int = 0, per_channel: bool = True, in_zp: int = 3, out_zp: int = -5, weights: str = "random",
                   w_scale: float = 0.01, out_scale: float = 0.1, bias: int = 3000, seed: int = 0) -> bytes:
    """A one-op model; stride defaults to the filter's size (no overlapping taps)."""
    rng = np.random.default_rng(seed)
    sh, sw = stride or (fh, fw)
    oh, ow = out_hw or (h * sh, w * sw)
    shape = (cout, fh, fw, cin)
    data = np.full(shape, -128) if weights == "min" else rng.integers(-128, 128, shape)
    scales = list(rng.uniform(0.5, 2.0, cout) * w_scale) if per_channel else w_scale
    wt = T(shape, "int8", scales, 0, data=data)
    b = T((cout,), "int32", data=rng.integers(-bias, bias, cout))
    x, y = T((n, h, w, cin), "int8", 0.05, in_zp), T((n, oh, ow, cout), "int8", out_scale, out_zp)
    opts = schema.options("TRANSPOSE_CONV", padding=pad, stride_h=sh, stride_w=sw, fused_activation_function=act)
    return op_model("TRANSPOSE_CONV", [T((4,), "int32", data=[n, oh, ow, cout]), wt, x, b], [y], opts)


@pytest.mark.parametrize("cout", range(1, 21))
def test_filter_is_stride_channels(cout: int) -> None:
    """2x2 at stride 2 (tiny_unet's), every channel count 1..20: 8-column blocks across fy's row runs."""
    assert_ported_same(transpose_conv(cout=cout, cin=3 + cout % 5, seed=cout), wheel=True)


CASES = [
    # filter == stride
    {"cin": 64, "cout": 16, "h": 5, "w": 7},
    {"cin": 32, "cout": 8, "h": 6, "w": 5, "n": 2},
    {"cin": 16, "cout": 4, "h": 7, "w": 9, "n": 3},
    {"cin": 1, "cout": 3, "fh": 3, "fw": 3},
    {"cin": 7, "cout": 5, "fh": 1, "fw": 1},
    {"cin": 17, "cout": 6, "fh": 2, "fw": 3, "h": 3, "w": 4},
    {"cin": 65, "cout": 11, "fh": 4, "fw": 1, "h": 3, "w": 6},
    {"cin": 9, "cout": 2, "fh": 3, "fw": 3, "out_hw": (10, 13)},  # SAME: pad 1 at the top and left, cut
    {"cin": 5, "cout": 8, "fh": 3, "fw": 3, "out_hw": (11, 14)},  # SAME: pad 0, the last input's taps cut
    {"cin": 6, "cout": 7, "pad": VALID},
    {"cin": 6, "cout": 9, "pad": VALID, "out_hw": (7, 9)},  # VALID: the last input's taps partly outside
    {"cin": 6, "cout": 9, "out_hw": (10, 12)},  # an uncovered border: the gathered path
    {"cin": 13, "cout": 12, "in_zp": -128, "out_zp": 127},
    {"cin": 13, "cout": 12, "in_zp": 127, "out_zp": -128, "act": 1},
    {"cin": 19, "cout": 5, "weights": "min", "in_zp": -128, "per_channel": False},
    {"cin": 19, "cout": 5, "weights": "min", "in_zp": 127, "out_zp": 127},
    {"cin": 10, "cout": 16, "per_channel": False, "act": 3},
    {"cin": 8, "cout": 12, "w_scale": 0.02, "out_scale": 0.0004, "bias": 20},  # left shifts
    {"cin": 8, "cout": 12, "w_scale": 0.05, "out_scale": 0.05, "bias": 200},  # shifts of 0
    {"cin": 8, "cout": 12, "w_scale": 1e-7, "out_scale": 1.0, "bias": (1 << 28) + 5},  # beyond mnh_fq's bound
    # overlapping taps: the gathered path
    {"cin": 9, "cout": 4, "fh": 3, "fw": 3, "stride": (2, 2)},
    {"cin": 5, "cout": 11, "fh": 4, "fw": 4, "stride": (2, 2), "pad": VALID},
    {"cin": 3, "cout": 6, "fh": 3, "fw": 2, "stride": (1, 1), "n": 2, "in_zp": -128},
]


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_transpose_conv(case: dict) -> None:
    assert_ported_same(transpose_conv(**case), wheel=True)


# ---- the port's two builds, called directly, against the portable kernel ----

# (n, h, w, in_c, out_c, fh, fw, sh, sw, out_h, out_w, padding)
BUILDS = [(1, 5, 6, 16, 4, 2, 2, 2, 2, 10, 12, SAME), (2, 3, 4, 3, 5, 3, 3, 3, 3, 8, 10, SAME),
          (1, 4, 3, 33, 16, 2, 2, 2, 2, 8, 6, VALID), (1, 2, 7, 7, 3, 1, 4, 1, 4, 2, 27, VALID),
          (1, 4, 4, 64, 20, 2, 2, 2, 2, 7, 7, SAME), (1, 3, 5, 5, 9, 3, 3, 2, 2, 7, 11, SAME),
          (3, 2, 3, 1, 1, 2, 2, 2, 2, 4, 6, SAME), (1, 6, 5, 2, 8, 1, 1, 1, 1, 6, 5, VALID)]


@pytest.mark.parametrize("case", BUILDS, ids=[str(c) for c in BUILDS])
def test_vnni_and_avx2_builds_agree(case: tuple) -> None:
    """transpose_conv.c built as NativeModel builds it and with -DMNH_NO_VNNI give the portable kernel's bytes:
    random data, then the rails (weights all -128, inputs at -128 and 127, the input offset at both ends)."""
    n, h, w, c, oc, fh, fw, sh, sw, oh, ow, padding = case
    pad_t, pad_l = transpose_conv_padding(padding, sh, oh, fh), transpose_conv_padding(padding, sw, ow, fw)
    vnni, avx2 = _kernel_library("transpose_conv"), _kernel_library("transpose_conv", ("MNH_NO_VNNI",))
    rng = np.random.default_rng(sum(case))
    for x, weights, in_off in rails(rng, (n, h, w, c), (oc, fh, fw, c)):
        bias = rng.integers(-30000, 30000, oc).astype(np.int32)
        mult = rng.integers(1 << 30, (1 << 31) - 1, oc).astype(np.int32)
        shift = rng.integers(-16, -8, oc).astype(np.int32)
        scratch = np.zeros(n * oh * ow * oc, np.int32)
        results = []
        for lib, fn in ((vnni, "mn_transpose_conv_s8_portable"), (vnni, "mn_transpose_conv_s8"),
                        (avx2, "mn_transpose_conv_s8")):
            out = np.full(n * oh * ow * oc + 64, 77, np.int8)
            words = [out.ctypes.data, x.ctypes.data, weights.ctypes.data, bias.ctypes.data, mult.ctypes.data,
                     shift.ctypes.data, scratch.ctypes.data, oh, n, h, w, c, oh, ow, oc, fh, fw, sh, sw, pad_t, pad_l,
                     in_off, -3, -128, 127]
            results.append(call_kernel(lib, fn, words, out, x, weights, bias, mult, shift, scratch))
        assert results[1] == results[0], "VNNI build"
        assert results[2] == results[0], "MNH_NO_VNNI build"
