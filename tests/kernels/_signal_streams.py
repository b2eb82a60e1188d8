"""Helpers shared by the tests of TFLM's streaming signal ops (SignalFramer, SignalOverlapAdd, SignalStacker,
SignalDelay): feed both interpreters the same sequence of invokes (and resets) and compare every output byte
that TFLM defines.

The framer and the stacker leave their frames output untouched on invokes that have no frame ready; the wheel's
arena starts with whatever its heap held (a previous interpreter's bytes), micronn's with zeros, so elements
that TFLM has not written yet since it was created are not compared. Elements written once stay comparable:
both keep them until the op writes them again (a one-operator model has nothing else in that memory).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from micronn.kernels._custom_options import custom_options
from micronn.testing import TflmError, _micronn, _Tflm, assert_identical

RESET = "reset"
Written = Callable[[int, list[np.ndarray]], np.ndarray | None]

__all__ = ["RESET", "custom_options", "compare_streams", "stream"]


def stream(shape: Sequence[int], dtype: str, count: int, seed: int = 0) -> list[np.ndarray]:
    """``count`` random inputs: the full int16 range, or float32 values around 1 with a wide spread."""
    rng = np.random.default_rng(seed)
    if dtype == "int16":
        return [rng.integers(-32768, 32768, tuple(shape)).astype(np.int16) for _ in range(count)]
    return [(rng.standard_normal(tuple(shape)) * 10.0 ** rng.integers(-3, 4, tuple(shape))).astype(np.float32)
            for _ in range(count)]


def compare_streams(model: bytes, steps: Sequence[np.ndarray | str], written: Written | None = None) -> int:
    """Run ``steps`` (inputs of one invoke each, or RESET) on TFLM and micronn, one interpreter each, comparing
    all outputs after every invoke. ``written(k, tflm_outputs)`` gives the mask of output 0's elements TFLM wrote
    in invoke ``k`` (None: all of them). Returns how many invokes had a valid output (output 1, when there is one)
    so tests can check they exercised it."""
    tflm, mine = _Tflm(model), _micronn(model)
    seen: np.ndarray | None = None
    valid = invoke = 0
    for step in steps:
        if isinstance(step, str):
            assert step == RESET
            tflm._call("resetting", tflm.it.reset)
            mine.reset()
            continue
        expected = tflm.run([step])
        mine.set_input(step, 0)
        mine.invoke()
        actual = [np.array(mine.get_output(i), copy=True) for i in range(tflm.n_outputs)]
        new = np.ones(expected[0].shape, bool) if written is None else written(invoke, expected)
        seen = new if seen is None else seen | new
        assert_identical(actual[0][seen], expected[0][seen], f"invoke {invoke}, output 0 (elements TFLM wrote)")
        assert actual[0].shape == expected[0].shape and actual[0].dtype == expected[0].dtype
        for i in range(1, len(expected)):
            assert_identical(actual[i], expected[i], f"invoke {invoke}, output {i}")
        if len(expected) > 1:
            valid += bool(expected[1])
        invoke += 1
    return valid


def tflm_refuses(model: bytes, steps: Sequence[np.ndarray]) -> bool:
    """Whether the wheel fails creating the interpreter or invoking it on ``steps``."""
    try:
        tflm = _Tflm(model)
        for x in steps:
            tflm.run([x])
    except TflmError:
        return True
    return False
