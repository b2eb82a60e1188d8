"""The int32 elementwise host ports (ADD, SUB, MUL, DIV, MINIMUM, MAXIMUM: eight lanes per contiguous row, the second
operand contiguous or broadcast) give the portable kernels' bytes, the interpreter's and the TFLM wheel's: rows
shorter and longer than a vector, broadcasts that make the second operand a scalar, a column or a repeated row, the
extremes of int32 (wrapping sums and products, INT32_MIN / -1) and the fused activations' clamps."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import InvokeError
from micronn.export import NativeModel
from micronn.ir import Activation
from micronn.testing import Graph, Op, T, _Tflm, graph_model, op_model
from micronn.tflite import schema

OPS = ["ADD", "SUB", "MUL", "DIV", "MINIMUM", "MAXIMUM"]
ACTIVATED = {"ADD", "SUB", "MUL", "DIV"}
EDGES = np.array([-2**31, -2**31 + 1, -65536, -46341, -1, 0, 1, 2, 46341, 65536, 2**31 - 1], np.int32)
# (first, second, output): contiguous rows of 1 to 41 elements (tails alone and after vectors), a scalar, a column
# (the second operand broadcast along the row), a repeated row, and the first operand broadcast
SHAPES = [((n,), (n,), (n,)) for n in (1, 9, 17, 41)] + [
    ((40,), (1,), (40,)), ((3, 19), (3, 1), (3, 19)), ((4, 9), (9,), (4, 9)), ((2, 1), (2, 17), (2, 17)),
]


def model(op: str, shapes: tuple, act: int = Activation.NONE, const: np.ndarray | None = None) -> bytes:
    a, o = T(shapes[0], "int32"), T(shapes[2], "int32")
    b = T(shapes[1], "int32", data=const)
    opts = schema.options(op, fused_activation_function=act) if op in ACTIVATED else None
    return op_model(op, [a, b], [o], opts)


def values(shape: tuple, seed: int, divisor: bool = False) -> np.ndarray:
    """Random int32 over the whole range mixed with the extremes; no 0 or -1 where ``divisor`` (the wheel fails on a
    zero divisor and crashes on INT32_MIN / -1)."""
    rng = np.random.default_rng(seed)
    x = np.where(rng.random(shape) < 0.3, rng.choice(EDGES, shape),
                 rng.integers(-2**31, 2**31, shape, dtype=np.int64)).astype(np.int32)
    if divisor:
        x[(x == 0) | (x == -1)] = 3
    return x


def check(data: bytes, xs: list[np.ndarray], *, wheel: bool = True) -> None:
    ported, portable, it = NativeModel(data), NativeModel(data, host_ports=False), Interpreter(data)
    got = ported.run(xs)[0]
    assert got.tobytes() == portable.run(xs)[0].tobytes()
    if wheel:
        for i, x in enumerate(xs):
            it.set_input(x, i)
        it.invoke()
        assert got.tobytes() == it.get_output(0).tobytes()
        assert got.tobytes() == _Tflm(data).run(xs)[0].tobytes()


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_matches_portable_interpreter_and_wheel(op: str, shapes: tuple) -> None:
    check(model(op, shapes), [values(shapes[0], 1), values(shapes[1], 2, divisor=op == "DIV")])


@pytest.mark.parametrize("op", sorted(ACTIVATED))
@pytest.mark.parametrize("act", [Activation.RELU, Activation.RELU_N1_TO_1, Activation.RELU6], ids=lambda a: a.name)
def test_activation_clamps(op: str, act: Activation) -> None:
    shapes = ((5, 11), (5, 11), (5, 11))
    a, b = values(shapes[0], 3), values(shapes[1], 4, divisor=op == "DIV")
    a[0, :] = np.arange(-5, 6)  # small values, inside and outside the clamps
    b[0, :] = 1 if op in ("MUL", "DIV") else 0
    check(model(op, shapes, act), [a, b])


@pytest.mark.parametrize("op", OPS)
def test_constant_scalar_operand(op: str) -> None:
    check(model(op, ((33,), (1,), (33,)), const=np.array([-7], np.int32)), [values((33,), 5)])


def divisors() -> list[int]:
    """Scalar divisors for DIV's magic-number path: small ones of both signs, powers of two and their neighbours,
    the extremes of int32 and random ones of every magnitude (never 0)."""
    rng = np.random.default_rng(11)
    ds = [d for k in range(1, 8) for d in (k, -k)]
    ds += [s * ((1 << b) + e) for b in range(1, 31) for e in (-1, 0, 1) for s in (1, -1)]
    ds += [-2**31, 2**31 - 1, -2**31 + 1, 46341, -46341, 641, 6700417, 10**9 + 7]
    ds += [int(v) >> int(k) or 5 for v, k in zip(rng.integers(-2**31, 2**31, 40), rng.integers(0, 31, 40))]
    return ds


def dividends(d: int, n: int, seed: int) -> np.ndarray:
    """The extremes, 0 and +-1, multiples of d and their neighbours (where truncation changes), and random values."""
    rng = np.random.default_rng(seed)
    k = rng.integers(-2**31 // abs(d), 2**31 // abs(d) + 1, n)
    near = np.clip(k * d + rng.integers(-1, 2, n), -2**31, 2**31 - 1)
    x = np.where(rng.random(n) < 0.5, near, rng.integers(-2**31, 2**31, n))
    x[:8] = [-2**31, -2**31 + 1, 2**31 - 1, 0, 1, -1, d, -d if d != -2**31 else 0]
    return rng.permutation(x).astype(np.int32)  # the extremes in vector lanes and the scalar tail


@pytest.mark.parametrize("n", [8, 43])
def test_div_by_a_scalar_divisor_input(n: int) -> None:
    """DIV by one broadcast divisor (the host port's magic-number multiply, recomputed from the divisor's value on
    every invoke: here a model input that changes between runs of one library) gives C's truncating quotient, the
    portable kernel's, the interpreter's and the wheel's bytes, for every kind of divisor, and under a clamp."""
    for act in (Activation.NONE, Activation.RELU6):
        data = model("DIV", ((n,), (1,), (n,)), act)
        ported, portable, it = NativeModel(data), NativeModel(data, host_ports=False), Interpreter(data)
        wheel = _Tflm(data)
        for i, d in enumerate(divisors()):
            a = dividends(d, n, i)
            if d == -1:
                a[a == -2**31] = 7  # INT32_MIN / -1 fails the invoke (test_div_special_divisors...)
            xs = [a, np.array([d], np.int32)]
            got = ported.run(xs)[0]
            want = np.trunc(a.astype(np.float64) / d).astype(np.int64)
            if act == Activation.RELU6:
                want = np.clip(want, 0, 6)
            assert got.tobytes() == want.astype(np.int32).tobytes(), d
            assert got.tobytes() == portable.run(xs)[0].tobytes(), d
            it.set_input(xs[0], 0)
            it.set_input(xs[1], 1)
            it.invoke()
            assert got.tobytes() == it.get_output(0).tobytes(), d
            assert got.tobytes() == wheel.run(xs)[0].tobytes(), d


def test_div_special_divisors_as_the_device_writes_them() -> None:
    """A zero divisor gives 0 and INT32_MIN / -1 the wrapped INT32_MIN in every lane position, and the invoke
    reports the failure (the wheel refuses the first and crashes on the second, so the bytes left in the output
    compare with the portable kernel's only)."""
    a = np.tile(np.array([-2**31, 5, -2**31, 0, 2**31 - 1, -2**31, 7, -9], np.int32), 5)
    b = np.tile(np.array([-1, 0, 0, 0, -1, 1, -1, 2], np.int32), 5)
    cases = [(model("DIV", ((41,), (41,), (41,))), [np.resize(np.roll(a, k), 41), np.resize(np.roll(b, k), 41)])
             for k in range(8)]  # every lane position of a vector and of the scalar tail
    cases += [(model("DIV", ((40,), (1,), (40,))), [a, np.array([d], np.int32)]) for d in (0, -1)]
    for data, xs in cases:
        left = []
        for native in (NativeModel(data), NativeModel(data, host_ports=False)):
            with pytest.raises(InvokeError, match="DIV divides by zero"):
                native.run(xs)
            left.append(native.outputs[0].tobytes())
        assert left[0] == left[1]


def test_in_place_outputs() -> None:
    """A chain whose outputs the planner places over dying inputs of the same shape still gives the wheel's bytes."""
    g = Graph({"x": T((2, 21), "int32"), "y": T((2, 21), "int32"), "s": T((2, 21), "int32"),
               "m": T((2, 21), "int32"), "z": T((2, 21), "int32")},
              [Op("ADD", ["x", "y"], ["s"], schema.options("ADD")), Op("MUL", ["s", "y"], ["m"], schema.options("MUL")),
               Op("MAXIMUM", ["m", "x"], ["z"])], ["x", "y"], ["z"])
    check(graph_model(g), [values((2, 21), 6), values((2, 21), 7)])


def test_failures_where_tflm_fails_the_invoke() -> None:
    """An int32 DIV by zero or of INT32_MIN by -1 (vector lanes and the scalar tail) and a SignalFilterBankSquareRoot
    scale outside [0, 31] write defined bytes and report, so run() raises, naming the operator, where the
    interpreter refuses too; run_chunk stops at the sample."""

    for host_ports in (True, False):
        native = NativeModel(model("DIV", ((17,), (17,), (17,))), host_ports=host_ports)
        a, b = values((17,), 8), values((17,), 9, divisor=True)
        native.run([a, b])
        for at, (x, y) in [(3, (5, 0)), (16, (5, 0)), (9, (-2**31, -1))]:
            a2, b2 = a.copy(), b.copy()
            a2[at], b2[at] = x, y
            with pytest.raises(InvokeError, match=r"operator 0 \(DIV\): an int32 DIV divides by zero"):
                native.run([a2, b2])
            native.run([a, b])  # the error channel was cleared
            outs, done, status = native.run_chunk([np.stack([a, a2, a]), np.stack([b, b2, b])])
            assert (done, status) == (1, -1003)
        x = T((5,), "uint64", data=np.arange(5, dtype=np.uint64) ** 5)  # (a uint64 model input has no C header type)
        root = NativeModel(op_model("SignalFilterBankSquareRoot", [x, T((), "int32")], [T((5,), "uint32")]),
                           host_ports=host_ports)
        for scale in (0, 31):
            root.run([np.int32(scale)])
        for scale in (-1, 32):
            with pytest.raises(InvokeError, match=r"\(SignalFilterBankSquareRoot\): .*outside \[0, 31\]"):
                root.run([np.int32(scale)])
