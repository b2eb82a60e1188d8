"""Plan pictures in png, svg and self-contained html."""

from __future__ import annotations

import pytest
from conftest import model_bytes

from micronn import MicronnError
from micronn.analyze import plan_report as plan

pytest.importorskip("matplotlib")


@pytest.mark.parametrize("ext", ["png", "svg", "html"])
def test_plot_formats(tmp_path, ext: str) -> None:
    path = tmp_path / f"plan.{ext}"
    res = plan(model_bytes("person_detect"), plot=str(path), compare="tflm")
    data = path.read_bytes()
    assert res["plot"] == str(path) and len(data) > 1000
    if ext == "png":
        assert data.startswith(b"\x89PNG")
    else:
        assert b"<svg" in data


def test_unknown_format_is_a_clear_error(tmp_path) -> None:
    with pytest.raises(MicronnError, match="use .png, .svg or .html"):
        plan(model_bytes("hello_world_int8"), plot=str(tmp_path / "plan.gif"))
