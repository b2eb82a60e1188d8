"""Progress bars: on a terminal only, never under --json or --quiet, and gone when the work is done."""

from __future__ import annotations

import sys

import pytest
from conftest import model_path

from micronn import progress
from micronn.cli import main


def test_bar_shows_on_a_terminal_only(capsys, monkeypatch) -> None:
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    with progress.bar("work", 3) as b:
        b.update()
    assert "work" not in capsys.readouterr().err
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    with progress.bar("work", 3) as b:
        b.update()
    assert "work" in capsys.readouterr().err


@pytest.mark.parametrize("flags,shown", [([], True), (["--json"], False), (["--quiet"], False)])
def test_cli_bars(capsys, monkeypatch, tmp_path, flags: list[str], shown: bool) -> None:
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)  # the stream capsys installed for the call
    argv = ["reorder", str(model_path("hello_world_int8")), "-o", str(tmp_path / "r.tflite")]
    quiet = [f for f in flags if f == "--quiet"]
    assert main(quiet + argv + [f for f in flags if f != "--quiet"]) == 0
    assert ("reorder: states searched" in capsys.readouterr().err) == shown
