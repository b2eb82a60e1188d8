"""SignalFramer against the TFLM wheel, byte for byte over sequences of invokes (the framer keeps past samples):
frame sizes below, at and above the step, prefill or not, leading dimensions, several frames per invoke, reset;
bad models are refused at prepare."""

from __future__ import annotations

import numpy as np
import pytest
from _signal_streams import RESET, compare_streams, custom_options, stream, tflm_refuses

from micronn import Interpreter
from micronn.errors import PrepareError, UnsupportedError
from micronn.testing import T, op_model, run_micronn, run_tflm, tflm_arena


def framer_model(size: int, step: int, prefill: bool | int, lead: tuple = (), n_frames: int = 1,
                 dtype: str = "int16", out_shape: tuple | None = None, **extra) -> bytes:
    shape = (*lead, n_frames * step)
    out = out_shape if out_shape is not None else (*lead, n_frames, size)
    return op_model("SignalFramer", [T(shape, dtype)], [T(out, dtype), T((), "bool")],
                    custom_options=custom_options(frame_size=size, frame_step=step, prefill=prefill, **extra))


def check(size: int, step: int, prefill: bool, lead: tuple = (), n_frames: int = 1, invokes: int = 8,
          seed: int = 0) -> int:
    """Compare a run of ``invokes`` invokes, a reset, and half as many again; returns the valid invokes."""
    xs = stream((*lead, n_frames * step), "int16", invokes, seed)
    steps = [*xs, RESET, *xs[: invokes // 2]]
    silent = 0 if prefill else -(-size // step) - 1  # pieces of frame_step that complete no frame
    masks, pieces = [], 0
    for s in steps:
        if isinstance(s, str):
            pieces = 0
            continue
        mask = np.zeros((*lead, n_frames, size), bool)
        mask[..., max(silent - pieces, 0):, :] = True  # the frames TFLM writes in this invoke
        masks.append(mask)
        pieces += n_frames
    return compare_streams(framer_model(size, step, prefill, lead, n_frames), steps, lambda k, _: masks[k])


@pytest.mark.parametrize("prefill", [False, True])
@pytest.mark.parametrize("size,step", [(1, 1), (4, 4), (5, 2), (6, 2), (7, 3), (400, 160), (3, 1), (9, 4)], ids=str)
def test_matches_tflm(size: int, step: int, prefill: bool) -> None:
    assert check(size, step, prefill, invokes=max(8, -(-size // step) + 4)) > 0


@pytest.mark.parametrize("size,step", [(1, 3), (2, 5), (3, 4)], ids=str)
def test_frame_shorter_than_step_keeps_the_start_of_each_step(size: int, step: int) -> None:
    """Without prefill, a frame size below the step is allowed: every step yields its first samples."""
    assert check(size, step, False, (2,), 3) > 0


@pytest.mark.parametrize("prefill", [False, True])
@pytest.mark.parametrize("lead,n_frames", [((), 3), ((3,), 2), ((2, 3), 4), ((1, 1, 2), 1)], ids=str)
def test_leading_dimensions_and_several_frames_per_invoke(lead: tuple, n_frames: int, prefill: bool) -> None:
    """Every leading row is its own stream; an invoke whose first frames are not ready yet still writes its later
    ones (output valid is false for it)."""
    check(7, 2, prefill, lead, n_frames, invokes=6, seed=len(lead) + n_frames)


def test_partly_valid_invoke() -> None:
    """Four pieces in one invoke, the first two completing no frame: the last two frames are written anyway."""
    model = framer_model(5, 2, False, (), 4)
    x = np.arange(1, 9, dtype=np.int16)
    expected, actual = run_tflm(model, [x]), run_micronn(model, [x])
    assert not expected[1] and not actual[1]
    assert actual[0][2:].tobytes() == expected[0][2:].tobytes()
    assert actual[0][2:].tolist() == [[1, 2, 3, 4, 5], [3, 4, 5, 6, 7]]


def test_prefill_given_as_int() -> None:
    """Converters may write the flag as an int; TFLM reads any nonzero int as true."""
    xs = stream((4,), "int16", 4, 3)
    assert compare_streams(framer_model(6, 2, 1, (), 2), xs) == 4
    assert compare_streams(framer_model(6, 2, 0, (), 2), xs, lambda k, _: np.full((2, 6), k > 0)) == 3


def test_interpreter_reset_restores_prefill() -> None:
    model = framer_model(4, 2, True, (), 1)
    it = Interpreter(model)
    x = np.array([1, 2], np.int16)
    first = [it.set_input(x, 0) or it.invoke() or it.get_output(0).copy() for _ in range(2)]
    it.reset()
    it.set_input(x, 0)
    it.invoke()
    assert first[0].tolist() == [[0, 0, 1, 2]] and first[1].tolist() == [[1, 2, 1, 2]]
    assert it.get_output(0).tolist() == first[0].tolist()


def test_head_equals_tflm() -> None:
    model = framer_model(5, 2, True, (2,), 4)
    it = Interpreter(model, planner="tflm")
    it.allocate_tensors()
    assert it.head == tflm_arena(model)["head"]


@pytest.mark.parametrize("model,match", [
    (framer_model(2, 0, False, out_shape=(1, 2)), "at least 1"),  # TFLM divides by zero
    (op_model("SignalFramer", [T((4,), "int16")], [T((1, 2), "int16"), T((), "bool")],
              custom_options=custom_options(frame_size=2, frame_step=-2, prefill=False)), "at least 1"),
    (framer_model(0, 2, False), "at least 1"),
    (framer_model(2, 4, True), "prefill"),  # TFLM would write a wrapped-around count of zeros
    (op_model("SignalFramer", [T((5,), "int16")], [T((2, 2), "int16"), T((), "bool")],
              custom_options=custom_options(frame_size=2, frame_step=2, prefill=False)), "multiple"),
    (op_model("SignalFramer", [T((2,), "int16")], [T((0, 4), "int16"), T((), "bool")],
              custom_options=custom_options(frame_size=4, frame_step=4, prefill=False)), "multiple"),
    (framer_model(3, 2, False, (), 2, out_shape=(2, 2)), "output shape"),  # TFLM would write past it
    (framer_model(3, 2, False, (2,), 2, out_shape=(4, 3)), "output shape"),
    (framer_model(3, 2, False, aa=1), "must hold exactly the keys"),  # TFLM would read frame_size from 'aa'
    (op_model("SignalFramer", [T((4,), "int16")], [T((2, 2), "int16"), T((), "bool")],
              custom_options=custom_options(frame_size=2, frame_step=2)), "missing"),
    (op_model("SignalFramer", [T((4,), "int16")], [T((2, 2), "int16"), T((), "bool")],
              custom_options=custom_options(frame_size=2.0, frame_step=2, prefill=False)), "not int"),
    (op_model("SignalFramer", [T((4,), "int16")], [T((2, 2), "int16"), T((2,), "bool")],
              custom_options=custom_options(frame_size=2, frame_step=2, prefill=False)), "0-D"),
    (op_model("SignalFramer", [T((4,), "int16")], [T((2, 2), "int16"), T((), "int16")],
              custom_options=custom_options(frame_size=2, frame_step=2, prefill=False)), "bool"),
    (op_model("SignalFramer", [T((4,), "int16")], [T((2, 2), "int16")],
              custom_options=custom_options(frame_size=2, frame_step=2, prefill=False)), "two outputs"),
    (op_model("SignalFramer", [T((4,), "int16")], [T((2, 2), "int16"), T((), "bool")], custom_options=b"\x01"),
     "FlexBuffer"),
    (framer_model(2**31 - 1, 1, False, out_shape=(1, 1)), "persistent state"),  # no huge allocation
], ids=lambda v: v if isinstance(v, str) else "")
def test_rejects_bad_models(model: bytes, match: str) -> None:
    with pytest.raises(PrepareError, match=match):
        Interpreter(model).allocate_tensors()


@pytest.mark.parametrize("model", [
    op_model("SignalFramer", [T((5,), "int16")], [T((2, 2), "int16"), T((), "bool")],
             custom_options=custom_options(frame_size=2, frame_step=2, prefill=False)),
    op_model("SignalFramer", [T((2,), "int16")], [T((0, 4), "int16"), T((), "bool")],
             custom_options=custom_options(frame_size=4, frame_step=4, prefill=False)),
], ids=["step does not divide", "fewer samples than a step"])
def test_tflm_refuses_them_too(model: bytes) -> None:
    assert tflm_refuses(model, [])


def test_float_is_unsupported() -> None:
    model = framer_model(2, 2, False, dtype="float32")
    assert tflm_refuses(model, [])
    with pytest.raises(UnsupportedError):
        Interpreter(model)
