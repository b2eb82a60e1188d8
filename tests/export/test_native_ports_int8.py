"""The host ports of QUANTIZE (every integer pair TFLM has), CONCATENATION, CAST and int8 AVERAGE_POOL_2D give
the portable kernels', the interpreter's and the TFLM wheel's bytes: odd element counts (vector groups and their
scalar tails), zero points at the types' edges, scales that shift left and right, saturation, every axis and row
widths 1 to 70 bytes, every integer cast pair and casts laid over their inputs, pooling windows cut by padding,
global pools and channel tails."""

from __future__ import annotations

import pytest
from test_native_ports import _id, _inputs

from micronn import Interpreter
from micronn.errors import PrepareError, UnsupportedError
from micronn.export import NativeModel
from micronn.models import bundled_model
from micronn.testing import Graph, Op, T, _Tflm, graph_model, op_model
from micronn.tflite import schema

SAMPLES = 3


def assert_all_same(data: bytes, *, seed: int = 0, wheel: bool = True) -> None:
    """Ported NativeModel == portable NativeModel == interpreter (== the wheel) on every sample, batched."""
    ported, portable, it = NativeModel(data), NativeModel(data, host_ports=False), Interpreter(data)
    xs = _inputs(data, SAMPLES, seed)
    got, done, status = ported.run_chunk(xs)
    assert (done, status) == (SAMPLES, 0)
    base, done, status = portable.run_chunk(xs)
    assert (done, status) == (SAMPLES, 0)
    assert [g.tobytes() for g in got] == [b.tobytes() for b in base]
    ref = _Tflm(data) if wheel else None
    for k in range(SAMPLES):
        sample = [x[k] for x in xs]
        for i, x in enumerate(sample):
            it.set_input(x, i)
        it.invoke()
        want = [it.get_output(i).tobytes() for i in range(len(it.subgraph.outputs))]
        assert [o[k].tobytes() for o in got] == want, k
        if ref is not None:
            assert [o[k].tobytes() for o in got] == [w.tobytes() for w in ref.run(sample)], k


ZP = {"int8": (-128, 127, 5), "uint8": (0, 255, 128), "int16": (-32768, 32767, -300), "int32": (0, 1000, -7)}

# (in, out) pairs TFLM requantizes between integer types; scales (in, out) that give shifts both ways
QUANTIZE = [
    {"pair": ("uint8", "int8"), "scales": (0.02, 0.02)},  # tiny_unet's input: x - 128
    {"pair": ("int8", "uint8"), "scales": (0.05, 0.03)},
    {"pair": ("int8", "int8"), "scales": (0.5, 0.002), "n": 37},  # saturates both ends
    {"pair": ("int8", "int16"), "scales": (0.1, 0.0001), "n": 9},
    {"pair": ("int8", "int32"), "scales": (0.3, 0.7), "n": 15},
    {"pair": ("int16", "int8"), "scales": (0.001, 0.05), "n": 200},  # keyword_scrambled's
    {"pair": ("int16", "int16"), "scales": (1.7e-5, 3e-7), "n": 8},
    {"pair": ("int16", "int32"), "scales": (2.0, 2.0 / 3), "n": 1},
    {"pair": ("int32", "int8"), "scales": (0.003, 1.2), "n": 33},
    {"pair": ("int32", "int16"), "scales": (1e-4, 0.05), "n": 64},
]


@pytest.mark.parametrize("zp", [0, 1, 2])
@pytest.mark.parametrize("case", QUANTIZE, ids=_id)
def test_quantize(case: dict, zp: int) -> None:
    (i, o), (si, so), n = case["pair"], case["scales"], case.get("n", 123)
    data = op_model("QUANTIZE", [T((1, n), i, si, ZP[i][zp])], [T((1, n), o, so, ZP[o][(zp + 1) % 3])])
    assert_all_same(data, seed=zp)


def test_quantize_in_place_and_models() -> None:
    """A QUANTIZE whose output the planner puts on its input (int16 -> int8 after an op), and the models'."""
    data = op_model("QUANTIZE", [T((3, 45), "int16", 0.002, -3)], [T((3, 45), "int8", 0.05, 7)])
    assert_all_same(data)
    for name in ("tiny_unet", "keyword_scrambled"):
        model = bundled_model(name)
        ported, portable = NativeModel(model), NativeModel(model, host_ports=False)
        xs = _inputs(model, 2, 1)
        assert [g.tobytes() for g in ported.run_chunk(xs)[0]] == [b.tobytes() for b in portable.run_chunk(xs)[0]]


def concat(shapes: list[tuple[int, ...]], axis: int, dtype: str = "int8") -> bytes:
    inputs = [T(s, dtype, 0.1, 0) if dtype in ("int8", "int16") else T(s, dtype) for s in shapes]
    ax = axis % len(shapes[0])
    out = tuple(sum(s[ax] for s in shapes) if k == ax else d for k, d in enumerate(shapes[0]))
    y = T(out, dtype, 0.1, 0) if dtype in ("int8", "int16") else T(out, dtype)
    return op_model("CONCATENATION", inputs, [y], schema.options("CONCATENATION", axis=axis))


CONCATENATION = [
    {"shapes": [(1, 4, 5, 3), (1, 4, 5, 1), (1, 4, 5, 7)], "axis": 3},  # rows of 3, 1, 7 bytes
    {"shapes": [(1, 6, 5, 16), (1, 6, 5, 32)], "axis": -1},  # tiny_unet's skip concatenation
    {"shapes": [(1, 3, 4, 33), (1, 3, 4, 64), (1, 3, 4, 70)], "axis": 3},  # 32..64 and beyond
    {"shapes": [(2, 3, 5, 2), (2, 1, 5, 2)], "axis": 1},
    {"shapes": [(2, 3, 5, 2), (2, 3, 2, 2), (2, 3, 1, 2)], "axis": 2},
    {"shapes": [(2, 3, 4), (1, 3, 4)], "axis": 0},
    {"shapes": [(3, 5), (3, 11), (3, 2)], "axis": 1, "dtype": "int16"},  # rows of 10, 22, 4 bytes
    {"shapes": [(4, 3), (4, 5)], "axis": 1, "dtype": "float32"},  # 12 and 20 bytes
    {"shapes": [(7, 2, 9), (7, 2, 8)], "axis": 2},  # 9 and 8 bytes
]


@pytest.mark.parametrize("case", CONCATENATION, ids=_id)
def test_concatenation(case: dict) -> None:
    assert_all_same(concat(case["shapes"], case["axis"], case.get("dtype", "int8")))


CAST_TYPES = ["int8", "uint8", "int16", "int32", "uint32"]


@pytest.mark.parametrize("dst", [*CAST_TYPES, "bool"])
@pytest.mark.parametrize("src", CAST_TYPES)
def test_cast(src: str, dst: str) -> None:
    """CAST between integer types (and to bool), one loop per pair or a memmove for the same type."""
    data = op_model("CAST", [T((2, 37), src)], [T((2, 37), dst)])
    try:
        Interpreter(data).allocate_tensors()
    except (UnsupportedError, PrepareError):  # TFLM has no such cast
        pytest.skip(f"no CAST {src} -> {dst}")
    assert_all_same(data, seed=len(src) + len(dst), wheel=src != "uint8" and dst != "uint8")


def test_cast_chain_over_its_input() -> None:
    """Casts that widen and narrow one after another (outputs the planner may lay over their inputs, shifted),
    and audio_preprocessor's casts."""
    names = ["x", "a", "b", "c", "d"]
    types = ["int8", "int32", "int16", "int32", "int8"]
    tensors = {n: T((3, 41), t) for n, t in zip(names, types)}
    ops = [Op("CAST", [names[k]], [names[k + 1]]) for k in range(4)]
    assert_all_same(graph_model(Graph(tensors, ops, ["x"], ["d"])))
    model = bundled_model("audio_preprocessor_int8")
    ported, portable = NativeModel(model), NativeModel(model, host_ports=False)
    xs = _inputs(model, 3, 2)
    assert [g.tobytes() for g in ported.run_chunk(xs)[0]] == [b.tobytes() for b in portable.run_chunk(xs)[0]]


AVERAGE_POOL = [
    {"h": 6, "w": 6, "c": 37, "fh": 6, "fw": 6, "stride": (1, 1), "pad": 1},  # a global pool, 4 blocks + 5
    {"h": 7, "w": 5, "c": 16, "fh": 3, "fw": 3, "stride": (1, 1), "pad": 0, "zp": -128},  # SAME: cut windows
    {"h": 9, "w": 9, "c": 8, "fh": 4, "fw": 2, "stride": (2, 3), "pad": 0, "act": 1, "zp": 127},
    {"n": 2, "h": 3, "w": 4, "c": 24, "fh": 2, "fw": 2, "stride": (1, 1), "pad": 1, "act": 3},
]


@pytest.mark.parametrize("case", AVERAGE_POOL, ids=_id)
def test_average_pool(case: dict) -> None:
    """int8 AVERAGE_POOL_2D: sums 8 channels at a time, the rounding division of each sign, channel tails."""
    from test_native_ports_more import pool

    assert_all_same(pool(op="AVERAGE_POOL_2D", **case))
