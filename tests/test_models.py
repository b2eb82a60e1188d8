"""Every bundled real model runs byte-identically to the TFLM wheel, with TFLM's planned head bytes."""

from __future__ import annotations

import pytest
from conftest import ALL_MODELS, TFLM_HEAD, model_bytes

from micronn import Interpreter
from micronn.testing import assert_identical, assert_same_as_tflm, random_inputs, run_tflm, tflm_arena


@pytest.mark.parametrize("name", ALL_MODELS)
def test_outputs_identical_to_tflm(name: str) -> None:
    assert_same_as_tflm(model_bytes(name), seed=1, runs=3)


@pytest.mark.parametrize("name", ALL_MODELS)
def test_head_equals_tflm(name: str) -> None:
    it = Interpreter(model_bytes(name), planner="tflm")
    it.allocate_tensors()
    assert it.head == TFLM_HEAD[name]


@pytest.mark.parametrize("name", ALL_MODELS)
def test_tflm_planner_outputs_identical(name: str) -> None:
    """The default config shares memory; TFLM's exact plan must compute the same bytes too."""
    data = model_bytes(name)
    xs = random_inputs(data, 5)
    it = Interpreter(data, planner="tflm")
    for i, x in enumerate(xs):
        it.set_input(x, i)
    it.invoke()
    for i, y in enumerate(run_tflm(data, xs)):
        assert_identical(it.get_output(i), y, f"output {i}")


@pytest.mark.parametrize("name", ["person_detect", "keyword_scrambled"])
def test_head_equals_wheel_measured_now(name: str) -> None:
    """The table above is what the wheel measures in this very run, not just a remembered number."""
    it = Interpreter(model_bytes(name), planner="tflm")
    it.allocate_tensors()
    assert it.head == tflm_arena(model_bytes(name))["head"]
