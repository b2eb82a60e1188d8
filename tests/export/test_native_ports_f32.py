"""The float32 host ports. Their vector math (micronn/micro/kernels/host/mn_host_libm.h): expf, TFLM's sigmoid and
tanhf over arrays, 16 lanes at a time (AVX-512 with FMA) and 8 (the AVX2 build, -mno-avx512f), give the scalar
functions' bits (mn_libm.h, glibc's algorithms) and glibc's own, on a large random sample of bit patterns, every
branch threshold's neighbours and the special values, and write exactly n outputs, in place too. CONV_2D and
DEPTHWISE_CONV_2D in tiles of pixels x channel blocks: awkward widths and depths against the interpreter (and the
wheel), and the output streamed over the input (`stage`) against the portable kernels; sums meeting NaNs of both
signs; LOGISTIC and TANH through the vector math.

The one-off exhaustive check (all 2^32 inputs, each function and width: 0 differences from mn_libm.h and from glibc,
NaNs aside for glibc) is ``python tests/export/test_native_ports_f32.py --all`` (a minute or two per function)."""

from __future__ import annotations

import ctypes
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from test_native_ports import assert_ported_same, conv_f32, depthwise_f32, fully_connected_f32
from test_native_ports_more import lstm_f32

from micronn import Interpreter
from micronn.export import NativeModel
from micronn.export.native import FLAGS, host_toolchain
from micronn.micro import lower
from micronn.testing import T, op_model

SOURCE = r"""
#include <math.h>
#include <string.h>
#include "mn_host_libm.h"
#if defined(MNH_AVX2)
void vec_expf(const float *x, float *y, long n) { mnh_expf_n(y, x, (int)n); }
void vec_sigmoid(const float *x, float *y, long n) { mnh_sigmoid_n(y, x, (int)n); }
void vec_tanhf(const float *x, float *y, long n) { mnh_tanhf_n(y, x, (int)n); }
#if defined(MNH_LIBM16)
int lanes(void) { return 16; }
#else
int lanes(void) { return 8; }
#endif
#else
int lanes(void) { return 0; }
#endif
void ref_expf(const float *x, float *y, long n) { for (long i = 0; i < n; i++) y[i] = mn_libm_expf(x[i]); }
void ref_sigmoid(const float *x, float *y, long n) { for (long i = 0; i < n; i++) y[i] = mn_libm_sigmoid(x[i]); }
void ref_tanhf(const float *x, float *y, long n) { for (long i = 0; i < n; i++) y[i] = mn_libm_tanhf(x[i]); }
void glibc_expf(const float *x, float *y, long n) { for (long i = 0; i < n; i++) y[i] = expf(x[i]); }
void glibc_tanhf(const float *x, float *y, long n) { for (long i = 0; i < n; i++) y[i] = tanhf(x[i]); }
/* every input in [lo, hi) (bit patterns), 2^20 at a time: how many differ from the scalar function, from glibc */
long exhaustive(int which, unsigned long lo, unsigned long hi, long *glibc_differs) {
    static float x[1 << 20], v[1 << 20], s[1 << 20], g[1 << 20];
    long bad = 0;
    *glibc_differs = 0;
    for (unsigned long base = lo; base < hi; base += 1 << 20) {
        for (long i = 0; i < 1 << 20; i++) { unsigned u = (unsigned)(base + i); memcpy(&x[i], &u, 4); }
#if defined(MNH_AVX2)
        if (which == 0) vec_expf(x, v, 1 << 20), ref_expf(x, s, 1 << 20), glibc_expf(x, g, 1 << 20);
        if (which == 1) vec_sigmoid(x, v, 1 << 20), ref_sigmoid(x, s, 1 << 20);
        if (which == 2) vec_tanhf(x, v, 1 << 20), ref_tanhf(x, s, 1 << 20), glibc_tanhf(x, g, 1 << 20);
#endif
        for (long i = 0; i < 1 << 20; i++) {
            bad += memcmp(&v[i], &s[i], 4) != 0;
            if (which != 1 && v[i] == v[i]) *glibc_differs += memcmp(&v[i], &g[i], 4) != 0;
        }
    }
    return bad;
}
"""

FUNCTIONS = ["expf", "sigmoid", "tanhf"]


def _id(case: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in case.items()) or "default"


BUILDS = {"wide": [], "avx2": ["-mno-avx512f"]}


def _library(build: str = "wide") -> ctypes.CDLL:
    src = Path(tempfile.mkdtemp(prefix="micronn-libm-")) / "vector_libm.c"
    src.write_text(SOURCE)
    flags = [*FLAGS, *BUILDS[build], "-lm"]
    so = host_toolchain().shared_object([src], [lower.include_dir(), lower.include_dir() / "host"], flags)
    lib = ctypes.CDLL(str(so))
    lib.exhaustive.restype = ctypes.c_long
    lib.exhaustive.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.POINTER(ctypes.c_long)]
    return lib


@pytest.fixture(scope="module", params=list(BUILDS))
def lib(request: pytest.FixtureRequest) -> ctypes.CDLL:
    lib = _library(request.param)
    if not lib.lanes():
        pytest.skip("the host ports are the portable kernels here (no AVX2)")
    return lib


def _call(lib: ctypes.CDLL, name: str, x: np.ndarray) -> np.ndarray:
    y = np.empty_like(x)
    getattr(lib, name)(x.ctypes.data_as(ctypes.c_void_p), y.ctypes.data_as(ctypes.c_void_p), ctypes.c_long(len(x)))
    return y


# bit patterns where a branch of expf, the sigmoid, tanhf or the expm1f under it changes (and 2x, x/2 of them:
# tanhf passes 2|x| to expm1f)
THRESHOLDS = [0x42B00000, 0x42B17218, 0x42CFF1B4, 0x41850000, 0x41100000, 0x41B00000, 0x24000000, 0x32800000,
              0x33000000, 0x3EB17218, 0x3F851592, 0x4195B844, 0x3F800000, 0x3E800000, 0x42B17180, 0x00800000,
              0x7F7FFFFF, 0x7F800000, 0x7FC00000, 0x7F800001, 0x00000001, 0]


def _sample(seed: int = 0, n: int = 1 << 21) -> np.ndarray:
    rng = np.random.default_rng(seed)
    bits = [rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)]
    # the working range of an LSTM's gates densely: |x| < 32
    bits.append(np.abs(rng.uniform(-32, 32, n).astype(np.float32)).view(np.uint32))
    near = []
    for t in THRESHOLDS:
        for c in (t - 0x800000, t, t + 0x800000):  # halved, doubled (normal floats)
            near.extend(range(max(c - 64, 0), min(c + 64, 0x7FFFFFFF)))
    bits.append(np.array(near, np.uint32))
    both = np.concatenate(bits)
    both = np.concatenate([both, both | np.uint32(0x80000000)])
    return np.resize(both, (len(both) + 7) // 8 * 8).view(np.float32)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_vector_libm_gives_the_scalar_bits(lib: ctypes.CDLL, name: str) -> None:
    x = _sample()
    vec, ref = _call(lib, f"vec_{name}", x), _call(lib, f"ref_{name}", x)
    bad = np.flatnonzero(vec.view(np.uint32) != ref.view(np.uint32))
    assert not len(bad), [(hex(int(x[i:i + 1].view(np.uint32)[0])), vec[i], ref[i]) for i in bad[:5]]
    if name != "sigmoid":  # and glibc's (NaN payloads aside)
        glibc = _call(lib, f"glibc_{name}", x)
        bad = np.flatnonzero((vec.view(np.uint32) != glibc.view(np.uint32)) & ~np.isnan(vec))
        assert not len(bad), [(hex(int(x[i:i + 1].view(np.uint32)[0])), vec[i], glibc[i]) for i in bad[:5]]


@pytest.mark.parametrize("name", FUNCTIONS)
def test_vector_libm_writes_n_outputs(lib: ctypes.CDLL, name: str) -> None:
    """Every length up to three vectors: the first n outputs are the scalar function's, the rest untouched; and in
    place (the output over the input), as LOGISTIC and TANH may run."""
    x = _sample(seed=1, n=64)[:48].copy()
    x[::3] = 0.0  # tanhf's scalar lanes beside vector ones
    ref = _call(lib, f"ref_{name}", x)
    for n in range(49):
        y = np.full(48, np.float32(7.0))
        getattr(lib, f"vec_{name}")(x.ctypes.data_as(ctypes.c_void_p), y.ctypes.data_as(ctypes.c_void_p), n)
        assert y[:n].tobytes() == ref[:n].tobytes() and (y[n:] == 7.0).all(), n
        z = x.copy()
        getattr(lib, f"vec_{name}")(z.ctypes.data_as(ctypes.c_void_p), z.ctypes.data_as(ctypes.c_void_p), n)
        assert z[:n].tobytes() == ref[:n].tobytes() and z[n:].tobytes() == x[n:].tobytes(), n


if __name__ == "__main__" and "--all" in sys.argv:  # the one-off exhaustive check
    for build in BUILDS:
        library = _library(build)
        for k, fn in enumerate(FUNCTIONS):
            glibc_differs = ctypes.c_long(0)
            differs = library.exhaustive(k, 0, 1 << 32, ctypes.byref(glibc_differs))
            print(f"{fn}, {library.lanes()} lanes: {differs} of 2^32 inputs differ from mn_libm.h, "
                  f"{glibc_differs.value} from glibc")


# ---- CONV_2D and DEPTHWISE_CONV_2D float32: tiles of pixels x channel blocks -------------------------------------

CONV_TILES = [  # output widths around the tiles (8, 6, 4, 3 pixels and halves), 1 to 7 blocks of channels
    {"cin": 1, "cout": 8, "h": 10, "w": 28},
    {"cin": 1, "cout": 8, "h": 5, "w": 13, "pad": 0, "fh": 5, "fw": 5},
    {"cin": 8, "cout": 16, "fh": 1, "fw": 1, "h": 13, "w": 13},
    {"cin": 3, "cout": 24, "w": 11, "pad": 0},
    {"cin": 4, "cout": 33, "w": 12, "stride": (2, 2), "pad": 0},
    {"cin": 2, "cout": 56, "w": 9, "dil": (1, 2)},
    {"cin": 5, "cout": 7, "w": 3, "fh": 3, "fw": 3, "pad": 0},  # one column: every pixel at a border
    {"cin": 6, "cout": 17, "w": 20, "fw": 7, "pad": 0, "stride": (1, 3)},
    {"cin": 9, "cout": 40, "h": 4, "w": 14, "n": 2, "act": 3},
]

DEPTHWISE_TILES = [
    {"c": 8, "h": 13, "w": 13, "pad": 0},
    {"c": 8, "w": 21, "act": 1},
    {"c": 16, "w": 19, "pad": 0, "stride": (1, 2)},
    {"c": 27, "w": 10, "pad": 0, "fh": 5, "fw": 5},
    {"c": 40, "w": 7, "n": 2},
    {"c": 5, "w": 12, "pad": 0},
]


@pytest.mark.parametrize("case", CONV_TILES, ids=_id)
def test_conv_2d_f32_tiles(case: dict) -> None:
    assert_ported_same(conv_f32(**case))


@pytest.mark.parametrize("case", DEPTHWISE_TILES, ids=_id)
def test_depthwise_conv_2d_f32_tiles(case: dict) -> None:
    assert_ported_same(depthwise_f32(**case))


def test_tiles_the_wheel_agrees() -> None:
    assert_ported_same(conv_f32(cin=3, cout=24, w=19, pad=0, act=1), wheel=True)
    assert_ported_same(depthwise_f32(c=16, w=19, pad=0, act=1), wheel=True)


# the ports called directly, the output streamed over the input (`stage`), against the portable kernels


def _kernel_library(name: str) -> ctypes.CDLL:
    """The host port of kernels/NAME.c with its portable kernel beside it (NAME_portable), as NativeModel builds
    them."""
    d = Path(tempfile.mkdtemp(prefix="micronn-port-"))
    (d / f"{name}.c").write_text((lower.include_dir() / "host" / f"{name}.c").read_text())
    (d / f"{name}.portable.inc").write_text((lower.include_dir() / f"{name}.c").read_text())
    so = host_toolchain().shared_object([d / f"{name}.c"], [d, lower.include_dir(), lower.include_dir() / "host"],
                                        FLAGS)
    return ctypes.CDLL(str(so))


def _f32_word(v: float) -> int:
    return int(np.array(v, np.float32).view(np.uint32))


@pytest.mark.parametrize("depthwise", [False, True], ids=["conv", "depthwise"])
@pytest.mark.parametrize("c,pad,k", [(8, 0, 3), (16, 1, 3), (24, 0, 1), (40, 1, 3), (11, 0, 3), (33, 1, 5)])
def test_streamed_output_over_the_input(depthwise: bool, c: int, pad: int, k: int) -> None:
    """`stage` (output over the input, `gap` pixels behind it): each tile's pixels are read before any is stored."""
    name = "depthwise_conv_2d_f32" if depthwise else "conv_2d_f32"
    lib, rng, keep = _kernel_library(name), np.random.default_rng(c + k), []
    h, w = 6, 17
    pt = (k - 1) // 2 if pad == 0 else 0  # pad 0: SAME
    oh, ow = (h, w) if pad == 0 else (h - k + 1, w - k + 1)
    gap = (w + 1) * pt + 1  # pixels: the output never reaches an input still to read
    x = rng.uniform(-2, 2, (h, w, c)).astype(np.float32)
    weights = rng.uniform(-1, 1, (1, k, k, c) if depthwise else (c, k, k, c)).astype(np.float32)
    bias = rng.uniform(-1, 1, c).astype(np.float32)
    results = []
    for fn in (f"mn_{name}_portable", f"mn_{name}"):
        arena = np.zeros((gap + h * w) * c + 64, np.float32)
        arena[gap * c:(gap + h * w) * c] = x.ravel()
        ptr = arena.ctypes.data
        shape = [1, k, k] if depthwise else [c, k, k, c]  # MULT, F_H, F_W or OUT_C, F_H, F_W, F_C
        words = [ptr, ptr + gap * c * 4, weights.ctypes.data, bias.ctypes.data, 1, h, w, c, oh, ow, *shape,
                 1, 1, 1, 1, pt, pt, _f32_word(-1.5), _f32_word(1.5), 1]
        args = np.array(words, np.uint64)
        keep.append((args, arena))  # the ports cache their packed weights by the argument array's address
        getattr(lib, fn)(args.ctypes.data_as(ctypes.c_void_p))
        results.append(arena[:oh * ow * c].copy())
    assert results[0].tobytes() == results[1].tobytes()


@pytest.mark.parametrize("model", ["conv", "depthwise", "conv_1x1", "fully_connected", "lstm"])
def test_sums_of_nans_keep_the_portable_kernels_nan(model: str) -> None:
    """Inputs dense with NaNs of both signs: where two meet in a sum, the port keeps the portable kernel's (the
    total's, then the input's), whatever order the compiler gave the vector operations."""
    data = {"conv": lambda: conv_f32(cin=3, cout=24, w=19, pad=1),
            "depthwise": lambda: depthwise_f32(c=16, w=19, pad=0),
            "conv_1x1": lambda: conv_f32(cin=8, cout=16, fh=1, fw=1, w=13),
            "fully_connected": lambda: fully_connected_f32(batches=3, depth=40, units=37),
            "lstm": lambda: lstm_f32(steps=6, n_input=9, units=20, batch=2)}[model]()
    it = Interpreter(data)
    rng = np.random.default_rng(1)
    shape = it.subgraph.tensors[it.subgraph.inputs[0]].shape
    x = rng.uniform(-2, 2, (4, *shape)).astype(np.float32)
    nans = rng.random(x.shape) < 0.3
    x[nans] = np.where(rng.random(int(nans.sum())) < 0.5, np.float32(np.nan), -np.float32(np.nan))
    got, done, _ = NativeModel(data).run_chunk([x])
    want, _, _ = NativeModel(data, host_ports=False).run_chunk([x])
    assert done == 4
    assert got[0].tobytes() == want[0].tobytes()


# ---- LOGISTIC and TANH float32 (host/elementwise_f32.c) ------------------------------------------------------------

@pytest.mark.parametrize("op", ["LOGISTIC", "TANH"])
@pytest.mark.parametrize("shape", [(1, 80), (3, 7), (2, 5, 9, 4), (1, 1)])
def test_logistic_tanh_f32(op: str, shape: tuple[int, ...]) -> None:
    """Vectors of 8 and the scalar tail: the interpreter's bytes (specials included), the wheel's on a plain one."""
    data = op_model(op, [T(shape, "float32")], [T(shape, "float32")])
    assert_ported_same(data, wheel=shape == (1, 80))
    rng = np.random.default_rng(3)  # the gates' range densely, and the branch thresholds' neighbours
    x = np.concatenate([rng.uniform(-30, 30, 4096).astype(np.float32), _sample(n=1 << 12)[:4096]])
    x = np.resize(x, (len(x) // int(np.prod(shape)), *shape))
    got, _, _ = NativeModel(data).run_chunk([x])
    want, _, _ = NativeModel(data, host_ports=False).run_chunk([x])
    assert got[0].tobytes() == want[0].tobytes()


# ---- MAX_POOL_2D float32 without padding, whole vectors of channels (host/pool_2d_f32.c's max_pool_full) ----------

FULL_MAX_POOL = [
    {"c": 8, "h": 26, "w": 26},  # float_cnn's
    {"c": 16, "h": 9, "w": 11, "act": 1},  # odd sizes: the last row and column left out
    {"c": 24, "h": 7, "w": 8, "fh": 3, "fw": 2, "stride": (2, 1), "act": 3},
    {"c": 8, "n": 2, "h": 5, "w": 6, "fh": 1, "fw": 3, "stride": (1, 3)},
    {"c": 8, "h": 6, "w": 6, "fh": 6, "fw": 6, "stride": (1, 1)},  # one window: the whole image
]


@pytest.mark.parametrize("case", FULL_MAX_POOL, ids=_id)
def test_max_pool_f32_full_windows(case: dict) -> None:
    from test_native_ports_more import pool

    assert_ported_same(pool(kind="float32", **case))


def test_max_pool_f32_full_windows_the_wheel_agrees() -> None:
    from test_native_ports_more import pool

    assert_ported_same(pool(kind="float32", c=8, h=26, w=26, act=1), wheel=True)


@pytest.mark.parametrize("case", FULL_MAX_POOL[:3], ids=_id)
def test_max_pool_f32_specials(case: dict) -> None:
    """NaNs of both signs, zeros of both signs, infinities and the lowest float: the port keeps the portable
    kernel's maximum (the first of equal zeros, never a NaN) and clamp."""
    from test_native_ports_more import pool

    data = pool(kind="float32", **case)
    shape = Interpreter(data).subgraph.tensors[Interpreter(data).subgraph.inputs[0]].shape
    rng = np.random.default_rng(2)
    specials = np.array([np.nan, -np.nan, 0.0, -0.0, np.inf, -np.inf, np.finfo(np.float32).min, 1.0, -1.0],
                        np.float32)
    x = specials[rng.integers(0, len(specials), (6, *shape))]
    x[0] = -0.0  # every window: zeros only
    x[1] = np.nan
    got, done, _ = NativeModel(data).run_chunk([x])
    want, _, _ = NativeModel(data, host_ports=False).run_chunk([x])
    assert done == 6
    assert got[0].tobytes() == want[0].tobytes()


@pytest.mark.parametrize("c,k,s", [(8, 2, 2), (8, 3, 1), (8, 2, 1), (16, 2, 2)])
def test_max_pool_f32_streamed_over_the_input(c: int, k: int, s: int) -> None:
    """`stage` with the output laid on the input (float_cnn's max pool): each pixel's taps read before it is
    stored; 16 channels (stage, more than one vector) take the general loop."""
    lib, rng = _kernel_library("pool_2d_f32"), np.random.default_rng(c + k)
    h, w = 9, 12
    oh, ow = (h - k) // s + 1, (w - k) // s + 1
    x = rng.uniform(-2, 2, (h, w, c)).astype(np.float32)
    x[rng.random(x.shape) < 0.1] = np.nan
    results = []
    for fn in ("mn_max_pool_2d_f32_portable", "mn_max_pool_2d_f32"):
        arena = np.zeros(h * w * c + 64, np.float32)
        arena[:h * w * c] = x.ravel()
        ptr = arena.ctypes.data
        words = [ptr, ptr, 1, h, w, c, oh, ow, k, k, s, s, 0, 0, _f32_word(-1.5), _f32_word(1.5), 1]
        args = np.array(words, np.uint64)
        getattr(lib, fn)(args.ctypes.data_as(ctypes.c_void_p))
        results.append(arena[:oh * ow * c].copy())
    assert results[0].tobytes() == results[1].tobytes()


# ---- DEPTHWISE_CONV_2D float32 over a zero-padded copy of the input (host/depthwise_conv_2d_f32.c's fdw_padded) ----


def _depthwise_weights(kind: str, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    wt = rng.uniform(-1, 1, shape).astype(np.float32)
    flat = wt.reshape(-1)
    flat[::5] = 0.0
    flat[1::7] = -0.0
    if kind == "inf":  # not finite: 0 * inf would be a NaN, so the port runs unpadded
        flat[3] = np.inf
    elif kind == "nan":
        flat[len(flat) // 2] = -np.nan
    return wt


@pytest.mark.parametrize("weights", ["finite", "inf", "nan"])
@pytest.mark.parametrize("case", [
    {"c": 8, "h": 13, "w": 13},  # float_cnn's: SAME, 3x3
    {"c": 16, "h": 6, "w": 9, "stride": (2, 2), "act": 1},
    {"c": 24, "h": 5, "w": 11, "fh": 5, "fw": 3, "act": 3},
    {"c": 11, "h": 4, "w": 7, "n": 2},  # a channel tail
    {"c": 8, "h": 2, "w": 3, "fh": 5, "fw": 5, "bias": False},  # windows wider than the image
], ids=_id)
def test_depthwise_f32_padded_copy(case: dict, weights: str) -> None:
    """SAME padding with inputs and weights holding signed zeros, NaNs of both signs and infinities, and a sample
    of -0 only (every border sum: products of -0 from +0): the padded copy gives the portable kernel's bytes and
    the interpreter's; weights that are not all finite take the unpadded path."""
    from micronn.kernels._conv_util import compute_out_size
    from micronn.tflite import schema

    n, h, w, c = case.get("n", 1), case["h"], case["w"], case["c"]
    fh, fw, stride = case.get("fh", 3), case.get("fw", 3), case.get("stride", (1, 1))
    rng = np.random.default_rng(c + h)
    oh, ow = compute_out_size(0, h, fh, stride[0], 1), compute_out_size(0, w, fw, stride[1], 1)
    wt = T((1, fh, fw, c), "float32", data=_depthwise_weights(weights, (1, fh, fw, c), rng))
    b = T((c,), "float32", data=rng.uniform(-1, 1, c).astype(np.float32)) if case.get("bias", True) else None
    opts = schema.options("DEPTHWISE_CONV_2D", padding=0, stride_h=stride[0], stride_w=stride[1],
                          fused_activation_function=case.get("act", 0), depth_multiplier=1)
    data = op_model("DEPTHWISE_CONV_2D", [T((n, h, w, c), "float32"), wt, b], [T((n, oh, ow, c), "float32")], opts)
    specials = np.array([np.nan, -np.nan, 0.0, -0.0, np.inf, -np.inf, 1.5, -2.0, 3e38, -3e38], np.float32)
    x = rng.uniform(-2, 2, (5, n, h, w, c)).astype(np.float32)
    x[0] = -0.0
    x[1] = specials[rng.integers(0, len(specials), x[1].shape)]
    x[2][rng.random(x[2].shape) < 0.2] = np.nan
    x[3] = np.where(rng.random(x[3].shape) < 0.5, np.float32(-0.0), np.float32(0.0))
    got, done, _ = NativeModel(data).run_chunk([x])
    want, _, _ = NativeModel(data, host_ports=False).run_chunk([x])
    assert done == 5
    assert got[0].tobytes() == want[0].tobytes()
    it = Interpreter(data)
    for k in range(5):
        it.set_input(x[k], 0)
        it.invoke()
        assert got[0][k].tobytes() == it.get_output(0).tobytes(), k


def test_depthwise_f32_padded_copy_the_wheel_agrees() -> None:
    assert_ported_same(depthwise_f32(c=8, h=13, w=13, pad=0), wheel=True)
    assert_ported_same(depthwise_f32(c=16, h=7, w=10, pad=0, stride=(2, 2), act=1), wheel=True)
