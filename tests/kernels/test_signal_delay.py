"""SignalDelay against the TFLM wheel, byte for byte over sequences of invokes (it keeps the last samples): delays
shorter, equal to and longer than a frame, delay 0, leading dimensions, reset; bad models are refused."""

from __future__ import annotations

import numpy as np
import pytest
from _signal_streams import RESET, compare_streams, custom_options, stream, tflm_refuses

from micronn import Interpreter
from micronn.errors import PrepareError, UnsupportedError
from micronn.testing import T, op_model, tflm_arena


def delay_model(delay: int, shape: tuple, dtype: str = "int16", out_shape: tuple | None = None, **extra) -> bytes:
    return op_model("SignalDelay", [T(shape, dtype)], [T(out_shape or shape, dtype)],
                    custom_options=custom_options(delay_length=delay, **extra))


@pytest.mark.parametrize("delay", [0, 1, 3, 4, 9, 160])
@pytest.mark.parametrize("shape", [(1,), (4,), (3, 4), (2, 1, 5)], ids=str)
def test_matches_tflm(delay: int, shape: tuple) -> None:
    xs = stream(shape, "int16", 8, delay + len(shape))
    compare_streams(delay_model(delay, shape), [*xs, RESET, *xs[:4]])


def test_delays_each_row_along_its_last_axis() -> None:
    model = delay_model(3, (2, 2))
    it = Interpreter(model)
    xs = [np.array([[1, 2], [-1, -2]], np.int16), np.array([[3, 4], [-3, -4]], np.int16)]
    got = []
    for x in xs * 2:
        it.set_input(x, 0)
        it.invoke()
        got.append(it.get_output(0).tolist())
    assert got == [[[0, 0], [0, 0]], [[0, 1], [0, -1]], [[2, 3], [-2, -3]], [[4, 1], [-4, -1]]]
    compare_streams(model, [*xs, *xs, RESET, *xs])


def test_head_equals_tflm() -> None:
    model = delay_model(5, (3, 4))
    it = Interpreter(model, planner="tflm")
    it.allocate_tensors()
    assert it.head == tflm_arena(model)["head"]


@pytest.mark.parametrize("model,match", [
    (delay_model(-1, (4,)), "negative"),  # TFLM would write a wrapped-around count of zeros (it crashes)
    (delay_model(1, ()), "last dimension"),  # TFLM reads a dimension that is not there, and divides by it
    (delay_model(1, (3, 0)), "last dimension"),
    (delay_model(1, (4,), out_shape=(3,)), "output shape"),  # TFLM would write past it
    (delay_model(1, (2, 2), out_shape=(4,)), "output shape"),
    (delay_model(1, (4,), extra_option=2), "must hold exactly the keys"),
    (op_model("SignalDelay", [T((4,), "int16")], [T((4,), "int16")], custom_options=custom_options()),
     "missing"),
    (op_model("SignalDelay", [T((4,), "int16")], [T((4,), "int16")], custom_options=custom_options(delay_length=True)),
     "not int"),
    (op_model("SignalDelay", [T((4,), "int16")], [T((4,), "int16"), T((4,), "int16")],
              custom_options=custom_options(delay_length=1)), "one output"),
    (delay_model(2**31 - 1, (4,)), "persistent state"),  # no huge allocation
], ids=lambda v: v if isinstance(v, str) else "")
def test_rejects_bad_models(model: bytes, match: str) -> None:
    with pytest.raises(PrepareError, match=match):
        Interpreter(model).allocate_tensors()


def test_float_is_unsupported() -> None:
    model = delay_model(1, (4,), "float32")
    assert tflm_refuses(model, [])
    with pytest.raises(UnsupportedError):
        Interpreter(model)
