"""SPACE_TO_BATCH_ND against the TFLM wheel, byte for byte.

TFLM fills the padding by memset with its op data's ``output_offset``, which nothing ever sets: the value is
whatever the persistent arena held (zero in fresh pages, anything in a long-running process). micronn writes
zero. So the comparisons below are byte for byte on every output element that carries input data, and the
padding is checked to be zero on micronn's side only.
"""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import InvokeError, PrepareError, UnsupportedError
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, random_inputs, run_tflm, tflm_arena

DTYPES = ["float32", "int8"]
FRESH_ARENA = 40 << 20


def s2b(dtype: str, in_shape: tuple[int, ...], block, paddings, out_shape: tuple[int, ...], *, const: bool = True,
        q: tuple | None = None, param_dtype: str = "int32") -> bytes:
    """int8 tensors get scale 0.1 and zero point -3 unless ``q`` says otherwise; float32 ones none unless told."""
    if q is None:
        q = (0.1, -3) if dtype != "float32" else (None, None)
    block = np.array(block, param_dtype)
    paddings = np.array(paddings, param_dtype).reshape(-1, 2)
    params = [T(block.shape, param_dtype, data=block if const else None),
              T(paddings.shape, param_dtype, data=paddings if const else None)]
    return op_model("SPACE_TO_BATCH_ND", [T(in_shape, dtype, *q), *params], [T(out_shape, dtype, *q)])


def check_inputs(model: bytes, inputs: list[np.ndarray]) -> np.ndarray:
    """micronn's output, asserted equal to TFLM's wherever an input element lands; padding must be zero."""
    it = Interpreter.from_bytes(model)
    marked = [np.ones_like(inputs[0])] + list(inputs[1:])  # ones mark where data lands (padding stays 0)
    for i, x in enumerate(marked):
        it.set_input(x, i)
    it.invoke()
    data = it.get_output(0) != 0
    for i, x in enumerate(inputs):
        it.set_input(x, i)
    it.invoke()
    ours = it.get_output(0)
    theirs = run_tflm(model, inputs, arena_size=FRESH_ARENA)[0]
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    assert ours[data].tobytes() == theirs[data].tobytes()
    assert not ours[~data].any()
    return ours


def check(model: bytes, seed: int = 0, runs: int = 2) -> None:
    for r in range(runs):
        check_inputs(model, random_inputs(model, seed + r))


CASES = [
    ((1, 4, 4, 1), [2, 2], [[0, 0], [0, 0]], (4, 2, 2, 1)),
    ((2, 5, 3, 3), [2, 3], [[1, 0], [2, 1]], (12, 3, 2, 3)),
    ((2, 5, 3, 3), [3, 1], [[2, 2], [0, 0]], (6, 3, 3, 3)),
    ((1, 4, 3), [2], [[1, 1]], (2, 3, 3)),  # 3-D: one spatial dimension
    ((1, 3, 4, 1), [2, 2], [[0, 0], [0, 0]], (4, 2, 2, 1)),  # height not a multiple: TFLM pads the end
    ((1, 4, 4, 1), [2, 2], [[-1, 1], [0, 0]], (4, 2, 2, 1)),  # negative padding
    ((1, 4, 4, 1), [2, 2], [[0, 0], [0, 0]], (4, 3, 2, 1)),  # an output taller than the blocks need
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("in_shape,block,paddings,out_shape", CASES, ids=str)
def test_matches_tflm(dtype, in_shape, block, paddings, out_shape) -> None:
    check(s2b(dtype, in_shape, block, paddings, out_shape))


@pytest.mark.parametrize("in_shape,block,paddings,out_shape", CASES[:4], ids=str)
def test_block_and_paddings_given_at_run_time(in_shape, block, paddings, out_shape) -> None:
    """TFLM reads the block shape and paddings at every invoke; so does micronn."""
    model = s2b("int8", in_shape, block, paddings, out_shape, const=False)
    x = np.random.default_rng(1).integers(-128, 128, in_shape).astype(np.int8)
    check_inputs(model, [x, np.array(block, np.int32), np.array(paddings, np.int32)])


def test_int8_padding_is_zero_not_the_zero_point() -> None:
    model = s2b("int8", (1, 3, 3, 1), [2, 2], [[1, 0], [0, 1]], (4, 2, 2, 1), q=(0.5, -77))
    out = check_inputs(model, [np.ones((1, 3, 3, 1), np.int8)])
    assert out[0, 0, 0, 0] == 0


def test_float32_padding_is_zero_even_with_a_zero_point() -> None:
    model = s2b("float32", (1, 3, 3, 1), [2, 2], [[1, 0], [0, 1]], (4, 2, 2, 1), q=(0.5, 5))
    out = check_inputs(model, [np.ones((1, 3, 3, 1), np.float32)])
    assert out[0, 0, 0, 0] == 0.0


def test_head_equals_tflm() -> None:
    model = s2b("int8", (1, 8, 8, 3), [2, 2], [[0, 0], [0, 0]], (4, 4, 4, 3))
    assert Interpreter.from_bytes(model, planner="tflm").head == tflm_arena(model, FRESH_ARENA)["head"]


@pytest.mark.parametrize("name,model", [
    ("5-D", s2b("float32", (1, 4, 4, 2, 1), [2, 2, 1], [[0, 0]] * 3, (4, 2, 2, 2, 1))),
    ("2-D", s2b("float32", (1, 4), [2], [[0, 0]], (2, 2))),
])
def test_refused_like_tflm(name, model) -> None:
    with pytest.raises(TflmError, match="failed to prepare"):
        run_tflm(model, [])
    with pytest.raises(PrepareError, match="3-D or 4-D"):
        Interpreter(model).allocate_tensors()


@pytest.mark.parametrize("dtype", ["int16", "int32"])
def test_unsupported_types(dtype) -> None:
    model = s2b(dtype, (1, 4, 4, 1), [2, 2], [[0, 0], [0, 0]], (4, 2, 2, 1), q=(0.1, 0))
    with pytest.raises(TflmError, match="not supported"):
        run_tflm(model, [np.zeros((1, 4, 4, 1), dtype)])
    with pytest.raises(UnsupportedError):
        Interpreter(model)


def test_int64_parameters_are_refused() -> None:
    """TFLM reads the block shape as int32 whatever its type: an int64 [2, 2] reads as [2, 0] and the process
    dies dividing by zero (so the wheel is not run here). micronn refuses non-int32 parameters."""
    with pytest.raises(PrepareError, match="int32"):
        Interpreter(s2b("float32", (1, 4, 4, 1), [2, 2], [[0, 0], [0, 0]], (4, 2, 2, 1),
                        param_dtype="int64")).allocate_tensors()


def test_nonpositive_block_is_refused() -> None:
    """A zero block width makes TFLM divide by zero (the wheel is not run); micronn refuses, at prepare for a
    constant block and at invoke for one given at run time."""
    with pytest.raises(PrepareError, match="positive"):
        Interpreter(s2b("float32", (1, 4, 4, 1), [2, 0], [[0, 0], [0, 0]], (4, 2, 2, 1))).allocate_tensors()
    it = Interpreter.from_bytes(s2b("float32", (1, 4, 4, 1), [2, 2], [[0, 0], [0, 0]], (4, 2, 2, 1), const=False))
    it.set_input(np.zeros((1, 4, 4, 1), np.float32), 0)
    it.set_input(np.array([2, 0], np.int32), 1)
    it.set_input(np.zeros((2, 2), np.int32), 2)
    with pytest.raises(InvokeError, match="positive"):
        it.invoke()


def test_output_depth_must_match() -> None:
    with pytest.raises(PrepareError, match="depth"):
        Interpreter(s2b("float32", (1, 4, 4, 2), [2, 2], [[0, 0], [0, 0]], (4, 2, 4, 1))).allocate_tensors()


@pytest.mark.parametrize("dtype", DTYPES)
def test_atrous_convolution_pattern(dtype) -> None:
    """What TF converters emit for a dilated convolution: SPACE_TO_BATCH_ND -> CONV_2D -> BATCH_TO_SPACE_ND,
    compared whole (outputs and TFLM's planned head)."""
    from micronn.testing import Graph, Op, graph_model

    rng = np.random.default_rng(9)
    q = {"x": (0.05, 2), "s": (0.05, 2), "c": (0.1, -5), "y": (0.1, -5)}
    if dtype == "float32":
        q = dict.fromkeys(q, (None, None))
        weights, bias = rng.uniform(-1, 1, (4, 3, 3, 3)), rng.uniform(-1, 1, 4)
        wq, bq, bdt = (None, None), (None, None), "float32"
    else:
        weights, bias = rng.integers(-127, 128, (4, 3, 3, 3)), rng.integers(-500, 500, 4)
        wq, bq, bdt = (0.02, 0), (0.001, 0), "int32"
    tensors = {
        "x": T((1, 8, 8, 3), dtype, *q["x"]),
        "block": T((2,), "int32", data=[2, 2]),
        # no padding: TFLM's padding bytes are uninitialized arena memory (see the module docstring)
        "pads": T((2, 2), "int32", data=[[0, 0], [0, 0]]),
        "s": T((4, 4, 4, 3), dtype, *q["s"]),
        "w": T((4, 3, 3, 3), "int8" if dtype == "int8" else dtype, *wq, data=weights),
        "b": T((4,), bdt, *bq, data=bias),
        "c": T((4, 2, 2, 4), dtype, *q["c"]),
        "crops": T((2, 2), "int32", data=[[0, 0], [0, 0]]),
        "y": T((1, 4, 4, 4), dtype, *q["y"]),
    }
    ops = [
        Op("SPACE_TO_BATCH_ND", ["x", "block", "pads"], ["s"]),
        Op("CONV_2D", ["s", "w", "b"], ["c"], {"padding": 1, "stride_w": 1, "stride_h": 1}),
        Op("BATCH_TO_SPACE_ND", ["c", "block", "crops"], ["y"]),
    ]
    model = graph_model(Graph(tensors, ops, ["x"], ["y"]))
    assert_same_as_tflm(model, runs=2, arena_size=FRESH_ARENA)
    assert Interpreter.from_bytes(model, planner="tflm").head == tflm_arena(model, FRESH_ARENA)["head"]
