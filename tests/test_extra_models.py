"""Models beyond the bundled ones (built by tools/make_models.py): byte-identical, TFLM's head, never above it."""

from __future__ import annotations

from pathlib import Path

import pytest

from micronn import Interpreter
from micronn.testing import assert_same_as_tflm, tflm_arena

EXTRA = sorted((Path(__file__).parent / "models").glob("*.tflite"))


@pytest.mark.parametrize("path", EXTRA, ids=[p.stem for p in EXTRA])
def test_identical_and_heads(path: Path) -> None:
    data = path.read_bytes()
    assert_same_as_tflm(data, seed=2, runs=2)
    theirs = tflm_arena(data)["head"]
    exact = Interpreter(data, planner="tflm")
    exact.allocate_tensors()
    ours = Interpreter(data)
    ours.allocate_tensors()
    ours.plan.check()
    assert exact.head == theirs and ours.head <= theirs
