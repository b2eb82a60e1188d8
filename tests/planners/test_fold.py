"""Folding explicit PADs into convolutions: identical bytes, less memory, .tflite only where SAME expresses it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from micronn import Interpreter, read
from micronn.ir import Padding
from micronn.planners import Sharing, fold_pads
from micronn.testing import Graph, Op, T, assert_same_as_tflm, graph_model, random_inputs, run_tflm
from micronn.tflite.writer import write

MOBILENET_V2 = Path(__file__).resolve().parents[1] / "models" / "mobilenet_v2_pad_int8.tflite"


def _pad_conv(pads: list[list[int]], dtype: str = "int8") -> bytes:
    rng = np.random.default_rng(2)
    q = {"scale": 0.05, "zero_point": 3} if dtype == "int8" else {}
    wq = {"scale": 0.02} if dtype == "int8" else {}
    h = 10 + pads[1][0] + pads[1][1]
    out = (h - 3) // 2 + 1
    tensors = {"x": T((1, 10, 10, 4), dtype, **q), "p": T((4, 2), "int32", data=pads),
               "xp": T((1, h, h, 4), dtype, **q),
               "w": T((6, 3, 3, 4), "int8" if dtype == "int8" else dtype, **wq,
                      data=rng.integers(-100, 100, (6, 3, 3, 4)) if dtype == "int8"
                      else rng.uniform(-1, 1, (6, 3, 3, 4))),
               "b": T((6,), "int32" if dtype == "int8" else dtype, **({"scale": 0.001} if dtype == "int8" else {}),
                      data=np.arange(6)),
               "y": T((1, out, out, 6), dtype, **({"scale": 0.1, "zero_point": -1} if dtype == "int8" else {}))}
    ops = [Op("PAD", ["x", "p"], ["xp"]),
           Op("CONV_2D", ["xp", "w", "b"], ["y"], {"stride_w": 2, "stride_h": 2, "padding": Padding.VALID})]
    return graph_model(Graph(tensors, ops, ["x"], ["y"]))


@pytest.mark.parametrize("dtype", ["int8", "float32"])
@pytest.mark.parametrize("pads", [[[0, 0], [1, 1], [1, 1], [0, 0]], [[0, 0], [0, 1], [0, 1], [0, 0]]])
def test_folded_conv_computes_the_same_bytes(pads: list[list[int]], dtype: str) -> None:
    data = _pad_conv(pads, dtype)
    it = Interpreter(data)
    assert it.folded_pads == [0] and len(it.subgraph.operators) == 1
    assert_same_as_tflm(data, runs=3)


def test_same_equal_pads_write_back_as_plain_tflite() -> None:
    data = _pad_conv([[0, 0], [0, 1], [0, 1], [0, 0]])
    folded, idx = fold_pads(read(data), write_back=True)
    assert idx == [0] and folded.main.operators[0].options.padding == Padding.SAME
    xs = random_inputs(data, 1)
    assert run_tflm(write(folded), xs)[0].tobytes() == run_tflm(data, xs)[0].tobytes()
    symmetric = _pad_conv([[0, 0], [1, 1], [1, 1], [0, 0]])
    assert fold_pads(read(symmetric), write_back=True)[1] == []
    with pytest.raises(ValueError, match="explicit padding"):
        write(fold_pads(read(symmetric))[0])


def test_fold_can_be_switched_off() -> None:
    data = _pad_conv([[0, 0], [1, 1], [1, 1], [0, 0]])
    assert Interpreter(data, sharing=Sharing(fold_pad=False)).folded_pads == []
    assert Interpreter(data, planner="tflm").folded_pads == []


@pytest.mark.skipif(not MOBILENET_V2.exists(), reason="test model not built")
def test_pytorch_style_mobilenet_v2_shrinks() -> None:
    data = MOBILENET_V2.read_bytes()
    folded = Interpreter(data, sharing=Sharing(alias=False, inplace=False, overlap=False))
    folded.allocate_tensors()
    tflm = Interpreter(data, planner="tflm")
    tflm.allocate_tensors()
    assert len(folded.folded_pads) == 5 and folded.head < 0.65 * tflm.head
    assert_same_as_tflm(data, runs=2)
