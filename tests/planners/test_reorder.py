"""Operator reordering finds the order with the smallest peak and writes a model TFLM runs in less memory."""

from __future__ import annotations

import numpy as np
from conftest import model_bytes

from micronn import read
from micronn.analyze import reorder_report as reorder_tool
from micronn.ir import Padding
from micronn.planners.reorder import best_order, peak_of_order, reorder
from micronn.testing import Graph, Op, T, assert_same_as_tflm, graph_model, tflm_arena
from micronn.tflite.writer import write


def _branchy(bad_order: bool) -> bytes:
    """Two branches that each expand to a big tensor then shrink, joined by a concatenation."""
    rng = np.random.default_rng(0)
    conv = {"stride_w": 1, "stride_h": 1, "padding": Padding.VALID}

    def w(cout: int, cin: int) -> T:
        return T((cout, 1, 1, cin), "float32", data=rng.uniform(-1, 1, (cout, 1, 1, cin)))

    tensors = {"x": T((1, 8, 8, 4), "float32"), "wb1": w(32, 4), "wb2": w(4, 32), "wc1": w(32, 4),
               "wc2": w(4, 32), "b1": T((1, 8, 8, 32), "float32"), "b2": T((1, 8, 8, 4), "float32"),
               "c1": T((1, 8, 8, 32), "float32"), "c2": T((1, 8, 8, 4), "float32"),
               "y": T((1, 8, 8, 8), "float32")}
    ops = {out: Op("CONV_2D", [src, f"w{out}", None], [out], conv)
           for out, src in (("b1", "x"), ("b2", "b1"), ("c1", "x"), ("c2", "c1"))}
    ops["y"] = Op("CONCATENATION", ["b2", "c2"], ["y"], {"axis": 3})
    names = ["b1", "c1", "b2", "c2", "y"] if bad_order else ["b1", "b2", "c1", "c2", "y"]
    return graph_model(Graph(tensors, [ops[n] for n in names], ["x"], ["y"]))


def test_finds_the_better_order_and_tflm_benefits(tmp_path) -> None:
    bad = _branchy(bad_order=True)
    sg = read(bad).main
    order, exact = best_order(sg)
    assert exact and peak_of_order(sg, order) < peak_of_order(sg, list(range(5)))
    res = reorder_tool(bad, str(tmp_path / "r.tflite"))
    better = (tmp_path / "r.tflite").read_bytes()
    assert res["changed"] and res["tflm_head_after_bytes"] < res["tflm_head_before_bytes"]
    assert tflm_arena(better)["head"] == res["tflm_head_after_bytes"] < tflm_arena(bad)["head"]
    assert_same_as_tflm(better, runs=1)
    xs = [np.random.default_rng(1).uniform(-1, 1, (1, 8, 8, 4)).astype(np.float32)]
    from micronn.testing import run_tflm

    assert run_tflm(bad, xs)[0].tobytes() == run_tflm(better, xs)[0].tobytes()


def test_good_order_is_left_alone() -> None:
    good = _branchy(bad_order=False)
    order, _ = best_order(read(good).main)
    assert peak_of_order(read(good).main, order) == peak_of_order(read(good).main, list(range(5)))


def test_greedy_fallback_is_a_valid_order() -> None:
    m = read(model_bytes("tiny_unet_static"))
    order, exact = best_order(m.main, max_states=3)
    assert not exact and sorted(order) == list(range(len(m.main.operators)))
    read(write(reorder(m, order)))  # validates: every operator after its inputs


def test_every_scratch_buffer_of_an_operator_counts() -> None:
    """SVDF asks for two scratch buffers: the peak in the original order is TFLM's head, not less (the report
    counted only the last one)."""
    res = reorder_tool(model_bytes("keyword_scrambled"))
    assert res["peak_before_bytes"] == res["tflm_head_before_bytes"] == 672
