"""The ADD/SUB int8 host port (kernels/host/add.c: the operands' rescaled values from per-call-site tables of all
256 bytes, 64 elements at a time with AVX-512 VBMI; where the output's right shift is 16 to 28, the output
rescaling split over the tables too, 128 at a time, blocks with a lane whose carry is unsure recomputed; then 8 at a
time, then the portable code) against the interpreter and the TFLM wheel, over every pair of int8 values, across
quantizations, activations, broadcasts and row lengths off the blocks of 128, 64 and 8; and, against the portable
rows alone, 2000 random call sites over every pair."""

from __future__ import annotations

import ctypes
import tempfile
from pathlib import Path

import numpy as np
import pytest

from micronn import Interpreter
from micronn.export import NativeModel
from micronn.export.native import FLAGS, host_toolchain
from micronn.micro import lower
from micronn.testing import _Tflm
from tests.export.test_native_ports import add


def _grid(shape_a: tuple[int, ...], shape_b: tuple[int, ...], samples: int = 3) -> list[np.ndarray]:
    """Samples whose operands run through every int8 pair (the pair of flat index k of the broadcast output is
    (k // 256, k % 256), shifted by the sample so that each pair meets other lanes and blocks), a broadcast operand
    taking its values from its own flat index."""
    out = np.broadcast_shapes(shape_a, shape_b)
    k = np.arange(int(np.prod(out))).reshape(out)
    xs = []
    for shape, pick in ((shape_a, lambda v: v // 256), (shape_b, lambda v: v % 256)):
        rows = []
        for s in range(samples):
            v = pick(k + 37 * s) if shape == out else (np.arange(int(np.prod(shape))).reshape(shape) * 7 + 11 * s)
            rows.append(((v % 256) - 128).astype(np.int8).reshape(shape))
        xs.append(np.stack(rows))
    return xs


def assert_same_on(data: bytes, xs: list[np.ndarray]) -> None:
    """NativeModel's bytes equal the interpreter's and the TFLM wheel's on each sample of xs."""
    native, it, ref = NativeModel(data), Interpreter(data), _Tflm(data)
    n = len(xs[0])
    outs, done, status = native.run_chunk(xs)
    assert (done, status) == (n, 0)
    for k in range(n):
        sample = [x[k] for x in xs]
        for i, x in enumerate(sample):
            it.set_input(x, i)
        it.invoke()
        want = it.get_output(0).tobytes()
        assert outs[0][k].tobytes() == want, k
        assert outs[0][k].tobytes() == ref.run(sample)[0].tobytes(), k


QUANT = [
    {},  # the defaults: multipliers near 2^30
    {"scales": (0.02, 0.02, 10.0)},  # an output multiplier far below one: most sums round to the zero point
    {"scales": (0.5, 0.5, 0.002)},  # outputs at the rails
    {"scales": (1e-4, 0.5, 0.01)},  # the first operand's multiplier tiny
    {"scales": (0.5, 3e-4, 0.7)},  # the second operand's multiplier tiny
    {"zps": (-128, 127, -128)},
    {"zps": (127, -128, 127), "scales": (0.01, 0.013, 0.02)},
    {"act": 1, "zps": (0, 5, -128)},  # RELU
    {"act": 2, "scales": (0.004, 0.006, 0.008)},  # RELU_N1_TO_1
    {"act": 3, "scales": (0.05, 0.04, 0.03), "zps": (-10, 20, -128)},  # RELU6
]


@pytest.mark.parametrize("op", ["ADD", "SUB"])
@pytest.mark.parametrize("case", QUANT, ids=str)
def test_every_pair(op: str, case: dict) -> None:
    shape = (1, 256, 256)
    assert_same_on(add(a=shape, b=shape, op=op, **case), _grid(shape, shape))


SHAPES = [
    ((1, 255, 257), (1, 255, 257)),  # 65535 elements: a last block of 63
    ((1, 3, 1000), (1, 3, 1000)),
    ((7,), (7,)),  # below 8: the portable code
    ((1, 77), (1, 77)),  # one block of 64, one of 8, a tail of 5
    ((1, 4, 1, 200), (1, 4, 3, 200)),  # broadcast outside contiguous rows (the vector path per row)
    ((2, 3, 130), (1, 1, 130)),
    ((1, 5, 7, 9), (1, 1, 1, 9)),
    ((1, 64, 300), (1, 64, 1)),  # a broadcast operand along the rows: the portable rows
    ((1, 1, 1), (1, 64, 129)),
]


@pytest.mark.parametrize("op", ["ADD", "SUB"])
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_shapes(op: str, shapes: tuple[tuple[int, ...], tuple[int, ...]]) -> None:
    a, b = shapes
    case = {"scales": (0.03, 0.05, 0.04), "zps": (-3, 9, 1)}
    assert_same_on(add(a=a, b=b, op=op, **case), _grid(a, b))


ADD_FUZZ = r"""
#include <string.h>
#include "add.c"
/* `sets` random call sites (operand offsets, multipliers and shifts; output multipliers across [2^30, 2^31) and
 * 0, 1 << 30 and small ones, right shifts 14..30 (the carry form's 16..28 and beyond), zero points, clamps; ADD and
 * SUB), each over every pair of int8 values: the port's bytes against the portable rows'. Returns the differing
 * sets; *carry counts the sets the carry form took (0 without AVX-512 VBMI). */
static uint64_t fuzz_state;
static uint64_t fuzz_next(void) {
    fuzz_state ^= fuzz_state << 13, fuzz_state ^= fuzz_state >> 7, fuzz_state ^= fuzz_state << 17;
    return fuzz_state;
}

long add_fuzz(int sets, uint64_t seed, long *carry) {
    enum { N = 65536 };
    static int8_t a[N], b[N], got[N], want[N];
    for (int i = 0; i < N; i++) a[i] = (int8_t)(i >> 8), b[i] = (int8_t)i;
    fuzz_state = seed | 1;
    long bad = 0;
    *carry = 0;
    for (int s = 0; s < sets; s++) {
        mn_word *args = (mn_word *)calloc(GEO, sizeof(mn_word)); /* one call site each: the tables are cached by it */
        if (!args) return -1;
        args[IN1] = (mn_word)a, args[IN2] = (mn_word)b, args[LEFT_SHIFT] = 20;
        args[OFF1] = (mn_word)(intptr_t)((int)(fuzz_next() % 256) - 128);
        args[OFF2] = (mn_word)(intptr_t)((int)(fuzz_next() % 256) - 128);
        args[MULT1] = (mn_word)((1u << 30) + fuzz_next() % (1u << 30));
        args[MULT2] = (mn_word)((1u << 30) + fuzz_next() % (1u << 30));
        args[SHIFT1] = (mn_word)(intptr_t) - (int)(fuzz_next() % 4);
        args[SHIFT2] = (mn_word)(intptr_t) - (int)(fuzz_next() % 4);
        uint32_t mo = (1u << 30) + (uint32_t)(fuzz_next() % (1u << 30));
        if (fuzz_next() % 8 == 0)
            mo = fuzz_next() % 3 == 0 ? 0 : fuzz_next() % 2 ? 1u << 30 : (uint32_t)(fuzz_next() % 100000);
        args[MULT_OUT] = (mn_word)mo, args[SHIFT_OUT] = (mn_word)(intptr_t) - (int)(14 + fuzz_next() % 17);
        const int zp = (int)(fuzz_next() % 256) - 128, lo = fuzz_next() % 3 ? -128 : zp;
        const int hi = fuzz_next() % 4 ? 127 : lo + (int)(fuzz_next() % (unsigned)(128 - lo));
        args[OUT_ZP] = (mn_word)(intptr_t)zp, args[ACT_MIN] = (mn_word)(intptr_t)lo;
        args[ACT_MAX] = (mn_word)(intptr_t)hi;
        const int subtract = (int)(fuzz_next() % 2);
        args[OUT] = (mn_word)got;
        fast_row((uint8_t *)got, (const uint8_t *)a, (const uint8_t *)b, N, 1, 1, 1, args, subtract);
        add_row((uint8_t *)want, (const uint8_t *)a, (const uint8_t *)b, N, 1, 1, 1, args, subtract);
        bad += memcmp(got, want, N) != 0;
#if defined(__AVX512VBMI__) && defined(__AVX512BW__)
        const add_tables *t = operand_tables(args, subtract);
        *carry += t && t->window;
#endif
    }
    return bad;
}

int add_fuzz_carry_form(void) { /* whether this build has the carry form */
#if defined(__AVX512VBMI__) && defined(__AVX512BW__)
    return 1;
#else
    return 0;
#endif
}
"""


def test_random_call_sites_match_the_portable_rows() -> None:
    """2000 random call sites (see ADD_FUZZ) over every int8 pair: the port's bytes are the portable kernel's, and
    most sites with AVX-512 VBMI take the carry form (its right shifts 16..28 of 14..30)."""
    d = Path(tempfile.mkdtemp(prefix="micronn-add-fuzz-"))
    (d / "add.c").write_text((lower.include_dir() / "host" / "add.c").read_text())
    (d / "add.portable.inc").write_text((lower.include_dir() / "add.c").read_text())
    (d / "fuzz.c").write_text(ADD_FUZZ)
    so = host_toolchain().shared_object([d / "fuzz.c"], [d, lower.include_dir(), lower.include_dir() / "host"], FLAGS)
    lib = ctypes.CDLL(str(so))
    lib.add_fuzz.restype = ctypes.c_long
    lib.add_fuzz.argtypes = [ctypes.c_int, ctypes.c_uint64, ctypes.POINTER(ctypes.c_long)]
    carry = ctypes.c_long()
    assert lib.add_fuzz(2000, 20261129, ctypes.byref(carry)) == 0
    if lib.add_fuzz_carry_form():
        assert carry.value > 1000
