"""SOFTMAX against the TFLM reference, byte for byte: float32, int8 -> int8/int16, int16 -> int16."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import model_bytes

from micronn.errors import MicronnError, UnsupportedError
from micronn.interpreter import Interpreter
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_tflm, tflm_arena
from micronn.tflite.reader import read

INT8_OUT = (1 / 256, -128)
INT16_OUT_FROM_INT8 = (1 / 65536, -32768)
INT16_OUT = (1 / 32768, 0)


def softmax(shape, in_dtype, in_q, out_dtype, out_q, beta=1.0) -> bytes:
    in_spec = T(shape, in_dtype, *in_q) if in_q else T(shape, in_dtype)
    out_spec = T(shape, out_dtype, *out_q) if out_q else T(shape, out_dtype)
    return op_model("SOFTMAX", [in_spec], [out_spec], {"beta": beta})


def special_int_inputs(shape, dtype, rng: np.random.Generator) -> list[np.ndarray]:
    """Rows close to their maximum (many exps add up), all-equal rows, and extremes."""
    info = np.iinfo(dtype)
    near = rng.integers(info.max - 12, info.max, size=shape, endpoint=True).astype(dtype)
    equal = np.full(shape, rng.integers(info.min, info.max), dtype)
    extremes = rng.choice(np.array([info.min, info.max, 0, -1], dtype), size=shape)
    return [near, equal, extremes]


def check(model: bytes, inputs: list[np.ndarray], seed: int) -> None:
    assert_same_as_tflm(model, seed=seed, runs=2)
    for x in inputs:
        assert_same_as_tflm(model, [x])


# beta, input scale, input zero point
INT8_CASES = [
    (1.0, 0.0625, 0),
    (1.0, 0.09173192, 14),
    (0.5, 0.01251875, -1),
    (2.0, 0.17366046, 3),
    (1.7, 0.003, -128),  # small multiplier: every difference in range
    (1.0, 0.5, 127),
    (1.0, 4.0, 5),  # large multiplier: diff_min cuts most differences
    (1e6, 0.1, 0),  # multiplier capped at 2**31 - 1
    (0.3, 1.5e-08 / 0.3, 0),  # multiplier just above one: the smallest TFLM accepts
]


@pytest.mark.parametrize("beta,scale,zp", INT8_CASES)
@pytest.mark.parametrize("out", ["int8", "int16"])
def test_int8(beta, scale, zp, out):
    rng = np.random.default_rng(int(scale * 1e6) + zp + 128)
    shape = (3, 37)
    out_q = INT8_OUT if out == "int8" else INT16_OUT_FROM_INT8
    check(softmax(shape, "int8", (scale, zp), out, out_q, beta), special_int_inputs(shape, np.int8, rng), seed=zp + 128)


@pytest.mark.parametrize("shape", [(5,), (2, 3, 1), (1, 2, 2, 300), (2, 511)])
def test_int8_shapes(shape):
    rng = np.random.default_rng(len(shape))
    m = softmax(shape, "int8", (0.05, -7), "int8", INT8_OUT)
    check(m, special_int_inputs(shape, np.int8, rng), seed=3)


def test_int8_to_int16_long_rows_accumulate():
    """Thousands of equal inputs: the Q12.19 sum of exps grows large."""
    shape = (1, 4000)
    m = softmax(shape, "int8", (0.1, 0), "int16", INT16_OUT_FROM_INT8)
    assert_same_as_tflm(m, [np.full(shape, 7, np.int8)])
    assert_same_as_tflm(m, [np.random.default_rng(0).integers(120, 128, shape).astype(np.int8)])


def test_int8_sum_of_exps_limit():
    """int8 output: TFLM aborts (a gemmlowp assert) once a row's sum of exps reaches 512; micronn refuses.

    511 equal values still run; 512 would kill the TFLM process, so only micronn runs them.
    """
    m = softmax((1, 511), "int8", (0.1, 0), "int8", INT8_OUT)
    assert_same_as_tflm(m, [np.full((1, 511), 3, np.int8)])
    m = softmax((1, 512), "int8", (0.1, 0), "int8", INT8_OUT)
    it = Interpreter.from_bytes(m)
    it.set_input(np.full((1, 512), 3, np.int8), 0)
    with pytest.raises(MicronnError, match="sum of exponentials"):
        it.invoke()
    it.set_input(np.arange(512).reshape(1, 512).astype(np.int8), 0)  # spread out: fine
    it.invoke()


# beta, input scale
INT16_CASES = [(1.0, 0.001), (1.0, 1e-5), (0.7, 0.00025), (2.0, 0.02), (1.0, 3.0), (1e6, 0.1), (1e-9, 0.1)]


@pytest.mark.parametrize("beta,scale", INT16_CASES)
def test_int16(beta, scale):
    rng = np.random.default_rng(int(1 / scale))
    shape = (3, 53)
    small = rng.integers(-400, 400, size=shape).astype(np.int16)  # differences inside the exp table's range
    check(softmax(shape, "int16", (scale, 0), "int16", INT16_OUT, beta),
          [small, *special_int_inputs(shape, np.int16, rng)], seed=7)


def test_int16_long_rows():
    shape = (2, 3000)
    m = softmax(shape, "int16", (0.0005, 0), "int16", INT16_OUT)
    assert_same_as_tflm(m, [np.full(shape, 12, np.int16)])
    assert_same_as_tflm(m, seed=1, runs=1)


def test_int16_tables_in_persistent_arena():
    """TFLM keeps the two 513-entry int16 tables in the persistent tail; the head holds only the tensors."""
    m = softmax((2, 40), "int16", (0.001, 0), "int16", INT16_OUT)
    it = Interpreter.from_bytes(m, planner="tflm")
    tables = [e for e in it.arena_report()["tail"] if "SOFTMAX" in e["what"]]
    assert sorted(e["size"] for e in tables) == [1026, 1026]
    assert it.head == tflm_arena(m)["head"]


@pytest.mark.parametrize("beta", [1.0, 0.25, 3.0, -1.0, 0.0])
def test_float32(beta):
    shape = (4, 301)
    rng = np.random.default_rng(11)
    m = softmax(shape, "float32", None, "float32", None, beta)
    wide = (rng.standard_normal(shape) * 8).astype(np.float32)
    check(m, [wide], seed=5)


def test_float32_special_values():
    x = np.array(
        [[np.nan, 1, 2, -np.inf], [np.inf, 1, 2, np.inf], [-np.inf] * 4, [np.nan] * 4,
         [3.0e38, -3.0e38, 0, 3], [-1e-45, 0.0, -0.0, 1e-45], [-100, -90, -104, -87]],
        np.float32,
    )
    m = softmax(x.shape, "float32", None, "float32", None, 1.0)
    assert_same_as_tflm(m, [x])


def test_float32_many_exps_near_rounding_ties():
    """Enough values that some exps fall near float32 rounding ties, where only C's expf is right."""
    rng = np.random.default_rng(2)
    x = rng.uniform(-20, 0, (8, 2000)).astype(np.float32)
    assert_same_as_tflm(softmax(x.shape, "float32", None, "float32", None, 1.0), [x])


def both_reject(model: bytes) -> None:
    with pytest.raises(TflmError):
        run_tflm(model, [np.zeros(read(model).main.tensors[0].shape, read(model).main.tensors[0].dtype)])
    with pytest.raises(MicronnError):
        Interpreter.from_bytes(model)


@pytest.mark.parametrize(
    "shape,in_dtype,in_q,out_dtype,out_q",
    [
        ((1, 4), "int8", (0.1, 0), "int8", (np.float32(1 / 256) * np.float32(1.0000001), -128)),  # scale must be exact
        ((1, 4), "int8", (0.1, 0), "int8", (1 / 256, -127)),
        ((1, 4), "int8", (0.1, 0), "int16", (1 / 65536 * 1.0011, -32768)),
        ((1, 4), "int8", (0.1, 0), "int16", (1 / 65536, 0)),
        ((1, 4), "int16", (0.001, 3), "int16", INT16_OUT),
        ((1, 4), "int16", (0.001, 0), "int16", (1 / 32768, 3)),
        ((1, 4), "int16", (0.001, 0), "int16", (1 / 32768 * 1.0011, 0)),
        ((1, 4), "int16", (0.001, 0), "int8", INT8_OUT),
        ((1, 4), "uint8", (0.1, 0), "uint8", (1 / 256, 0)),
        ((1, 4), "float32", None, "int8", INT8_OUT),
        ((), "int8", (0.1, 0), "int8", INT8_OUT),
    ],
)
def test_rejects_what_tflm_rejects(shape, in_dtype, in_q, out_dtype, out_q):
    both_reject(softmax(shape, in_dtype, in_q, out_dtype, out_q))


@pytest.mark.parametrize("out", ["int8", "int16"])
def test_output_quantization_tolerances_accepted(out):
    """int16 outputs only need a scale within 0.1% (int8 needs exactly 1/256)."""
    out_q = (1 / 65536 * 1.0009, -32768) if out == "int8" else (1 / 32768 * 1.0009, 0)
    in_dtype, in_q = ("int8", (0.1, 0)) if out == "int8" else ("int16", (0.001, 0))
    assert_same_as_tflm(softmax((2, 9), in_dtype, in_q, "int16", out_q), seed=4, runs=1)


@pytest.mark.parametrize("beta,scale", [(1.0, 1.4901161e-08), (0.0, 0.1), (-1.0, 0.1)])
def test_int8_multiplier_not_above_one_is_rejected(beta, scale):
    """TFLM aborts the process (a failed CHECK) when beta * scale * 2**26 <= 1; micronn refuses cleanly."""
    m = softmax((1, 4), "int8", (scale, 0), "int8", INT8_OUT, beta)
    with pytest.raises(MicronnError, match="greater than one"):
        Interpreter.from_bytes(m)


@pytest.mark.parametrize("name", ["keyword_scrambled", "micro_speech_quantized", "person_detect", "trained_lstm_int8"])
def test_real_model_softmax(name):
    """Each SOFTMAX of the real models, as a single-op model with the same tensors and options."""
    sg = read(model_bytes(name)).main
    ops = [op for op in sg.operators if op.op == "SOFTMAX"]
    assert ops
    rng = np.random.default_rng(0)
    for op in ops:
        specs = []
        for t in (sg.tensors[op.inputs[0]], sg.tensors[op.outputs[0]]):
            specs.append(T(t.shape, t.dtype, t.quant.scale, t.quant.zero_point))
        m = op_model("SOFTMAX", [specs[0]], [specs[1]], op.options)
        check(m, special_int_inputs(specs[0].shape, np.dtype(specs[0].dtype), rng), seed=0)


@pytest.mark.parametrize("name", ["keyword_scrambled", "micro_speech_quantized", "person_detect", "trained_lstm_int8"])
def test_real_model_end_to_end(name):
    """The whole model (needs every other kernel it uses), ending in SOFTMAX."""
    try:
        assert_same_as_tflm(model_bytes(name), seed=10, runs=2)
    except UnsupportedError as e:
        pytest.skip(str(e))
