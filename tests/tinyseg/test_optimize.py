"""The optimizer loop: tiny_unet's goal (head + TFLM-measured tail <= 127,000 B, byte-identical, also to the TFLM
wheel), the CLI and its JSON, a written model re-read and run, other hourglass models, and a target."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from micronn import Interpreter
from micronn.cli import main
from micronn.ir import random_inputs
from micronn.models import bundled_model
from micronn.storage import open_storage
from micronn.testing import run_tflm
from micronn.tflite.reader import read
from micronn.tinyseg import optimize

MODELS = Path(__file__).resolve().parents[1] / "models"
GOAL = 127_000


def _run(model, inputs, storage="memory") -> list[np.ndarray]:
    with open_storage(storage) as st:
        it = Interpreter(model, storage=st)
        for i, x in enumerate(inputs):
            it.set_input(x, i)
        it.invoke()
        return [it.get_output(i) for i in range(len(it.model.main.outputs))]


@pytest.fixture(scope="module")
def tiny_unet_cli(tmp_path_factory) -> tuple[dict, Path]:
    out = tmp_path_factory.mktemp("opt") / "tiny_unet_opt.tflite"
    src = tmp_path_factory.mktemp("src") / "tiny_unet.tflite"
    src.write_bytes(bundled_model("tiny_unet"))
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["optimize", str(src), "-o", str(out), "--json"]) == 0
    return json.loads(buf.getvalue()), out


def test_tiny_unet_reaches_the_goal_byte_identically(tiny_unet_cli):
    res, out = tiny_unet_cli
    assert res["verified"] is True
    assert res["before"]["total_bytes"] > 300_000  # TFLM's plan and scratch
    assert res["after"]["total_bytes"] == res["after"]["head_bytes"] + res["after"]["tail_bytes"] <= GOAL
    totals = [s["total_bytes"] for s in res["steps"]]
    assert totals[-1] == min(totals) and {"+ compact scratch", "+ fused fetching"} <= {s["name"] for s in res["steps"]}
    # the written file, re-read, on fresh inputs: equal to the original through the real TFLM wheel
    original = bundled_model("tiny_unet")
    xs = random_inputs(read(original), seed=7)
    m = read(out.read_bytes())
    assert {"Spill", "FetchConv2D"} <= {op.op for op in m.main.operators}
    got = _run(m, xs)
    want = run_tflm(original, xs)
    assert all(a.dtype == b.dtype and a.tobytes() == b.tobytes() for a, b in zip(got, want))
    it = Interpreter(m)
    it.allocate_tensors()
    assert it.head == res["after"]["head_bytes"]


def test_optimize_text_output_and_bad_model(tmp_path, capsys):
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(b"not a model")
    assert main(["optimize", str(bad), "--json"]) == 1
    assert "error" in json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("name", ["unet_wide_int8", "vnet_like_int8"])
def test_other_hourglass_models_shrink_and_stay_identical(name):
    m = read(MODELS / f"{name}.tflite")
    res = optimize(m, latency=False)
    assert res.after.total < 0.6 * res.before.total
    assert any(op.op in ("Fetch", "FetchConv2D") for op in res.model.main.operators)
    xs = random_inputs(m, 3)
    storage = "file" if name.startswith("vnet") else "qspi"
    assert [y.tobytes() for y in _run(m, xs)] == [y.tobytes() for y in _run(res.model, xs, storage)]


def test_a_target_stops_early_and_spills_only_part():
    m = read(MODELS / "vnet_like_int8.tflite")
    free = optimize(m, latency=False)
    spill_at = next(i for i, s in enumerate(free.steps) if "spill" in s.change)
    target = free.steps[spill_at - 1].total - 4000  # a little below the last step before spilling
    res = optimize(m, target, "qspi")  # with a real storage, moving fewer bytes is faster
    assert res.after.total <= target and res.after.total >= free.after.total
    assert res.as_dict()["target_bytes"] == target
    assert "SPLIT_V" in [op.op for op in res.model.main.operators]  # the cheaper plan: only part of the victim goes
    xs = random_inputs(m, 5)
    assert [y.tobytes() for y in _run(m, xs)] == [y.tobytes() for y in _run(res.model, xs)]


def test_cli_report_has_the_plans_and_the_latency_table(tmp_path, capsys):
    out, html = tmp_path / "v.tflite", tmp_path / "v.html"
    assert main(["optimize", str(MODELS / "vnet_like_int8.tflite"), "-o", str(out), "--storage", "file",
                 "--report", str(html)]) == 0
    text = capsys.readouterr().out
    assert "outputs byte-identical on random inputs: True" in text and f"wrote {html}" in text
    page = html.read_text()
    assert page.count("<svg") == 2 and "+ async erase" in page and "+ fused fetching" in page
    read(out.read_bytes()).validate()
