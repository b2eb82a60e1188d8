"""Fused int32 elementwise chains (``micronn.micro.lower.fuse_chains``, ``kernels/chain_s32.c`` and its host port):
NativeModel runs a run of CAST / ADD / SUB / MUL / DIV / MINIMUM / MAXIMUM against scalar constants as one kernel
call, with the bytes of the unfused portable kernels, the interpreter and the TFLM wheel (audio_preprocessor's tail
is such a run). Runs stop where fusing could change a result: a divisor 0 or -1, an intermediate someone else reads."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import InvokeError
from micronn.export import NativeModel
from micronn.ir import Activation
from micronn.testing import Graph, Op, T, graph_model, run_tflm

EDGES = [-2**31, -2**31 + 1, -65536, -46341, -1, 0, 1, 2, 46341, 65536, 2**31 - 1]


def chain(n: int, in_dtype: str, out_dtype: str, steps: list[tuple[str, int, int]], outputs: tuple = ()) -> bytes:
    """input (n,) in_dtype -> [CAST to int32] -> each (op, constant, activation) -> [CAST to out_dtype]; ``outputs``
    names intermediates that are model outputs too."""
    tensors = {"x": T((n,), in_dtype)}
    ops, prev = [], "x"
    if in_dtype != "int32":
        tensors["x32"] = T((n,), "int32")
        ops.append(Op("CAST", ["x"], ["x32"]))
        prev = "x32"
    for k, (op, c, act) in enumerate(steps):
        tensors[f"c{k}"], tensors[f"t{k}"] = T((), "int32", data=c), T((n,), "int32")
        opts = {"fused_activation_function": act} if op in ("ADD", "SUB", "MUL", "DIV") else None
        inputs = [f"c{k}", prev] if op in ("ADD", "MUL", "MINIMUM", "MAXIMUM") and k % 2 else [prev, f"c{k}"]
        ops.append(Op(op, inputs, [f"t{k}"], opts))
        prev = f"t{k}"
    if out_dtype != "int32":
        tensors["y"] = T((n,), out_dtype)
        ops.append(Op("CAST", [prev], ["y"]))
        prev = "y"
    return graph_model(Graph(tensors, ops, ["x"], [prev, *outputs]))


def inputs(n: int, dtype: str, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, n, dtype=np.int64, endpoint=True)
    edges = [e for e in EDGES if info.min <= e <= info.max]
    return [np.where(rng.random(n) < 0.3, rng.choice(edges, n), x).astype(dtype)]


STEPS = [("MUL", 256, Activation.NONE), ("ADD", 333, Activation.NONE), ("DIV", 666, Activation.NONE),
         ("ADD", -128, Activation.NONE), ("MINIMUM", 127, 0), ("MAXIMUM", -128, 0)]  # audio_preprocessor's tail
CASES = [
    ("int16", "int8", STEPS),
    ("int8", "int16", [("SUB", 7, Activation.NONE), ("MUL", -3, Activation.NONE), ("DIV", -2, Activation.RELU)]),
    ("int16", "int32", [("ADD", 2**31 - 1, Activation.NONE), ("DIV", -2**31, Activation.NONE),
                        ("MAXIMUM", 0, 0)]),
    ("int32", "int32", [("MUL", 46341, Activation.NONE), ("DIV", 1, Activation.RELU_N1_TO_1),
                        ("SUB", -12345, Activation.NONE), ("SUB", -2**31, Activation.NONE),
                        ("DIV", 2**30, Activation.NONE)]),
    ("int32", "int16", [("DIV", 3, Activation.NONE), ("MINIMUM", 2**31 - 1, 0)]),
]


@pytest.mark.parametrize("n", [8, 43])
@pytest.mark.parametrize(("in_dtype", "out_dtype", "steps"), CASES, ids=[f"{a}-{b}-{len(s)}" for a, b, s in CASES])
def test_a_fused_chain_gives_the_unfused_bytes(n: int, in_dtype: str, out_dtype: str, steps: list) -> None:
    model = chain(n, in_dtype, out_dtype, steps)
    xs = inputs(n, in_dtype, n)
    want = run_tflm(model, xs)[0].tobytes()
    it = Interpreter(model)
    it.set_input(xs[0])
    it.invoke()
    assert it.get_output(0).tobytes() == want
    for host_ports in (True, False):
        native = NativeModel(model, host_ports=host_ports)
        src = native.program.files["mn_native.c"]
        assert src.count("mn_chain_s32(mn_native_args") == 1 and "mn_div_s32(" not in src
        assert native.run(xs)[0].tobytes() == want
        batch = np.stack([inputs(n, in_dtype, s)[0] for s in range(20)])
        outs, done, _ = native.run_chunk([batch])
        assert done == 20
        assert outs[0].tobytes() == b"".join(run_tflm(model, [x])[0].tobytes() for x in batch)


def test_chains_stop_where_fusing_would_change_a_result() -> None:
    """A divisor of -1 (INT32_MIN / -1 fails in TFLM) is left to DIV's own kernel, which reports it; an intermediate
    that is also a model output is still written."""
    steps = [("ADD", 5, Activation.NONE), ("DIV", -1, Activation.NONE), ("MUL", 3, Activation.NONE),
             ("SUB", 1, Activation.NONE)]
    model = chain(16, "int32", "int32", steps, outputs=("t2",))
    native = NativeModel(model)
    src = native.program.files["mn_native.c"]
    assert "mn_div_s32(mn_native_args" in src and src.count("mn_chain_s32(mn_native_args") == 0
    xs = inputs(16, "int32", 1)
    xs[0][xs[0] == -2**31 - 5 + 2**32] = 0  # (no INT32_MIN after the ADD)
    outs = native.run(xs)
    assert [o.tobytes() for o in outs] == [o.tobytes() for o in run_tflm(model, xs)]
    bad = [np.full(16, -2**31 - 5 + 2**32, np.int64).astype(np.int32)]  # ADD gives INT32_MIN, then / -1
    with pytest.raises(InvokeError, match="DIV"):
        native.run(bad)
