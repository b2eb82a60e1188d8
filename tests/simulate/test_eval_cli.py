"""``micronn eval``: a thin layer over ``micronn.simulate.evaluate`` (text, --json, --report) with one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import model_path

from micronn.cli import main
from micronn.simulate import evaluate


@pytest.fixture
def dataset(tmp_path: Path) -> tuple[Path, Path, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.integers(-128, 128, (20, 96, 96, 1), dtype=np.int8)
    y = rng.integers(0, 2, 20)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    return tmp_path / "x.npy", tmp_path / "y.npy", x, y


def test_eval_text_json_and_report(dataset, tmp_path: Path, capsys) -> None:
    xp, yp, x, y = dataset
    model = str(model_path("person_detect"))
    expected = evaluate(model, x, y, progress=False)
    assert main(["eval", model, "--data", str(xp), "--labels", str(yp), "--batch", "8", "--top-k", "2"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("person_detect.tflite: 20 samples, 2 classes") and f"top-1 {expected.accuracy:.2%}" in out
    assert main(["eval", model, "--data", str(xp), "--labels", str(yp), "--json", "--float", model,
                 "--report", str(tmp_path / "r.html"), "--classes", "no,yes"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["confusion"] == expected.confusion.tolist() and res["accuracy"] == expected.accuracy
    assert res["classes"] == ["no", "yes"] and res["float"]["disagreements"] == [] and res["samples"] == 20
    assert res["report"] == str(tmp_path / "r.html") and "<svg" in (tmp_path / "r.html").read_text()
    assert main(["eval", model, "--data", str(xp), "--labels", ",".join(map(str, y)), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["accuracy"] == expected.accuracy


def test_eval_backends_and_workers_give_the_same_scores(dataset, capsys) -> None:
    """--backend numpy (the reference) and --backend native on two threads: the same JSON but for the timing."""
    xp, yp, _, _ = dataset
    model = str(model_path("person_detect"))
    runs = []
    for extra in (["--backend", "numpy"], ["--backend", "native", "--workers", "2", "--batch", "3"]):
        assert main(["eval", model, "--data", str(xp), "--labels", str(yp), "--json", *extra]) == 0
        res = json.loads(capsys.readouterr().out)
        runs.append({k: v for k, v in res.items() if k not in ("seconds", "samples_per_second")})
    assert runs[0] == runs[1]
    assert main(["eval", model, "--data", str(xp), "--backend", "fast"]) != 0


@pytest.mark.parametrize("args,code,message", [
    (["--data", "{tmp}/missing.npy"], 1, "no data at"),
    (["--data", "{tmp}/x.npy", "--labels", "{tmp}/nope.txt"], 1, "no labels file"),
    (["--data", "{tmp}/x.npy", "--labels", "0,1"], 1, "2 labels for 20 samples"),
    (["--data", "{tmp}/x.npy", "--batch", "0"], 2, "expected a number >= 1"),
    (["--data", "{tmp}/x.npy", "--report", "{tmp}/no/such/dir/r.html"], 1, ""),
    (["--labels", "{tmp}/y.npy"], 2, "--data"),
    (["--data", "{tmp}/x.npy", "--ray", "127.0.0.1:1"], 1, "cannot reach a Ray cluster at '127.0.0.1:1'"),
])
def test_eval_errors_are_one_line(dataset, tmp_path: Path, capsys, args: list[str], code: int, message: str) -> None:
    argv = ["eval", str(model_path("person_detect")), *(a.format(tmp=tmp_path) for a in args)]
    assert main(argv) == code
    err = capsys.readouterr().err
    assert err.startswith("micronn: error: ") and err.count("\n") == 1 and message in err
