"""The MEAN int8 host port (kernels/host/mean.c): vector row sums (kept channels innermost, 16 at a time; a reduced
contiguous row, 32 at a time) and the vector rescaling give the portable kernel's, the interpreter's and the wheel's
bytes, at lengths around the vector blocks and for rescalings of every kind (left and right shifts, extreme zero
points, the 1/count pre-shift clamped)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.export.test_native_ports_elementwise_s32 import check
from tests.kernels.test_reduce import INT8_PARAMS, reduce_model

# (shape, axes, keep_dims): global averages over rows of kept channels (vector steps and tails), reduced contiguous
# rows (32-value steps and tails), and a mixed walk
CASES = [((1, 3, 3, 1280), [1, 2], False), ((1, 5, 5, 40), [1, 2], True), ((2, 4, 3, 37), [1], False),
         ((3, 100), [1], False), ((2, 5, 70), [2], True), ((2, 3, 33), [0, 2], False), ((1, 2, 2, 7), [1, 2], False)]


@pytest.mark.parametrize("shape,axes,keep", CASES, ids=str)
@pytest.mark.parametrize("qin,qout", INT8_PARAMS, ids=str)
def test_mean_matches_portable_interpreter_and_wheel(shape: tuple, axes: list, keep: bool, qin: tuple,
                                                     qout: tuple) -> None:
    x = np.random.default_rng(sum(shape)).integers(-128, 128, shape, dtype=np.int8)
    x.flat[: min(x.size, 300)] = np.resize(np.array([-128, 127], np.int8), min(x.size, 300))  # the rails
    check(reduce_model("MEAN", "int8", shape, axes, keep, qin, qout), [x])
