"""SignalOverlapAdd against the TFLM wheel, byte for byte over sequences of invokes (the accumulator carries over):
int16 (saturating) and float32 (NaN payloads, infinities, signed zeros), steps from 1 to the frame size, leading
dimensions, several frames per invoke, reset; bad models are refused at prepare."""

from __future__ import annotations

import numpy as np
import pytest
from _signal_streams import RESET, compare_streams, custom_options, stream, tflm_refuses

from micronn import Interpreter
from micronn.errors import PrepareError, UnsupportedError
from micronn.testing import T, op_model, run_tflm, tflm_arena

TYPE_CODE = {"float32": 0, "int16": 7}


def ola_model(dtype: str, size: int, step: int, lead: tuple = (), n_frames: int = 1, code: int | None = None,
              out_shape: tuple | None = None, **extra) -> bytes:
    out = out_shape if out_shape is not None else (*lead, n_frames * step)
    options = custom_options(T=TYPE_CODE[dtype] if code is None else code, frame_step=step, **extra)
    return op_model("SignalOverlapAdd", [T((*lead, n_frames, size), dtype)], [T(out, dtype)],
                    custom_options=options)


def check(dtype: str, size: int, step: int, lead: tuple = (), n_frames: int = 1, invokes: int = 6,
          seed: int = 0) -> None:
    xs = stream((*lead, n_frames, size), dtype, invokes, seed)
    compare_streams(ola_model(dtype, size, step, lead, n_frames), [*xs, RESET, *xs[: invokes // 2]])


@pytest.mark.parametrize("dtype", ["int16", "float32"])
@pytest.mark.parametrize("size,step", [(1, 1), (4, 4), (4, 1), (5, 2), (8, 3), (400, 160), (9, 4)], ids=str)
def test_matches_tflm(dtype: str, size: int, step: int) -> None:
    check(dtype, size, step)


@pytest.mark.parametrize("dtype", ["int16", "float32"])
@pytest.mark.parametrize("lead,n_frames", [((), 3), ((3,), 2), ((2, 3), 4), ((1, 2, 1), 1)], ids=str)
def test_leading_dimensions_and_several_frames_per_invoke(dtype: str, lead: tuple, n_frames: int) -> None:
    check(dtype, 6, 2, lead, n_frames, seed=len(lead) + n_frames)


def test_int16_saturates_at_every_add() -> None:
    """The sum is clamped at each frame's add, so the order of the adds shows: 32767 + 1 - 1 gives 32766."""
    model = ola_model("int16", 3, 1, (), 3)
    x = np.array([[5, 0, 32767], [0, 1, 0], [-1, 0, 0]], np.int16)
    assert run_tflm(model, [x])[0].tolist() == [5, 0, 32766]
    top = np.full((3, 3), 32767, np.int16)
    top[1:] = [[1, 1, -1], [-1, -1, 1]]
    low = np.full((3, 3), -32768, np.int16)
    low[1:] = [[-1, 1, -1], [32767, -32768, 1]]
    compare_streams(model, [x, top, low, top, top, x, np.zeros((3, 3), np.int16)])


def test_float_special_values() -> None:
    """NaN payloads (the accumulator's wins over the frame's when both are NaN), inf - inf, overflow to inf,
    signed zeros (the accumulator starts at +0.0 and its shifted-in tail is +0.0)."""
    bits = np.array([[0x7FC00001, 0xFFC00002, 0x7F800000, 0x80000000],
                     [0x7FC00003, 0x7F800001, 0xFF800000, 0x80000000]], np.uint32)
    a = bits.view(np.float32)
    b = np.array([[0, 0, 0, 0], [3e38, 3e38, -0.0, -0.0]], np.float32)
    b.view(np.uint32)[0] = [0xFFC00005, 0x7FC00006, 0x7FC00007, 0x80000000]
    model = ola_model("float32", 4, 2, (), 2)
    compare_streams(model, [a, b, -a, b, a, np.full((2, 4), -0.0, np.float32)])


def test_interpreter_reset_zeroes_the_accumulator() -> None:
    model = ola_model("int16", 4, 2)
    it = Interpreter(model)
    x = np.array([[1, 2, 3, 4]], np.int16)
    outs = []
    for reset in (False, False, True):
        if reset:
            it.reset()
        it.set_input(x, 0)
        it.invoke()
        outs.append(it.get_output(0).tolist())
    assert outs == [[1, 2], [4, 6], [1, 2]]


def test_head_equals_tflm() -> None:
    model = ola_model("float32", 6, 2, (3,), 2)
    it = Interpreter(model, planner="tflm")
    it.allocate_tensors()
    assert it.head == tflm_arena(model)["head"]


@pytest.mark.parametrize("model,match", [
    (ola_model("int16", 4, 5, out_shape=(5,)), "between 1 and"),  # TFLM would move a negative byte count
    (ola_model("int16", 4, 0, out_shape=(0,)), "between 1 and"),
    (ola_model("float32", 4, -1, out_shape=(1,)), "between 1 and"),
    (ola_model("int16", 4, 2, code=0), "T says float32"),
    (ola_model("float32", 4, 2, code=7), "T says int16"),
    (ola_model("float32", 4, 2, code=2), "neither"),  # TFLM would crash on a type it has no kernel for
    (op_model("SignalOverlapAdd", [T((4,), "int16")], [T((2,), "int16")],
              custom_options=custom_options(T=7, frame_step=2)), "n_frames, frame_size"),
    (op_model("SignalOverlapAdd", [T((0, 4), "int16")], [T((0,), "int16")],
              custom_options=custom_options(T=7, frame_step=2)), "at least one frame"),  # TFLM divides by 0
    (ola_model("int16", 4, 2, (), 2, out_shape=(2,)), "output shape"),  # TFLM would write past it
    (ola_model("int16", 4, 2, (3,), 1, out_shape=(2, 3)), "output shape"),
    (op_model("SignalOverlapAdd", [T((1, 4), "float32")], [T((2,), "float32")],
              custom_options=custom_options(frame_step=2)), "missing"),  # TFLM: float, step from a missing slot
    (ola_model("int16", 4, 2, zz=1), "must hold exactly the keys"),
    (op_model("SignalOverlapAdd", [T((1, 4), "int16")], [T((2,), "int16"), T((2,), "int16")],
              custom_options=custom_options(T=7, frame_step=2)), "one output"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_rejects_bad_models(model: bytes, match: str) -> None:
    with pytest.raises(PrepareError, match=match):
        Interpreter(model).allocate_tensors()


def test_tflm_refuses_a_type_that_t_contradicts() -> None:
    assert tflm_refuses(ola_model("int16", 4, 2, code=0), [])


@pytest.mark.parametrize("dtype", ["int8", "int32"])
def test_unsupported_types(dtype: str) -> None:
    model = op_model("SignalOverlapAdd", [T((1, 4), dtype)], [T((2,), dtype)],
                     custom_options=custom_options(T=7, frame_step=2))
    assert tflm_refuses(model, [])
    with pytest.raises(UnsupportedError):
        Interpreter(model)
