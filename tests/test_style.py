"""The code base stays ruff-clean and layered (ruff and import-linter are part of the test extra)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff is not installed (pip install micronn[test])")
def test_ruff_clean() -> None:
    res = subprocess.run(["ruff", "check", "micronn", "tests", "benchmarks"], cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def test_imports_follow_the_layers() -> None:
    """pyproject.toml's import-linter contracts: imports only go down the layers, no package has an import cycle,
    and only micronn.testing touches the TFLM wheel."""
    from importlinter.cli import lint_imports

    assert lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True) == 0
