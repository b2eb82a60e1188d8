"""The CLI: thin commands over the features' public functions, each with --json and non-zero exits on errors."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
from conftest import model_path

from micronn.cli import main


def _json(capsys, *argv: str) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_info(capsys) -> None:
    res = _json(capsys, "info", str(model_path("person_detect")))
    assert res["op_counts"]["CONV_2D"] == 14 and res["memory"]["tflm_head_bytes"] == 55_296
    assert res["memory"]["lower_bound_bytes"] == 55_296 and res["memory"]["head_bytes"] < 55_296


def test_plan_json_fields(capsys) -> None:
    res = _json(capsys, "plan", str(model_path("micro_speech_quantized")), "--planner", "tflm")
    assert res["planner"] == "tflm" and res["head_bytes"] == 5_968
    assert res["total_bytes"] == res["head_bytes"] + res["tail_bytes"] and res["lower_bound_bytes"] <= 5_968
    assert {"offset", "size", "first", "last"} <= set(res["buffers"][0])
    linear = _json(capsys, "plan", str(model_path("micro_speech_quantized")), "--planner", "linear")
    assert linear["head_bytes"] > res["head_bytes"]


def test_run_with_inputs_outputs_and_profile(tmp_path, capsys) -> None:
    x = np.zeros((1, 96, 96, 1), np.int8)
    np.save(tmp_path / "x.npy", x)
    res = _json(capsys, "run", str(model_path("person_detect")), "--input", str(tmp_path / "x.npy"),
                "--output", str(tmp_path / "y.npz"), "--profile")
    assert len(res["profile"]["ops"]) == 31 and res["profile"]["overhead_ns"] >= 0
    assert np.load(tmp_path / "y.npz")["arr_0"].tolist() == res["outputs"][0]
    assert main(["run", str(model_path("person_detect")), "--profile"]) == 0
    assert "interpreter overhead" in capsys.readouterr().out


def test_demo_finds_the_person(capsys) -> None:
    res = _json(capsys, "demo")
    assert res["person"] and res["arena"]["head_bytes"] < 55_296 < res["arena"]["lower_bound_bytes"] + 1
    assert not _json(capsys, "demo", "--image", "no_person")["person"]


def test_errors_exit_non_zero(tmp_path, capsys) -> None:
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(b"not a model at all")
    assert main(["info", str(bad)]) == 1
    assert "micronn: error" in capsys.readouterr().err
    assert main(["run", str(model_path("person_detect")), "--arena-size", "1000", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["error"] == "ArenaTooSmallError"


def test_console_script_runs() -> None:
    res = subprocess.run([sys.executable, "-m", "micronn.cli", "plan", str(model_path("hello_world_int8"))],
                         capture_output=True, text=True)
    assert res.returncode == 0 and "lower bound" in res.stdout
