"""TFLM's whole arena on the host wheel and on a 32-bit Cortex-M (micronn.footprint)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from micronn import Interpreter
from micronn.footprint import POINTER_SHRINK, estimate_tflm_tail, tflm_footprint
from micronn.testing import T, measured_tflm_footprint, op_model, tflm_arena
from micronn.tflite import schema

MODELS = Path(__file__).parent.parent / "micronn" / "models"
SHARED = Path(__file__).parent.parent.parent / "shared" / "models"
ALL = sorted(MODELS.glob("*.tflite")) + sorted((Path(__file__).parent / "models").glob("*.tflite"))


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.stem)
def test_host_tail_is_the_wheels_and_the_estimate_is_close(path: Path) -> None:
    data = path.read_bytes()
    f = measured_tflm_footprint(data)
    assert f["host"]["measured"] and f["host"]["tail_bytes"] == tflm_arena(data)["tail"]
    assert f["head_bytes"] == tflm_arena(data)["head"]  # planner="tflm": TFLM's own head
    # the per-op constants were fitted on these models: this checks the fit, the held-out test below the model
    assert abs(estimate_tflm_tail(data) - f["host"]["tail_bytes"]) <= 0.01 * f["host"]["tail_bytes"]


def _conv(cout: int) -> bytes:
    rng = np.random.default_rng(cout)
    q = dict(scale=0.05, zero_point=0)
    return op_model("CONV_2D", [T((1, 12, 12, 3), "int8", **q),
                                T((cout, 3, 3, 3), "int8", data=rng.integers(-9, 9, (cout, 3, 3, 3)),
                                  scale=[0.01] * cout, zero_point=[0] * cout),
                                T((cout,), "int32", data=np.zeros(cout), scale=[0.0005] * cout, zero_point=[0] * cout)],
                    [T((1, 12, 12, cout), "int8", **q)], schema.options("CONV_2D", stride_w=1, stride_h=1))


@pytest.mark.parametrize("cout", [4, 16])
def test_estimate_on_models_it_was_not_fitted_to(cout: int) -> None:
    data = _conv(cout)
    assert abs(estimate_tflm_tail(data) - tflm_arena(data)["tail"]) <= 0.05 * tflm_arena(data)["tail"]


def test_cortex_m_tail_shrinks_exactly_the_pointer_structures() -> None:
    """person_detect: 89 tensors, 31 operators, 2 quantized I/O tensors."""
    f = measured_tflm_footprint(MODELS / "person_detect.tflite")
    shrink = 89 * 12 + 31 * 32 + 2 * POINTER_SHRINK["TfLiteTensor"] + 2 * POINTER_SHRINK["TfLiteAffineQuantization"]
    assert f["host"]["tail_bytes"] == 29_968
    assert f["cortex_m"]["tail_bytes"] == 29_968 - shrink == 27_828
    assert f["cortex_m"]["total_bytes_low"] < f["cortex_m"]["total_bytes"] < f["host"]["total_bytes"]


def test_the_library_answers_from_its_own_model() -> None:
    """micronn.footprint never asks the wheel: the same figure on every install, marked as estimated."""
    it = Interpreter(MODELS / "person_detect.tflite")
    f = tflm_footprint(it)
    assert not f["host"]["measured"] and f["head_bytes"] == it.head
    assert f["host"]["tail_bytes"] == estimate_tflm_tail(it)
