"""The RELU / LEAKY_RELU / RELU6 int8 host port (kernels/host/relu.c): a per-call-site table of the portable
kernel's 256 outputs (RELU, LEAKY_RELU) and byte clamps (RELU6) give the portable kernel's, the interpreter's and the
wheel's bytes on every int8 value, at lengths around the 64-byte (AVX-512 VBMI) and 32-byte (AVX2) blocks, for
several quantizations each (zero points at the ends of the range, output scales above and below the input's)."""

from __future__ import annotations

import numpy as np
import pytest

from micronn.export import NativeModel
from micronn.testing import T, op_model
from micronn.tflite import schema
from tests.export.test_native_ports_elementwise_s32 import check

QUANT = [((0.2, -7), (0.1, -128)), ((0.05, 127), (0.3, 5)), ((0.02, -128), (0.02, -128)), ((0.5, 0), (0.001, 100))]


def model(op: str, n: int, q: tuple) -> bytes:
    (si, zi), (so, zo) = q
    opts = schema.options("LEAKY_RELU", alpha=0.3) if op == "LEAKY_RELU" else None
    return op_model(op, [T((1, n), "int8", si, zi)], [T((1, n), "int8", so if op != "RELU6" else si,
                                                       zo if op != "RELU6" else zi)], opts)


@pytest.mark.parametrize("op", ["RELU", "LEAKY_RELU", "RELU6"])
@pytest.mark.parametrize("q", QUANT, ids=str)
def test_every_value_at_block_edges(op: str, q: tuple) -> None:
    for n in (1, 31, 63, 64, 65, 256, 300):
        x = np.resize(np.arange(-128, 128, dtype=np.int8), n)
        x = np.roll(x, n // 3).reshape(1, n)
        check(model(op, n, q), [x])


def test_table_follows_each_call_site() -> None:
    """Two RELUs of different quantizations in one model keep a table each."""
    from micronn.testing import Graph, Op, graph_model

    tensors = {"x": T((1, 70), "int8", 0.2, -7), "y": T((1, 70), "int8", 0.1, -128), "z": T((1, 70), "int8", 0.05, 3)}
    data = graph_model(Graph(tensors, [Op("RELU", ["x"], ["y"]), Op("RELU", ["y"], ["z"])], ["x"], ["z"]))
    x = np.resize(np.arange(-128, 128, dtype=np.int8), 70).reshape(1, 70)
    check(data, [x])
    assert NativeModel(data).program.files["mn_native.c"].count("mn_relu_s8(mn_native_args") == 2
