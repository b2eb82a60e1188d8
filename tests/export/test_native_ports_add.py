"""The ADD/SUB int8 host port (kernels/host/add.c: the operands' rescaled values from per-call-site tables of all
256 bytes, 64 elements at a time with AVX-512 VBMI; where the output's right shift is 16 to 28, the output
rescaling split over the tables too, 128 at a time, blocks with a lane whose carry is unsure recomputed; then 8 at a
time, then the portable code) against the interpreter and the TFLM wheel, over every pair of int8 values, across
quantizations, activations, broadcasts and row lengths off the blocks of 128, 64 and 8."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.export import NativeModel
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
