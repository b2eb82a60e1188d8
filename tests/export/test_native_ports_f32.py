"""The float32 host ports' vector math (micronn/micro/kernels/host/mn_host_libm.h): expf, TFLM's sigmoid and tanhf
eight lanes at a time give the scalar functions' bits (mn_libm.h, glibc's algorithms) and glibc's own, on a large
random sample of bit patterns, every branch threshold's neighbours and the special values.

The one-off exhaustive check (all 2^32 inputs, each function: 0 differences from mn_libm.h and from glibc, NaNs
aside for glibc) is ``python tests/export/test_native_ports_f32.py --all`` (minutes per function)."""

from __future__ import annotations

import ctypes
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from micronn.export.native import FLAGS, host_toolchain
from micronn.micro import lower

SOURCE = r"""
#include <math.h>
#include <string.h>
#include "mn_host_libm.h"
#if defined(MNH_AVX2)
#define VEC(name, f)                                                             \
    void vec_##name(const float *x, float *y, long n) {                         \
        for (long i = 0; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, f(_mm256_loadu_ps(x + i))); \
    }
VEC(expf, mnh_expf8)
VEC(sigmoid, mnh_sigmoid8)
VEC(tanhf, mnh_tanhf8)
int has_avx2(void) { return 1; }
#else
int has_avx2(void) { return 0; }
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


def _library() -> ctypes.CDLL:
    src = Path(tempfile.mkdtemp(prefix="micronn-libm-")) / "vector_libm.c"
    src.write_text(SOURCE)
    so = host_toolchain().shared_object([src], [lower.include_dir(), lower.include_dir() / "host"], [*FLAGS, "-lm"])
    lib = ctypes.CDLL(str(so))
    lib.exhaustive.restype = ctypes.c_long
    lib.exhaustive.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.POINTER(ctypes.c_long)]
    return lib


@pytest.fixture(scope="module")
def lib() -> ctypes.CDLL:
    lib = _library()
    if not lib.has_avx2():
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


if __name__ == "__main__" and "--all" in sys.argv:  # the one-off exhaustive check
    library = _library()
    for k, fn in enumerate(FUNCTIONS):
        glibc_differs = ctypes.c_long(0)
        differs = library.exhaustive(k, 0, 1 << 32, ctypes.byref(glibc_differs))
        print(f"{fn}: {differs} of 2^32 inputs differ from mn_libm.h, {glibc_differs.value} from glibc")
