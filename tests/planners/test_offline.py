"""Offline plans written as TFLM metadata: the real TFLM uses them, micronn honours them."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import model_bytes

from micronn import Interpreter, ModelError, planners, read
from micronn.analyze import plan_report as plan
from micronn.planners.offline import offline_metadata, with_offline_plan
from micronn.testing import assert_same_as_tflm, tflm_arena
from micronn.tflite.writer import write


@pytest.mark.parametrize("planner", ["optimal", "linear"])
def test_wheel_plans_exactly_as_predicted(planner: str) -> None:
    m = read(model_bytes("tiny_unet_static"))
    it = Interpreter(m, planner=planner, sharing=False)
    it.allocate_tensors()
    out = write(with_offline_plan(m, it.plan))
    predicted = Interpreter(out, planner="tflm")
    predicted.allocate_tensors()
    assert tflm_arena(out)["head"] == predicted.head
    assert_same_as_tflm(out, runs=1)


def test_micronn_honours_offline_offsets() -> None:
    m = read(model_bytes("micro_speech_quantized"))
    linear = Interpreter(m, planner="linear")
    linear.allocate_tensors()
    again = Interpreter(read(write(with_offline_plan(m, linear.plan))), planner="optimal")
    again.allocate_tensors()
    want = {r.tensor: o for o, r in zip(linear.plan.offsets, linear.requests) if r.tensor is not None}
    got = {b["tensor"]: b["offset"] for b in again.arena_report()["buffers"] if b["kind"] == "tensor"}
    assert got == want and again.shared_groups == []


def test_metadata_layout() -> None:
    m = read(model_bytes("hello_world_int8"))
    it = Interpreter(m, planner="tflm")
    it.allocate_tensors()
    words = np.frombuffer(offline_metadata(m, it.plan), "<i4")
    n = len(m.main.tensors)
    assert list(words[:3]) == [1, 1, n] and len(words) == 3 + n
    assert all(words[3 + t.index] == -1 for t in m.main.tensors if t.is_constant)


def test_cli_path_reports_tflm_head(tmp_path) -> None:
    res = plan(model_bytes("tiny_unet_static"), offline_out=str(tmp_path / "o.tflite"))
    off = res["offline"]
    assert off["tflm_head_bytes"] == tflm_arena((tmp_path / "o.tflite").read_bytes())["head"]
    assert off["tflm_head_bytes"] <= off["tflm_original_head_bytes"]


def test_bad_offline_metadata_is_a_model_error() -> None:
    m = read(model_bytes("hello_world_int8"))
    m.metadata[planners.OFFLINE_KEY] = np.array([1, 1, 3, 0, 0], "<i4").tobytes()
    with pytest.raises(ModelError, match="OfflineMemoryAllocation"):
        Interpreter(m).allocate_tensors()


def test_real_tflm_runs_the_vww_model_in_a_smaller_arena(tmp_path) -> None:
    """TFLM's greedy order leaves a 96x96x3 MobileNet 33% above the bound; micronn's offline plan fixes that."""
    from pathlib import Path

    data = (Path(__file__).resolve().parents[1] / "models" / "vww_mobilenet_96x96x3_int8.tflite").read_bytes()
    res = plan(data, sharing=False, offline_out=str(tmp_path / "vww.tflite"))
    out = (tmp_path / "vww.tflite").read_bytes()
    before, after = tflm_arena(data), tflm_arena(out)
    assert before["head"] == 73_728 and after["head"] == res["head_bytes"] == res["lower_bound_bytes"] == 55_296
    assert after["total"] < before["total"]
    assert_same_as_tflm(out, runs=2)
