"""The float32 ADD / SUB / MUL host port (kernels/host/elementwise_f32.c: eight lanes per contiguous row, one operand
contiguous and the other contiguous or broadcast) gives the portable kernel's bytes, the interpreter's and the
TFLM wheel's: rows shorter and longer than a vector, broadcasts of either operand, the fused activations' clamps,
and specials (NaNs of both signs and payloads meeting each other, infinities, signed zeros, the float extremes)."""

from __future__ import annotations

import numpy as np
import pytest

from micronn.ir import Activation
from micronn.testing import T, op_model
from micronn.tflite import schema
from tests.export.test_native_ports_elementwise_s32 import check

OPS = ["ADD", "SUB", "MUL"]
ACTS = [Activation.NONE, Activation.RELU, Activation.RELU6, Activation.RELU_N1_TO_1]
# (first, second, output): contiguous rows (tails alone and after vectors), the second a scalar, a column, a row;
# the first broadcast
SHAPES = [((n,), (n,), (n,)) for n in (1, 8, 9, 20, 41)] + [
    ((40,), (1,), (40,)), ((3, 19), (3, 1), (3, 19)), ((4, 9), (9,), (4, 9)), ((1,), (17,), (17,)),
    ((2, 1), (2, 17), (2, 17)),
]
SPECIALS = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 3.4e38, -3.4e38, 1e-45, 6.0, -1.0, 1.0],
                    np.float32)


def model(op: str, shapes: tuple, act: int) -> bytes:
    return op_model(op, [T(shapes[0], "float32"), T(shapes[1], "float32")], [T(shapes[2], "float32")],
                    schema.options(op, fused_activation_function=act))


def values(shape: tuple, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.uniform(-8, 8, shape).astype(np.float32)
    return np.where(rng.random(shape) < 0.3, rng.choice(SPECIALS, shape), x).astype(np.float32)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_matches_portable_interpreter_and_wheel(op: str, shapes: tuple) -> None:
    check(model(op, shapes, Activation.NONE), [values(shapes[0], 1), values(shapes[1], 2)])


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("act", ACTS[1:], ids=lambda a: a.name)
def test_activation_clamps(op: str, act: int) -> None:
    shapes = ((5, 11), (5, 11), (5, 11))
    check(model(op, shapes, act), [values(shapes[0], 3), values(shapes[1], 4)])


@pytest.mark.parametrize("op", ["ADD", "MUL"])
def test_two_nans_keep_the_portable_kernels(op: str) -> None:
    """NaNs of different signs and payloads meeting lane by lane: the port, the portable kernel, the interpreter and
    the wheel keep the same one (the first input's or, where the wheel's loops put it first, the second's); whole
    vectors, and 21 = two vectors and a tail of 5."""
    for n in (64, 21):
        a = np.full(n, np.nan, np.float32)
        b = np.full(n, -np.nan, np.float32)
        a.view(np.uint32)[:] |= np.arange(n, dtype=np.uint32)  # distinct payloads
        b.view(np.uint32)[:] |= np.arange(n, dtype=np.uint32) << 8
        for shapes in (((n,), (n,), (n,)), ((n,), (1,), (n,)), ((1,), (n,), (n,))):
            data = model(op, shapes, Activation.NONE)
            xs = [a[: shapes[0][0]].copy(), b[: shapes[1][0]].copy()]
            check(data, xs)
