"""The CAST host port gives the portable kernel's bytes: int16 -> int32 and int32 -> int16 / int8 / uint8 eight at a
time (sign extension, low bits without saturation), every count around the group of eight, over separate buffers and
with the output laid over the input in each direction the lowering accepts (forward at the planner's stream gap,
backward over the same bytes), then models whose plans overlap casts, against the interpreter and the wheel."""

from __future__ import annotations

import re

import numpy as np
import pytest

from micronn.micro import lower
from micronn.testing import Graph, Op, T, graph_model
from tests.export.test_native_ports_elementwise_s32 import check
from tests.export.test_native_ports_signal_front import kernels  # noqa: F401 (the fixture)

PAIRS = [("int16", "int32"), ("int32", "int16"), ("int32", "int8"), ("int32", "uint8"), ("int8", "int32")]
EDGES = [-2**31, -2**31 + 1, -32769, -32768, -129, -128, -1, 0, 1, 127, 128, 255, 256, 32767, 32768, 2**31 - 1]


def values(dtype: str, n: int, seed: int) -> np.ndarray:
    rng, info = np.random.default_rng(seed), np.iinfo(dtype)
    x = rng.integers(info.min, info.max, n, endpoint=True, dtype=np.int64)
    edges = np.array([e for e in EDGES if info.min <= e <= info.max])
    return np.where(rng.random(n) < 0.4, rng.choice(edges, n), x).astype(dtype)


@pytest.mark.parametrize("pair", PAIRS, ids="->".join)
def test_port_matches_portable(kernels, pair: tuple) -> None:  # noqa: F811
    k = kernels("cast", "mn_cast")
    src, dst = (np.dtype(t) for t in pair)
    codes = lower.INT_TYPES
    for n in [*range(1, 26), 40, 41, 257]:
        x = values(src.name, n, n)
        want = x.astype(np.int64).astype(dst)  # numpy's integer cast keeps the low bits, as C's does
        # separate buffers, then over the input: forward with the output below by the stream gap, backward over the
        # same bytes (a widening cast) or forward over the same bytes (a narrowing one)
        gap = max(0, (n - 1) * (dst.itemsize - src.itemsize))
        for place, backward in (("apart", 0), ("gap", 0), ("same", int(dst.itemsize > src.itemsize))):
            for portable in (False, True):
                buf = np.zeros(n * (src.itemsize + dst.itemsize) + gap + 96, np.uint8)
                at_in = 32 + (gap if place == "gap" else 0)
                out_at = 32 + n * src.itemsize + gap + 16 if place == "apart" else 32
                buf[at_in:at_in + n * src.itemsize] = x.view(np.uint8)
                args = (buf[out_at:], buf[at_in:], n, codes[src.name], codes[dst.name], backward)
                k.call(portable, *args)
                got = buf[out_at:out_at + n * dst.itemsize].view(dst)
                assert got.tobytes() == want.tobytes(), (pair, n, place, portable)


def test_cast_chains_over_their_inputs() -> None:
    """Casts that widen and narrow in turn, where the plan lays outputs over inputs, against the wheel."""
    for n in (7, 8, 9, 40, 83):
        names, types = ["x", "a", "b", "c", "d", "e"], ["int16", "int32", "int16", "int32", "int8", "int32"]
        tensors = {nm: T((n,), t) for nm, t in zip(names, types)}
        ops = [Op("CAST", [names[k]], [names[k + 1]]) for k in range(5)]
        check(graph_model(Graph(tensors, ops, ["x"], ["e"])), [values("int16", n, 3)])


def test_casts_that_keep_their_bits_in_place_are_no_calls() -> None:
    """A CAST the plan lays exactly over its input between int32 and uint32 leaves every byte as it is: no kernel
    call; the bytes still match the wheel (the audio front end's spectrum casts)."""
    from micronn.export import NativeModel

    for n in (7, 40):
        tensors = {"x": T((n,), "int32"), "m": T((), "int32", data=[3]), "a": T((n,), "int32"), "b": T((n,), "uint32"),
                   "c": T((n,), "int32"), "s": T((2,), "int32", data=[1, n]), "d": T((1, n), "int32"),
                   "e": T((1, n), "int32"), "f": T((1, n), "int8")}
        ops = [Op("MUL", ["x", "m"], ["a"]), Op("CAST", ["a"], ["b"]), Op("CAST", ["b"], ["c"]),
               Op("RESHAPE", ["c", "s"], ["d"]), Op("MUL", ["d", "m"], ["e"]), Op("CAST", ["e"], ["f"]),
]
        data = graph_model(Graph(tensors, ops, ["x"], ["f"]))
        calls = NativeModel(data).program.files["mn_native.c"].split("_invoke(void)")[1].split("return 0;")[0]
        # the first MUL, the RESHAPE's copy onto itself, the second MUL fused with the int32 -> int8 CAST
        assert re.findall(r"(mn_\w+)\(mn_native_args", calls) == ["mn_mul_s32", "mn_copy", "mn_chain_s32"], calls
        check(data, [values("int32", n, 5)])
