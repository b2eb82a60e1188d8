"""Cold range analysis (Algorithm 2 with the issue's fix) on hand-built graphs with known answers, and the CLI."""

from __future__ import annotations

import json

from micronn.cli import main
from micronn.testing import Graph, Op, T, graph_ir
from micronn.tinyseg import cold_ranges

Q = dict(scale=0.1, zero_point=0)


def _graph(uses: list[int], n: int = 10) -> Graph:
    """t is written by op 0 and read (by an ADD with the chain tensor) at the operators in ``uses``; the other
    operators carry a RELU chain, so operator indices are exactly as listed."""
    tensors = {"x": T((4,), "int8", **Q), "t": T((4,), "int8", **Q)}
    ops, cur = [Op("RELU", ["x"], ["t"])], "x"
    for i in range(1, n):
        tensors[f"c{i}"] = T((4,), "int8", **Q)
        ops.append(Op("ADD", [cur, "t"], [f"c{i}"]) if i in uses else Op("RELU", [cur], [f"c{i}"]))
        cur = f"c{i}"
    return Graph(tensors, ops, ["x"], [cur])


def _range(model, name: str):
    sg = model.main
    return next(c for c in cold_ranges(model) if sg.tensors[c.tensor].name == name)


def test_longest_idle_interval_is_measured_from_the_last_use():
    c = _range(graph_ir(_graph([4, 6, 9])), "t")  # idle 0..4 (4 ops), 4..6, 6..9 (3 ops)
    assert (c.start, c.end, c.last, c.length) == (0, 4, 9, 4)
    # measuring from the end of the previous range (9 - 4 = 5 > 4) would wrongly answer 6..9
    assert c.covers(2) and not c.covers(4) and not c.covers(7)


def test_later_longer_range_wins_and_ties_keep_the_first():
    assert (lambda c: (c.start, c.end))(_range(graph_ir(_graph([2, 8])), "t")) == (2, 8)
    assert (lambda c: (c.start, c.end))(_range(graph_ir(_graph([3, 6, 9])), "t")) == (0, 3)


def test_subgraph_inputs_start_before_the_first_operator_and_constants_have_none():
    m = graph_ir(_graph([5]))
    x = _range(m, "x")
    assert (x.start, x.end) == (-1, 0)
    assert _range(m, "c1").length == 1  # written by op 1, read by op 2
    assert all(not m.main.tensors[c.tensor].is_constant for c in cold_ranges(m))


def test_info_cold_ranges_json(tmp_path, capsys):
    from micronn.tflite.writer import save

    path = tmp_path / "m.tflite"
    save(graph_ir(_graph([4, 6, 9])), path)
    assert main(["info", str(path), "--cold-ranges", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    t = next(c for c in res["cold_ranges"] if c["name"] == "t")
    assert (t["start"], t["end"], t["length"], t["bytes"]) == (0, 4, 4, 4)
    assert main(["info", str(path), "--cold-ranges"]) == 0
    assert "idle after op" in capsys.readouterr().out
