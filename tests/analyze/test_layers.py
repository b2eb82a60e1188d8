"""micronn analyze: per-operator rows whose totals agree with independent counts, the plan and the device."""

from __future__ import annotations

import csv
import io
import json

import pytest
import tflite
from conftest import ALL_MODELS, model_bytes, model_path

from micronn import analyze
from micronn.cli import main


def file_weight_bytes(data: bytes) -> int:
    """Constant bytes straight from the flatbuffer with the ``tflite`` package (not micronn's reader)."""
    m = tflite.Model.GetRootAsModel(data, 0)
    used = {m.Subgraphs(s).Tensors(i).Buffer() for s in range(m.SubgraphsLength())
            for i in range(m.Subgraphs(s).TensorsLength())}
    return sum(m.Buffers(b).DataLength() for b in used)


def conv_macs(data: bytes) -> int:
    """MACs of CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED counted from the flatbuffer's shapes."""
    m = tflite.Model.GetRootAsModel(data, 0)
    sg, total = m.Subgraphs(0), 0
    for i in range(sg.OperatorsLength()):
        op = sg.Operators(i)
        code = m.OperatorCodes(op.OpcodeIndex())
        kind = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        out = sg.Tensors(op.Outputs(0)).ShapeAsNumpy()
        if kind in (tflite.BuiltinOperator.CONV_2D, tflite.BuiltinOperator.DEPTHWISE_CONV_2D,
                    tflite.BuiltinOperator.FULLY_CONNECTED):
            w = sg.Tensors(op.Inputs(1)).ShapeAsNumpy()
            if kind == tflite.BuiltinOperator.CONV_2D:
                total += int(out.prod()) * int(w[1:].prod())
            elif kind == tflite.BuiltinOperator.DEPTHWISE_CONV_2D:
                total += int(out.prod()) * int(w[1] * w[2])
            else:
                total += int(out.prod()) * int(w[-1])
    return total


@pytest.mark.parametrize("name", ALL_MODELS)
def test_totals_match_independent_counts_and_the_plan(name: str) -> None:
    a = analyze.analyze(model_path(name))
    data = model_bytes(name)
    assert a.totals["weight_bytes"] == file_weight_bytes(data) == sum(r["weight_bytes"] for r in a.rows)
    convs = sum(r["macs"] for r in a.rows if r["op"] in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"))
    assert convs == conv_macs(data)
    plan = analyze.plan_report(model_path(name))
    assert a.memory["head_bytes"] == plan["head_bytes"] and a.memory["tail_bytes"] == plan["tail_bytes"]
    assert max(r["live_bytes"] for r in a.rows) == a.memory["lower_bound_bytes"] == plan["lower_bound_bytes"]
    assert a.memory["tflm_head_bytes"] == analyze.plan_report(model_path(name), "tflm")["head_bytes"]
    assert all(len(line) <= 120 for line in a.text().splitlines())


def test_person_detect_macs_are_the_known_figure() -> None:
    assert analyze.analyze(model_path("person_detect")).totals["macs"] == 7_157_888


def test_device_cycles_sum_to_the_device_run() -> None:
    pytest.importorskip("unicorn")
    from micronn.micro import run_model

    a = analyze.analyze(model_path("keyword_scrambled"), target="cortex-m4")
    run = run_model(model_path("keyword_scrambled"), "cortex-m4")
    assert a.totals["instructions"] == run["instructions"] == sum(r["instructions"] for r in a.rows)
    assert a.totals["cycles"] == pytest.approx(run["cycles"])


def test_cli_text_csv_and_json(capsys) -> None:
    path = str(model_path("hello_world_int8"))
    assert main(["analyze", path]) == 0
    assert "288 MACs" in capsys.readouterr().out
    assert main(["analyze", path, "--csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [r["macs"] for r in rows] == ["16", "256", "16"]
    assert main(["analyze", path, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["totals"]["operators"] == 3
    assert main(["analyze", path, "--planner", "bogus"]) == 1
    assert "unknown planner" in capsys.readouterr().err
    assert "288 MACs" in repr(analyze.analyze(path)) and "<table>" in analyze.analyze(path)._repr_html_()
