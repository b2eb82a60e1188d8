"""The FULLY_CONNECTED int8 port's two builds against its portable kernel: as NativeModel builds it (with AVX-512
VNNI, rows of 16 inputs or more as uint8 x + 128 against groups of 4 weights) and with -DMNH_NO_VNNI (int16 pairs
and madd, the AVX2 hosts' path), over batches, depths on and off the groups of 4 and 16, unit counts off the blocks
of 8, per-channel scales and weights of -128 beside negatives (the paired layout's corrections)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from test_native_ports_direct import _kernel_library, call_kernel

from micronn.micro.lower import paired_rows

CASES = list(itertools.product([1, 2, 5, 8], [1, 15, 16, 17, 64, 250], [1, 13, 33, 70]))


@pytest.mark.parametrize("batches,depth,units", CASES, ids=[str(c) for c in CASES])
def test_both_builds_match_the_portable_kernel(batches: int, depth: int, units: int) -> None:
    vnni, avx2 = _kernel_library("fully_connected"), _kernel_library("fully_connected", ("MNH_NO_VNNI",))
    rng = np.random.default_rng(batches * 1000 + depth * 10 + units)
    for per_channel, (lo, hi) in ((0, (-128, 127)), (1, (-20, 90))):
        x = rng.integers(-128, 128, (batches, depth)).astype(np.int8)
        w = rng.integers(-128, 128, (units, depth)).astype(np.int8)
        w[1::2, ::3] = -128  # beside negatives in the rows before: the corrections
        pairs, fix = paired_rows(w)
        bias_full = rng.integers(-40000, 40000, units).astype(np.int32)
        mult = rng.integers(1 << 30, (1 << 31) - 1, units if per_channel else 1).astype(np.int32)
        shift = rng.integers(-12, -5, units if per_channel else 1).astype(np.int32)
        mult, shift = np.resize(mult, units), np.resize(shift, units)
        results = []
        for lib, fn in ((vnni, "mn_fully_connected_s8_portable"), (vnni, "mn_fully_connected_s8"),
                        (avx2, "mn_fully_connected_s8")):
            out = np.full(batches * units + 64, 77, np.int8)
            words = [out.ctypes.data, x.ctypes.data, pairs.data.ctypes.data, bias_full.ctypes.data,
                     mult.ctypes.data, shift.ctypes.data, batches, depth, units, -3, lo, hi, per_channel,
                     fix.data.ctypes.data]
            results.append(call_kernel(lib, fn, words, out, x, pairs.data, fix.data, bias_full, mult, shift))
        assert results[1] == results[0], "VNNI build"
        assert results[2] == results[0], "MNH_NO_VNNI build"
