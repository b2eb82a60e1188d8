"""``micronn export``: a thin layer over micronn.export, with --json and one-line errors."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
from conftest import model_path

from micronn.cli import main
from micronn.testing import T, op_model

needs_unicorn = pytest.mark.skipif(importlib.util.find_spec("unicorn") is None, reason="unicorn is not installed")


@needs_unicorn
def test_export_run_json_report_and_outputs(tmp_path: Path, capsys) -> None:
    x = np.arange(96, dtype=np.int16).reshape(1, 96) * 300
    np.save(tmp_path / "x.npy", x)
    argv = ["export", str(model_path("keyword_scrambled")), "-o", str(tmp_path / "fw"), "--run", "--input",
            str(tmp_path / "x.npy"), "--output", str(tmp_path / "y.npz"), "--report", str(tmp_path / "r.html")]
    assert main([*argv, "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["identical"] and {"flash_bytes", "ram_bytes", "instructions", "cycles"} <= set(res)
    assert res["ram_bytes"] <= 12_000 and len(res["ops"]) == res["calls"] == 15
    assert np.load(tmp_path / "y.npz")["arr_0"].tolist() == res["outputs"][0]
    page = (tmp_path / "r.html").read_text()
    assert "byte-identical" in page and "mn_svdf_s8" in page and f"{res['flash_bytes']:,}" in page
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "byte-identical" in out and "mn_svdf_s8" in out and "wrote" in out


def test_export_tflm_format(tmp_path: Path, capsys) -> None:
    assert main(["export", str(model_path("person_detect")), "-o", str(tmp_path), "--format", "tflm",
                 "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["tflm_head_bytes"] == 55_296 and "model_resolver.h" in res["files"]


@pytest.mark.parametrize("argv, message", [
    (["--run"], None),  # hello_world: fine
    (["--device", "qemu-m4"], "--device, --input, --output and --report need --run"),
    (["--format", "tflm", "--run"], "--run and --optimize apply to the C project"),
    (["--target-bytes", "1000"], "--target-bytes needs --optimize"),
    (["--target", "cortex-m99"], "unknown target"),
])
def test_export_errors(tmp_path: Path, capsys, argv: list[str], message: str | None) -> None:
    code = main(["export", str(model_path("hello_world_int8")), "-o", str(tmp_path / "p"), *argv])
    err = capsys.readouterr().err
    if message is None:
        assert code == 0
    else:
        assert code != 0 and message in err and len(err.strip().splitlines()) == 1


def test_unsupported_model_is_one_line(tmp_path: Path, capsys) -> None:
    model = tmp_path / "sqrt.tflite"
    model.write_bytes(op_model("SQRT", [T((4,), "float32")], [T((4,), "float32")]))
    assert main(["export", str(model), "-o", str(tmp_path / "p")]) == 1
    err = capsys.readouterr().err
    assert "SQRT" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "p").exists()
