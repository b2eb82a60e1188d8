"""ADD and SUB against the TFLM wheel, byte for byte, and the models TFLM refuses."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import PrepareError, UnsupportedError
from micronn.ir import Activation
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_micronn, run_tflm, tflm_arena
from micronn.tflite import schema

OPS = ["ADD", "SUB"]
DTYPES = ["float32", "int8", "int16", "int32"]
# (scale, zero point) of input 1, input 2 and the output, per quantized type
QUANT = {
    "int8": [(0.05, 3), (0.02, -7), (0.06, 1)],
    "int16": [(0.001, 0), (0.0004, 0), (0.0012, 0)],
}
SHAPES = [
    ((2, 3), (2, 3), (2, 3)),
    ((2, 3, 4), (4,), (2, 3, 4)),
    ((1, 4, 4, 3), (1, 1, 1, 3), (1, 4, 4, 3)),
    ((3, 1), (1, 4), (3, 4)),  # both operands stretch
    ((1,), (2, 2, 3), (2, 2, 3)),
    ((2, 1, 3, 1, 2, 1), (1, 3, 1, 2, 1, 2), (2, 3, 3, 2, 2, 2)),  # 6-D, TFLM's limit
    ((2, 3), (2, 3), (6,)),  # same input shapes: TFLM's flat path only needs the element count
    ((2, 3), (3,), (1, 2, 3)),  # leading 1s on the output
]


def model(op: str, dtype: str, shapes=((2, 3), (2, 3), (2, 3)), act: int = Activation.NONE,
          quant: list | None = None) -> bytes:
    q = quant or QUANT.get(dtype, [(None, None)] * 3)
    a, b, o = (T(s, dtype, *qq) for s, qq in zip(shapes, q))
    return op_model(op, [a, b], [o], schema.options(op, fused_activation_function=act))


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_matches_tflm(op: str, dtype: str, shapes: tuple) -> None:
    assert_same_as_tflm(model(op, dtype, shapes), runs=2)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("act", list(Activation), ids=lambda a: a.name)
def test_fused_activations(op: str, dtype: str, act: Activation) -> None:
    """RELUs clamp; TANH and SIGN_BIT are accepted and do not clamp; TFLM's int32 ADD ignores all of them."""
    assert_same_as_tflm(model(op, dtype, ((3, 1, 4), (5, 4), (3, 5, 4)), act), runs=2)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("quant", [
    [(0.1, 0), (0.1, 0), (0.1, 0)],
    [(0.02, -128), (0.5, 127), (0.3, -5)],
    [(0.5, 10), (0.003, -20), (0.0123, 100)],
    [(0.0078125, 0), (0.0078125, 0), (0.015625, 0)],
], ids=str)
def test_int8_every_pair_of_values(op: str, quant: list) -> None:
    """All 65,536 (x1, x2) pairs through a broadcast: every rounding case of the fixed-point rescaling."""
    x = np.arange(-128, 128, dtype=np.int8)
    m = model(op, "int8", ((256, 1), (1, 256), (256, 256)), quant=quant)
    assert_same_as_tflm(m, inputs=[x.reshape(256, 1), x.reshape(1, 256)])


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("quant", [
    [(2**-10, 0), (2**-12, 0), (2**-9, 0)],  # power-of-two scales: TFLM still takes the general path
    [(0.0005167, 0), (0.000951, 0), (0.0001527, 0)],
    [(0.001, 1000), (0.002, -3000), (0.003, 77)],  # TFLM accepts int16 zero points here
], ids=str)
@pytest.mark.parametrize("pot_scale_int16", [True, False])
def test_int16_wide_grid(op: str, quant: list, pot_scale_int16: bool) -> None:
    """int16 over the full range; the pot_scale_int16 option changes nothing in TFLM."""
    rng = np.random.default_rng(7)
    xs = [rng.integers(-32768, 32768, shape).astype(np.int16) for shape in ((128, 1), (1, 128))]
    xs[0][:2, 0] = [-32768, 32767]
    a, b, o = (T(s, "int16", *q) for s, q in zip(((128, 1), (1, 128), (128, 128)), quant))
    m = op_model(op, [a, b], [o], schema.options(op, pot_scale_int16=pot_scale_int16))
    assert_same_as_tflm(m, inputs=xs)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("act", [Activation.NONE, Activation.RELU])
def test_float_saturates_and_keeps_special_values(op: str, act: Activation) -> None:
    """Without an activation TFLM still clamps to +-FLT_MAX, so inf becomes FLT_MAX; NaN and -0.0 pass through."""
    x = np.array([3e38, -3e38, np.inf, np.nan, -0.0, 2.0, -np.inf, 1.0], np.float32)
    y = np.array([3e38, -3e38, 1.0, 1.0, 0.0 if op == "SUB" else -0.0, 5.0, 7.0, np.nan], np.float32)
    assert_same_as_tflm(model(op, "float32", ((8,), (8,), (8,)), act), inputs=[x, y])


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("act", [Activation.NONE, Activation.RELU6])
def test_int32_wraps(op: str, act: Activation) -> None:
    x = np.array([2**31 - 1, -(2**31), -5, 7, 0, 100], np.int32)
    y = np.array([1, 1, 3, -8, -1, -99], np.int32)
    assert_same_as_tflm(model(op, "int32", ((6,), (6,), (6,)), act), inputs=[x, y])


def test_constant_operand() -> None:
    bias = np.linspace(-1, 1, 4, dtype=np.float32)
    m = op_model("ADD", [T((2, 3, 4), "float32"), T((4,), "float32", data=bias)], [T((2, 3, 4), "float32")])
    assert_same_as_tflm(m, runs=2)


@pytest.mark.parametrize("dtype", ["float32", "int8", "int16"])
def test_head_equals_tflm(dtype: str) -> None:
    """No scratch: the head is the planned activations, exactly as TFLM plans them."""
    m = model("ADD", dtype, ((2, 3, 4), (4,), (2, 3, 4)))
    it = Interpreter(m, planner="tflm")
    it.allocate_tensors()
    assert it.head == tflm_arena(m)["head"]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", ["int64", "uint8", "bool"])
def test_unsupported_types(op: str, dtype: str) -> None:
    m = op_model(op, [T((2, 3), dtype), T((2, 3), dtype)], [T((2, 3), dtype)])
    with pytest.raises(TflmError):
        run_tflm(m, [np.zeros((2, 3), dtype)] * 2)
    with pytest.raises(UnsupportedError):
        Interpreter(m)


@pytest.mark.parametrize("op", OPS)
def test_rejects_int8_without_quantization(op: str) -> None:
    """TFLM's ADD refuses it; its SUB aborts the process (so it is not run on the wheel)."""
    m = op_model(op, [T((2, 3), "int8"), T((2, 3), "int8")], [T((2, 3), "int8")])
    if op == "ADD":
        with pytest.raises(TflmError):
            run_tflm(m, [np.zeros((2, 3), np.int8)] * 2)
    with pytest.raises(PrepareError, match="quantization"):
        Interpreter(m).allocate_tensors()


@pytest.mark.parametrize("op", OPS)
def test_rejects_output_multiplier_of_one_or_more(op: str) -> None:
    """TFLM aborts the process (QuantizeMultiplierSmallerThanOneExp's check): not run on the wheel."""
    m = model(op, "int8", quant=[(1.0, 0), (1.0, 0), (1e-6, 0)])
    with pytest.raises(PrepareError, match="multiplier"):
        Interpreter(m).allocate_tensors()


@pytest.mark.parametrize("shapes", [
    ((2, 3), (2, 4), (2, 4)),  # does not broadcast (TFLM computes garbage)
    ((2, 3), (2, 3), (2, 4)),  # output larger than the inputs (TFLM crashes)
    ((2, 3), (3,), (3, 3)),  # output shape is not the broadcast shape
    ((1, 1, 1, 1, 1, 1, 2), (2,), (1, 1, 1, 1, 1, 1, 2)),  # 7-D: beyond TFLM's 6-D shapes
], ids=str)
def test_rejects_bad_shapes(shapes: tuple) -> None:
    with pytest.raises(PrepareError):
        Interpreter(model("ADD", "float32", shapes)).allocate_tensors()


@pytest.mark.parametrize("specs", [
    [T((2, 3), "int8", 0.1, 0), T((2, 3), "int16", 0.1, 0), T((2, 3), "int8", 0.1, 0)],
    [T((2, 3), "float32"), T((2, 3), "float32"), T((2, 3), "int32")],
], ids=["mixed inputs", "output type"])
def test_rejects_mixed_types(specs: list) -> None:
    """TFLM reads every operand as the output's type (garbage); micronn refuses."""
    with pytest.raises(PrepareError, match="is"):
        Interpreter(op_model("ADD", specs[:2], specs[2:])).allocate_tensors()


def test_output_can_overwrite_an_input() -> None:
    """With micronn's in-place planning the sum may land on its dying input: still TFLM's bytes."""
    m = model("ADD", "int8", ((4, 8), (4, 8), (4, 8)))
    rng = np.random.default_rng(0)
    xs = [rng.integers(-128, 128, (4, 8)).astype(np.int8) for _ in range(2)]
    assert run_micronn(m, xs)[0].tobytes() == run_tflm(m, xs)[0].tobytes()
