"""``micronn optimize --patches auto|off --max-extra-macs X``: off is TinySeg alone, byte for byte; auto writes a
patched model that computes the original's bytes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import model_path
from test_patch_transform import chain, outputs

from micronn import Interpreter
from micronn.cli import main
from micronn.ir import Padding, random_inputs
from micronn.storage import MemoryStorage
from micronn.testing import graph_ir
from micronn.tflite.reader import read
from micronn.tflite.writer import write

HELLO = str(model_path("hello_world_int8"))
S = Padding.SAME
LAYERS = [("conv", 16, 3, 1, 1, S), ("dw", 3, 1, 1, S), ("conv", 16, 1, 1, 1, S), ("dw", 3, 2, 1, S),
          ("conv", 4, 1, 1, 1, S)]


def _json(capsys, *args: str) -> dict:
    assert main([*args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_patches_off_is_tinyseg_alone(capsys) -> None:
    plain = _json(capsys, "optimize", HELLO)
    assert _json(capsys, "optimize", HELLO, "--patches", "off") == plain
    assert "patches" not in plain


def test_patches_auto_writes_a_smaller_identical_model(tmp_path: Path, capsys) -> None:
    m = graph_ir(chain(LAYERS, h=40, w=24, c=3))
    src, out = tmp_path / "m.tflite", tmp_path / "patched.tflite"
    src.write_bytes(write(m))
    res = _json(capsys, "optimize", str(src), "-o", str(out), "--patches", "auto", "--max-extra-macs", "0.5")
    assert res["verified"] and res["patches"]["used"] and res["patches"]["extra_macs_pct"] <= 50
    assert res["after"]["total_bytes"] < _json(capsys, "optimize", str(src))["after"]["total_bytes"]
    assert "+ patches" in [s["name"] for s in res["steps"]]
    patched = read(out.read_bytes())
    assert "CONCATENATION" in patched.op_names()
    xs = random_inputs(m, 5)
    it = Interpreter(patched, storage=MemoryStorage())  # TinySeg may have spilled a tensor too
    for i, x in enumerate(xs):
        it.set_input(x, i)
    it.invoke()
    assert [it.get_output(i).tobytes() for i in range(len(m.main.outputs))] == outputs(m, xs)
    assert main(["optimize", str(src), "--patches", "auto", "--max-extra-macs", "0"]) == 0
    assert "patches (" in capsys.readouterr().out


@pytest.mark.parametrize("args", [["--patches", "maybe"], ["--max-extra-macs", "-1"], ["--max-extra-macs", "x"],
                                  ["--max-extra-macs", "inf"]])
def test_bad_patch_options_are_usage_errors(args: list[str], capsys) -> None:
    assert main(["optimize", HELLO, *args]) == 2
    assert "micronn: error" in capsys.readouterr().err


def test_report_needs_patches_off(tmp_path: Path, capsys) -> None:
    assert main(["optimize", HELLO, "--patches", "auto", "--report", str(tmp_path / "r.html")]) == 1
    assert "--patches off" in capsys.readouterr().err
