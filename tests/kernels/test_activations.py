"""RELU, RELU6, LEAKY_RELU, HARD_SWISH, ELU, LOGISTIC, TANH against the TFLM reference, byte for byte.

float32 (with C's expf/expm1f/tanhf bit for bit), int8 and int16 where TFLM has them, over every input
value of the integer types, with TFLM's odd corners: missing quantization parameters (computed through
x86's float -> int conversions), output quantizations TFLM ignores, tiny scales.
"""

from __future__ import annotations

import numpy as np
import pytest

from micronn.errors import MicronnError
from micronn.interpreter import Interpreter
from micronn.testing import (
    Graph,
    Op,
    T,
    TflmError,
    assert_same_as_tflm,
    graph_model,
    op_model,
    run_micronn,
    run_tflm,
    tflm_arena,
)

FLOAT_OPS = ["RELU", "RELU6", "LEAKY_RELU", "HARD_SWISH", "ELU", "LOGISTIC", "TANH"]

SPECIALS = np.concatenate([
    np.array([0x7FC00001, 0xFFC12345, 0x7F800001, 0xFFC00000], np.uint32).view(np.float32),
    np.array([0.0, -0.0, 1e-45, -1e-45, 1e-30, -1e-30, 6.0, 5.9999995, 6.0000005, -3.0, -3.0000002, -2.9999998, 3.0,
              -9.0, -9.000001, 16.619047, 16.61905, -87.33654, -103.97208, -104.0, 3.4028235e38, -3.4028235e38,
              np.inf, -np.inf], np.float32),
])


def float_inputs(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    rest = np.concatenate([rng.uniform(-20, 20, n), rng.standard_normal(n) * 1e-3, -rng.exponential(1e-4, n)])
    return np.concatenate([SPECIALS, rest.astype(np.float32)]).reshape(1, -1)


def unary(op: str, in_spec: T, out_spec: T | None = None, options=None) -> bytes:
    return op_model(op, [in_spec], [out_spec or in_spec], options)


def all_int8() -> np.ndarray:
    return np.arange(-128, 128, dtype=np.int64).astype(np.int8).reshape(4, 64)


def all_int16() -> np.ndarray:
    return np.arange(-32768, 32768, dtype=np.int64).astype(np.int16).reshape(256, 256)


def int8_model(op: str, si: float, zi: int, so: float, zo: int, options=None) -> bytes:
    return unary(op, T((4, 64), "int8", si, zi), T((4, 64), "int8", so, zo), options)


def both_reject(model: bytes, x: np.ndarray) -> None:
    with pytest.raises(TflmError):
        run_tflm(model, [x])
    with pytest.raises(MicronnError):
        run_micronn(model, [x])


# ---- float32 --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("op,options", [("RELU", None), ("RELU6", None), ("LEAKY_RELU", {"alpha": 0.2}),
                                        ("LEAKY_RELU", {"alpha": -1.5}), ("HARD_SWISH", None), ("ELU", None),
                                        ("LOGISTIC", None), ("TANH", None)])
def test_float32(op, options):
    x = float_inputs(1500, seed=FLOAT_OPS.index(op))
    model = unary(op, T(x.shape, "float32"), options=options)
    assert_same_as_tflm(model, [x])
    assert_same_as_tflm(model, seed=1, runs=1)


# ---- RELU / RELU6 ---------------------------------------------------------------------------------------------

# in scale, in zero point, out scale, out zero point
RELU_INT8 = [
    (0.05, 0, 0.05, 0),
    (0.05, -128, 0.05, -128),
    (0.05, 127, 0.02, -128),
    (0.1, 3, 0.05, -7),
    (0.02, -20, 0.3, 100),
    (0.0173, 55, 0.0217, 127),
    (1e6, 3, 1e-3, 3),  # saturating multiplier
    (1e-9, 3, 0.1, 3),  # six is beyond int8: RELU6 clamps only at the zero point
    (0.5, 3, 1e-3, 3),
]


@pytest.mark.parametrize("op", ["RELU", "RELU6"])
@pytest.mark.parametrize("si,zi,so,zo", RELU_INT8)
def test_relu_int8(op, si, zi, so, zo):
    assert_same_as_tflm(int8_model(op, si, zi, so, zo), [all_int8()])


@pytest.mark.parametrize("op", ["RELU", "RELU6"])
@pytest.mark.parametrize("si,so", [(1e-3, 1e-3), (3.05e-5, 2.1e-4), (7.7e-4, 1.3e-4), (2e-4, 2e-4 * 1.0000001),
                                   (1.4584585414922913e-06, 1.164422428701073e-06)])  # ratio in double
def test_relu_int16(op, si, so):
    assert_same_as_tflm(unary(op, T((256, 256), "int16", si, 0), T((256, 256), "int16", so, 0)), [all_int16()])


def test_relu6_int16_uses_input_zero_point_only():
    """RELU6 clamps in the input's quantization (any zero point); the output's is ignored."""
    model = unary("RELU6", T((256, 256), "int16", 1e-3, -250), T((256, 256), "int16", 7.0, 9))
    assert_same_as_tflm(model, [all_int16()])


@pytest.mark.parametrize("op", ["RELU", "RELU6", "LEAKY_RELU", "HARD_SWISH", "ELU", "TANH"])
@pytest.mark.parametrize("in_q,out_q", [((), ()), ((0.1, 3), ()), ((), (0.1, 3))])
def test_int8_without_quantization_like_tflm(op, in_q, out_q):
    """Zero scales give inf/NaN multipliers and bounds; TFLM runs on with x86's conversions, and so does micronn."""
    assert_same_as_tflm(unary(op, T((4, 64), "int8", *in_q), T((4, 64), "int8", *out_q)), [all_int8()])


# ---- LEAKY_RELU -----------------------------------------------------------------------------------------------

LEAKY_INT8 = [
    (0.05, 0, 0.05, 0, 0.2),
    (0.05, -128, 0.05, 127, 0.01),
    (0.1, 3, 0.05, -7, 1.7),
    (0.02, -20, 0.3, 100, -0.3),  # a negative alpha: negative multiplier
    (0.0173, 55, 0.0217, -128, 0.0),
    (0.5, 127, 0.004, 0, 1.0),
]


@pytest.mark.parametrize("si,zi,so,zo,alpha", LEAKY_INT8)
def test_leaky_relu_int8(si, zi, so, zo, alpha):
    assert_same_as_tflm(int8_model("LEAKY_RELU", si, zi, so, zo, {"alpha": alpha}), [all_int8()])


@pytest.mark.parametrize("si,zi,so,alpha", [(2.38e-05, 5, 1.09e-05, 0.2), (2.58e-05, -7, 1.62e-04, 0.5),
                                            (4.3e-5, 0, 4.3e-5, -0.3), (1e-3, 100, 1e-4, 0.01),
                                            (0.00035305857, 0, 1.199905e-05, 0.1),  # float32 arithmetic would
                                            (0.00076904782, 0, 0.00012630405, 0.2)])  # differ here
def test_leaky_relu_int16(si, zi, so, alpha):
    """int16 resolves the alpha multiplier finely enough to show TFLM computes it in double."""
    model = unary("LEAKY_RELU", T((256, 256), "int16", si, zi), T((256, 256), "int16", so, 0), {"alpha": alpha})
    assert_same_as_tflm(model, [all_int16()])


# ---- HARD_SWISH -----------------------------------------------------------------------------------------------

HARD_SWISH_INT8 = [
    (0.05, 0, 0.05, 0),
    (0.1, -128, 0.03, -128),
    (0.0625, 127, 0.02, 127),
    (0.02, -20, 0.3, 100),
    (100.0, 3, 1.0, -128),  # reluish multiplier with a left shift (saturating)
    (1e-5, 3, 1.0, -128),  # output right shift of 23 bits: int16 rounding degenerates to +-1
    (0.0018716, 102, 1.0778, 96),  # 16-bit output shift
    (0.0025341, -99, 1.3461, -26),
    (0.0013567345449700952, -79, 0.004260725807398558, 0),  # the multipliers are computed in double:
    (0.005880296230316162, 53, 0.0017390706343576312, 0),  # in float these two would differ
]


@pytest.mark.parametrize("si,zi,so,zo", HARD_SWISH_INT8)
def test_hard_swish_int8(si, zi, so, zo):
    assert_same_as_tflm(int8_model("HARD_SWISH", si, zi, so, zo), [all_int8()])


@pytest.mark.parametrize("so", [1 / 128, 1 / 129])
def test_hard_swish_output_multiplier_must_be_below_one(so):
    both_reject(int8_model("HARD_SWISH", 1.0, 0, so, 0), all_int8())


# ---- ELU ------------------------------------------------------------------------------------------------------

ELU_INT8 = [
    (0.05, 0, 0.05, 0),
    (0.1, -128, 0.03, -128),
    (0.0625, 127, 0.02, 127),
    (0.3, 20, 0.01, -100),
    (10.0, 3, 1e-7, 3),  # rescaled values beyond int32: x86 gives INT32_MIN, so the table says -128
    (1e-3, 3, 100.0, -128),
    (2e-8, 0, 2e-8, 0),  # the table uses expf(x) - 1, not expm1f: they differ at such tiny scales
]


@pytest.mark.parametrize("si,zi,so,zo", ELU_INT8)
def test_elu_int8(si, zi, so, zo):
    assert_same_as_tflm(int8_model("ELU", si, zi, so, zo), [all_int8()])


def test_elu_int8_table_is_persistent():
    it = Interpreter.from_bytes(int8_model("ELU", 0.1, 0, 0.1, 0))
    assert [e["size"] for e in it.arena_report()["tail"] if "ELU" in e["what"]] == [256]


# ---- LOGISTIC / TANH ------------------------------------------------------------------------------------------

ACT_INT8 = [
    (0.05, 0), (0.1, -128), (0.0625, 127), (0.3, 20), (1.0, 3), (1000.0, -5), (2e-3, 60),
    (0.1 / 2**26, 1),  # multiplier mantissa rounding up to 2**31
    (1e-9, 3), (3.7e-9, 3), (1e-12, 3),  # negative left shift: TFLM's radius goes through an x86 shift
    (0.0, 3),
]


@pytest.mark.parametrize("op", ["LOGISTIC", "TANH"])
@pytest.mark.parametrize("si,zi", ACT_INT8)
def test_logistic_tanh_int8(op, si, zi):
    out_q = (1 / 256, -128) if op == "LOGISTIC" else (1 / 128, 0)
    assert_same_as_tflm(int8_model(op, si, zi, *out_q), [all_int8()])


@pytest.mark.parametrize("op,out_q", [("LOGISTIC", (0.5, -128)), ("TANH", (0.37, 12))])
def test_logistic_tanh_int8_ignore_output_scale(op, out_q):
    assert_same_as_tflm(int8_model(op, 0.1, 0, *out_q), [all_int8()])


@pytest.mark.parametrize("op", ["LOGISTIC", "TANH"])
@pytest.mark.parametrize("si", [2**-12, 2**-11, 2**-10, 2**-13, 3.05e-5, 1.1e-4, 7.7e-4, 1e-5, 0.01])
def test_logistic_tanh_int16(op, si):
    model = unary(op, T((256, 256), "int16", si, 0), T((256, 256), "int16", 2**-15, 0))
    assert_same_as_tflm(model, [all_int16()])


@pytest.mark.parametrize("op", ["LOGISTIC", "TANH"])
@pytest.mark.parametrize("si,so", [(1e-30, 2**-15), (1e5, 2**-15), (1e-3, 2**-15 * 1.0005)])
def test_logistic_tanh_int16_scale_corners(op, si, so):
    """Extreme input scales saturate or vanish; the output scale only needs to be 2**-15 to 1e-3 in log2."""
    model = unary(op, T((256, 256), "int16", si, 0), T((256, 256), "int16", so, 0))
    assert_same_as_tflm(model, [all_int16()])


@pytest.mark.parametrize("op", ["LOGISTIC", "TANH"])
def test_int16_without_input_scale_is_refused(op):
    """TFLM derives a 31-bit shift from a zero scale and overflows at invoke: micronn refuses."""
    with pytest.raises(MicronnError, match="positive input scale"):
        Interpreter.from_bytes(unary(op, T((2, 4), "int16"), T((2, 4), "int16", 2**-15, 0)))


@pytest.mark.parametrize("op", ["LOGISTIC", "TANH"])
def test_int8_input_scale_too_small_is_refused(op):
    """Below 2**-59 TFLM shifts by more than 31 bits (undefined in C) and outputs garbage: micronn refuses."""
    model = int8_model(op, 1e-20, 3, 1 / 256, -128)
    with pytest.raises(MicronnError, match="too small"):
        Interpreter.from_bytes(model)


# ---- rejections -----------------------------------------------------------------------------------------------

Q8 = (0.1, 0)


@pytest.mark.parametrize("op,in_spec,out_spec", [
    ("LOGISTIC", T((2, 4), "int8", *Q8), T((2, 4), "int8", 1 / 256, 0)),  # output zero point must be -128
    ("LOGISTIC", T((2, 4), "int8"), T((2, 4), "int8")),
    ("LOGISTIC", T((2, 4), "int16", 1e-3, 3), T((2, 4), "int16", 2**-15, 0)),
    ("LOGISTIC", T((2, 4), "int16", 1e-3, 0), T((2, 4), "int16", 2**-15, 3)),
    ("LOGISTIC", T((2, 4), "int16", 1e-3, 0), T((2, 4), "int16", 2**-14, 0)),
    ("LOGISTIC", T((2, 4), "int16", 1e-3, 0), T((2, 4), "int16", 1e-4, 0)),
    ("TANH", T((2, 4), "int16", 1e-3, 3), T((2, 4), "int16", 2**-15, 0)),
    ("TANH", T((2, 4), "int16", 1e-3, 0), T((2, 4), "int16", 0.1, 0)),
    ("TANH", T((2, 4), "int16", 1e-3, 0), T((2, 4), "int16")),
    ("LOGISTIC", T((2, 4), "int16", 1e-3, 0), T((2, 4), "int16", 2**-15 * 1.001, 0)),
    ("TANH", T((2, 4), "int8", *Q8), T((2, 4), "int16", 2**-15, 0)),
    ("RELU", T((2, 4), "int16", 0.1, 3), T((2, 4), "int16", 0.1, 0)),
    ("RELU", T((2, 4), "int16", 0.1, 0), T((2, 4), "int16", 0.1, -3)),
    ("LEAKY_RELU", T((2, 4), "int8", *Q8), T((2, 4), "int16", *Q8)),
    ("ELU", T((2, 4), "float32"), T((2, 4), "int8", *Q8)),
    ("RELU", T((2, 4), "uint8", 0.1, 128), None),
    ("RELU6", T((2, 4), "int32"), None),
    ("LEAKY_RELU", T((2, 4), "uint8", 0.1, 128), None),
    ("HARD_SWISH", T((2, 4), "int16", *Q8), None),
    ("HARD_SWISH", T((2, 4), "uint8", 0.1, 128), None),
    ("ELU", T((2, 4), "int16", *Q8), None),
    ("LOGISTIC", T((2, 4), "uint8", 1 / 256, 0), None),
    ("TANH", T((2, 4), "int32"), None),
    ("RELU_N1_TO_1", T((2, 4), "float32"), None),  # TFLM has no kernel for it
    ("RELU_N1_TO_1", T((2, 4), "int8", *Q8), None),
])
def test_rejects_what_tflm_rejects(op, in_spec, out_spec):
    both_reject(unary(op, in_spec, out_spec), np.ones(in_spec.shape, in_spec.dtype))


@pytest.mark.parametrize("op", ["RELU", "RELU6", "HARD_SWISH"])
def test_refuses_mixed_types(op):
    """TFLM does not check these and reinterprets the output buffer: micronn refuses."""
    with pytest.raises(MicronnError, match="int16"):
        Interpreter.from_bytes(unary(op, T((2, 4), "int8", *Q8), T((2, 4), "int16", *Q8)))


def test_refuses_overflowing_rescale():
    with pytest.raises(MicronnError, match="left shift"):
        Interpreter.from_bytes(int8_model("LEAKY_RELU", 1.0, 0, 1e-10, 0, {"alpha": 0.5}))


# ---- arena ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("op,spec", [("RELU", T((3, 17), "int16", 0.1, 0)), ("ELU", T((3, 17), "int8", 0.1, 0)),
                                     ("TANH", T((3, 17), "float32")), ("HARD_SWISH", T((3, 17), "int8", 0.1, 0))])
def test_no_scratch_same_head_as_tflm(op, spec):
    model = unary(op, spec)
    assert Interpreter.from_bytes(model, planner="tflm").head == tflm_arena(model)["head"]


# ---- chains ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_chain_with_outputs_over_inputs(dtype):
    """A chain of unary ops: micronn's planner may place each output over its dying input (in place)."""
    q = {"float32": {}, "int8": {"scale": 0.05, "zero_point": 3}}[dtype]
    act = {"LOGISTIC": {"scale": 1 / 256, "zero_point": -128}} if dtype == "int8" else {}
    ops = ["RELU6", "TANH", "ELU", "LEAKY_RELU", "HARD_SWISH", "LOGISTIC"]
    tensors = {"t0": T((6, 50), dtype, **q)}
    for i, op in enumerate(ops, 1):
        tensors[f"t{i}"] = T((6, 50), dtype, **act.get(op, q))
    graph = Graph(tensors, [Op(op, [f"t{i}"], [f"t{i + 1}"], {"alpha": 0.3} if op == "LEAKY_RELU" else None)
                            for i, op in enumerate(ops)], ["t0"], [f"t{len(ops)}"])
    model = graph_model(graph)
    shared = [b for b in Interpreter.from_bytes(model).arena_report()["buffers"] if b.get("shares_with")]
    assert shared, "expected the planner to share at least one buffer"
    assert_same_as_tflm(model, seed=5, runs=3)
