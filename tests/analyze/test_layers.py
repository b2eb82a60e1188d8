"""micronn analyze: per-operator rows whose totals agree with independent counts, the plan and the device."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest
import tflite
from conftest import ALL_MODELS, model_path

from micronn import analyze, read
from micronn.cli import main


def file_weight_bytes(data: bytes) -> int:
    """Constant bytes straight from the flatbuffer with the ``tflite`` package (not micronn's reader)."""
    m = tflite.Model.GetRootAsModel(data, 0)
    used = {m.Subgraphs(s).Tensors(i).Buffer() for s in range(m.SubgraphsLength())
            for i in range(m.Subgraphs(s).TensorsLength())}
    return sum(m.Buffers(b).DataLength() for b in used)


def file_macs(data: bytes) -> int:
    """MACs of every op with a matrix product, counted from the flatbuffer's shapes (not micronn's IR)."""
    m = tflite.Model.GetRootAsModel(data, 0)
    sg, total, ops = m.Subgraphs(0), 0, tflite.BuiltinOperator

    def shape(i: int) -> np.ndarray:
        return sg.Tensors(i).ShapeAsNumpy() if i >= 0 else np.zeros(0, np.int32)

    def size(i: int) -> int:
        return int(np.prod(shape(i))) if i >= 0 else 0

    for k in range(sg.OperatorsLength()):
        op = sg.Operators(k)
        code = m.OperatorCodes(op.OpcodeIndex())
        kind = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        ins = [op.Inputs(j) for j in range(op.InputsLength())]
        out = size(op.Outputs(0))
        if kind == ops.CONV_2D:
            total += out * int(shape(ins[1])[1:].prod())
        elif kind == ops.DEPTHWISE_CONV_2D:
            total += out * int(shape(ins[1])[1] * shape(ins[1])[2])
        elif kind == ops.FULLY_CONNECTED:
            total += out * int(shape(ins[1])[-1])
        elif kind == ops.TRANSPOSE_CONV:
            total += size(ins[2]) * int(shape(ins[1])[:3].prod())
        elif kind == ops.BATCH_MATMUL:
            opts = tflite.BatchMatMulOptions()
            opts.Init(op.BuiltinOptions().Bytes, op.BuiltinOptions().Pos)
            total += out * int(shape(ins[0])[-2 if opts.AdjX() else -1])
        elif kind == ops.SVDF:
            total += size(ins[0]) // int(shape(ins[0])[-1]) * (size(ins[1]) + size(ins[2]))
        elif kind == ops.UNIDIRECTIONAL_SEQUENCE_LSTM:
            weights = sum(size(i) for i in ins[1:9]) + (size(ins[16]) if len(ins) > 16 else 0)
            total += size(ins[0]) // int(shape(ins[0])[-1]) * weights
    return total


MODELS = [model_path(n) for n in ALL_MODELS] + sorted((Path(__file__).parents[1] / "models").glob("*.tflite"))


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.stem)
def test_totals_match_independent_counts_and_the_plan(path: Path) -> None:
    a = analyze.analyze(path)
    data = path.read_bytes()
    assert a.totals["weight_bytes"] == file_weight_bytes(data)
    assert a.totals["macs"] == file_macs(data)
    if all(len(sg.operators) == 0 for sg in read(data).subgraphs[1:]):  # rows count the main subgraph's readers
        assert a.totals["weight_bytes"] == sum(r["weight_bytes"] for r in a.rows)
    plan = analyze.plan_report(path)
    assert a.memory["head_bytes"] == plan["head_bytes"] and a.memory["tail_bytes"] == plan["tail_bytes"]
    assert max(r["live_bytes"] for r in a.rows) == a.memory["lower_bound_bytes"] == plan["lower_bound_bytes"]
    assert a.memory["tflm_head_bytes"] == analyze.plan_report(path, "tflm")["head_bytes"]
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
