"""SignalStacker against the TFLM wheel, byte for byte over sequences of invokes (it queues past frames): contexts
and steps of every size up to left + right + 1, the first frame's padding, reset; bad models are refused."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from _signal_streams import RESET, compare_streams, custom_options, stream, tflm_refuses

from micronn import Interpreter
from micronn.errors import PrepareError, UnsupportedError
from micronn.testing import T, op_model, tflm_arena


def stacker_model(channels: int, left: int, right: int, step: int, dtype: str = "int16",
                  in_shape: tuple | None = None, out_shape: tuple | None = None, **extra) -> bytes:
    depth = left + right + 1
    options = custom_options(num_channels=channels, stacker_left_context=left, stacker_right_context=right,
                             stacker_step=step, **extra)
    return op_model("SignalStacker", [T(in_shape or (channels,), dtype)],
                    [T(out_shape or (channels * depth,), dtype), T((), "bool")], custom_options=options)


def written_when_valid(k: int, expected: list[np.ndarray]) -> np.ndarray:
    """TFLM writes the stacked frames only on valid invokes."""
    return np.full(expected[0].shape, bool(expected[1]))


CASES = [(c, left, right, step) for c, left, right in itertools.product([1, 3], [0, 1, 3], [0, 2])
         for step in sorted({1, 2, left + right + 1}) if step <= left + right + 1]


@pytest.mark.parametrize("channels,left,right,step", CASES, ids=str)
def test_matches_tflm(channels: int, left: int, right: int, step: int) -> None:
    xs = stream((channels,), "int16", 12, channels + 7 * left + 3 * right + step)
    steps = [*xs, RESET, *xs[:7], RESET, xs[0]]
    assert compare_streams(stacker_model(channels, left, right, step), steps, written_when_valid) > 0


def test_first_frame_pads_the_left_context() -> None:
    """The first frame goes in left + 1 times: with left 2 and right 1 the second invoke is already valid."""
    model = stacker_model(2, 2, 1, 1)
    frames = [np.array([i, -i], np.int16) for i in range(1, 5)]
    assert compare_streams(model, frames, written_when_valid) == 3
    it = Interpreter(model)
    got = []
    for f in frames[:3]:
        it.set_input(f, 0)
        it.invoke()
        got.append((bool(it.get_output(1)), it.get_output(0).tolist()))
    assert not got[0][0]
    assert got[1:] == [(True, [1, -1, 1, -1, 1, -1, 2, -2]), (True, [1, -1, 1, -1, 2, -2, 3, -3])]


def test_head_equals_tflm() -> None:
    model = stacker_model(4, 2, 1, 2)
    it = Interpreter(model, planner="tflm")
    it.allocate_tensors()
    assert it.head == tflm_arena(model)["head"]


@pytest.mark.parametrize("model,match", [
    (stacker_model(2, 1, 1, 0), "stacker_step 0"),  # TFLM would overwrite frames it has not output
    (stacker_model(1, 0, 0, 2), "stacker_step 2"),  # TFLM would lose track of its queue
    (stacker_model(2, 1, 1, 4), "stacker_step 4"),
    (stacker_model(0, 1, 1, 1, in_shape=(1,), out_shape=(1,)), "num_channels"),
    (stacker_model(2, -1, 1, 1, out_shape=(2,)), "contexts"),
    (stacker_model(2, 1, -2, 1, out_shape=(2,)), "contexts"),
    (stacker_model(2, 1, 1, 1, in_shape=(3,)), "input shape"),  # TFLM reads exactly num_channels values
    (stacker_model(2, 1, 1, 1, in_shape=(1,)), "input shape"),
    (stacker_model(2, 1, 1, 1, in_shape=(1, 2)), "input shape"),
    (stacker_model(2, 1, 1, 1, out_shape=(4,)), "output shape"),  # TFLM writes exactly 6 values
    (stacker_model(2, 1, 1, 1, zz=0), "must hold exactly the keys"),
    (op_model("SignalStacker", [T((2,), "int16")], [T((6,), "int16"), T((), "bool")],
              custom_options=custom_options(num_channels=2, stacker_left_context=1, stacker_step=1)), "missing"),
    (op_model("SignalStacker", [T((2,), "int16")], [T((6,), "int16"), T((1,), "bool")],
              custom_options=custom_options(num_channels=2, stacker_left_context=1, stacker_right_context=1,
                                            stacker_step=1)), "0-D"),
    (stacker_model(2**30, 2**20, 0, 1, in_shape=(1,), out_shape=(1,)), "persistent state"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_rejects_bad_models(model: bytes, match: str) -> None:
    with pytest.raises(PrepareError, match=match):
        Interpreter(model).allocate_tensors()


def test_tflm_refuses_two_dimensional_input() -> None:
    assert tflm_refuses(stacker_model(2, 1, 1, 1, in_shape=(1, 2)), [])


def test_float_is_unsupported() -> None:
    model = stacker_model(2, 1, 1, 1, dtype="float32")
    assert tflm_refuses(model, [])
    with pytest.raises(UnsupportedError):
        Interpreter(model)
