"""``micronn plan --plot`` on a patched model: the patches are found in the graph again, reported in the JSON (rows,
source rows, operators, peak live bytes) and drawn, and the picture's metadata counts them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import model_bytes
from test_patch_transform import chain

from micronn.cli import main
from micronn.ir import Padding
from micronn.patch import Stage, patch_stages
from micronn.patch.layout import patch_layout
from micronn.planners.plot import live_bytes
from micronn.testing import graph_ir
from micronn.tflite.reader import read
from micronn.tflite.writer import write

pytest.importorskip("matplotlib")

S = Padding.SAME


def _json(capsys, *args: str) -> dict:
    assert main([*args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _png_text(data: bytes) -> dict[str, str]:
    """The tEXt chunks of a PNG (where matplotlib writes the metadata)."""
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    out, i = {}, 8
    while i < len(data):
        n = int.from_bytes(data[i:i + 4], "big")
        kind, body = data[i + 4:i + 8], data[i + 8:i + 8 + n]
        if kind == b"tEXt":
            key, _, value = body.partition(b"\0")
            out[key.decode("latin-1")] = value.decode("latin-1")
        i += 12 + n
    return out


def test_person_detect_patches_are_drawn_and_reported(tmp_path: Path, capsys) -> None:
    src = tmp_path / "pd_patched.tflite"
    src.write_bytes(write(patch_stages(read(model_bytes("person_detect")), [Stage(0, 3, 4), Stage(4, 7, 2)])))
    png, svg = tmp_path / "plan.png", tmp_path / "plan.svg"
    res = _json(capsys, "plan", str(src), "--plot", str(png))
    assert res["plot"] == str(png)
    p = res["patches"]
    assert p["count"] == 6 and [len(st["patches"]) for st in p["stages"]] == [4, 2]
    for st in p["stages"]:
        h, src_h = st["shape"][1], st["source_shape"][1]
        rows = [r for q in st["patches"] for r in range(q["rows"][0], q["rows"][1] + 1)]
        assert rows == list(range(h))  # the stripes tile the joined output, top first
        reads = [q["source_rows"] for q in st["patches"]]
        assert reads[0][0] == 0 and reads[-1][1] == src_h - 1
        assert all(a[1] >= b[0] for a, b in zip(reads, reads[1:]))  # neighbours overlap: the halo
        assert all(0 < q["peak_live_bytes"] <= res["head_bytes"] for q in st["patches"])
    ops = [o for st in p["stages"] for q in st["patches"] for o in q["ops"]]
    assert len(ops) == len(set(ops))  # each operator belongs to one patch
    assert _png_text(png.read_bytes())["Description"].endswith("6 patches in 2 patched stages")
    assert main(["plan", str(src), "--plot", str(svg)]) == 0
    out = capsys.readouterr().out
    assert "patched stage 0: " in out and "in 4 patches" in out and f"drew {svg}" in out
    assert b"6 patches in 2 patched stages" in svg.read_bytes()


def test_patches_auto_plans_the_search_result(tmp_path: Path, capsys) -> None:
    m = graph_ir(chain([("conv", 16, 3, 1, 1, S), ("dw", 3, 2, 1, S), ("conv", 4, 1, 1, 1, S)], h=24, w=12, c=3))
    src = tmp_path / "m.tflite"
    src.write_bytes(write(m))
    plain = _json(capsys, "plan", str(src))
    assert "patches" not in plain and "patch_search" not in plain
    assert _json(capsys, "plan", str(src), "--patches", "off") == plain
    res = _json(capsys, "plan", str(src), "--patches", "auto", "--max-extra-macs", "0.5",
                "--plot", str(tmp_path / "p.html"))
    assert res["patch_search"]["after"]["stripes"] > 0
    assert res["total_bytes"] < plain["total_bytes"]
    assert res["patches"]["count"] == sum(len(st["split"]) if isinstance(st["split"], list) else st["split"]
                                          for st in res["patch_search"]["after"]["stages"])
    assert b"patches in" in (tmp_path / "p.html").read_bytes()


def test_unpatched_models_show_no_patches(tmp_path: Path) -> None:
    assert patch_layout(read(model_bytes("person_detect"))) == []
    from micronn.analyze import plan_report

    png = tmp_path / "plain.png"
    res = plan_report(model_bytes("hello_world_int8"), plot=str(png))
    assert "patches" not in res and "Description" not in _png_text(png.read_bytes())


def test_live_bytes_counts_shared_bytes_once() -> None:
    bufs = [{"offset": 0, "size": 100, "first": 0, "last": 3}, {"offset": 50, "size": 100, "first": 1, "last": 2},
            {"offset": 300, "size": 10, "first": 2, "last": 5}]
    assert [live_bytes(bufs, t) for t in range(7)] == [100, 150, 160, 110, 10, 10, 0]
