"""FULLY_CONNECTED against the TFLM wheel, byte for byte: types, per-channel weights, batches, keep_num_dims."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from micronn.errors import PrepareError, UnsupportedError
from micronn.interpreter import Interpreter
from micronn.testing import T, assert_same_as_tflm, op_model
from micronn.tflite import schema

MODELS = Path(__file__).resolve().parents[2] / "micronn" / "models"
SPECIALS = np.array([np.inf, -np.inf, np.nan, -np.nan, 0.0, -0.0, 3e38, -3e38], np.float32)


def fc_model(kind: str, *, in_shape: tuple[int, ...] = (2, 12), units: int = 5, act: int = 0, bias: bool = True,
             bias_dtype: str | None = None, per_channel: bool = False, keep: bool = False, in_zp: int | None = None,
             out_zp: int | None = None, bias_scale: float | None = None, weights: np.ndarray | None = None,
             seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    depth = in_shape[-1]
    batches = int(np.prod(in_shape)) // depth
    out_shape = (*in_shape[:-1], units) if keep else (batches, units)
    if kind == "float32":
        w = rng.uniform(-1, 1, (units, depth)).astype(np.float32) if weights is None else weights
        wt = T((units, depth), "float32", data=w)
        b = T((units,), "float32", data=rng.uniform(-1, 1, units).astype(np.float32)) if bias else None
        x, y = T(in_shape, "float32"), T(out_shape, "float32")
    else:
        xs, ws = 0.05, (list(rng.uniform(0.002, 0.02, units)) if per_channel else 0.0123)
        wt = T((units, depth), "int8", ws, 0, data=rng.integers(-127, 128, (units, depth)))
        bd = bias_dtype or ("int32" if kind == "int8" else "int64")
        bs = bias_scale if bias_scale is not None else ([xs * s for s in ws] if per_channel else xs * ws)
        b = T((units,), bd, bs, 0, data=rng.integers(-30000, 30000, units)) if bias else None
        x = T(in_shape, kind, xs, (3 if kind == "int8" else 0) if in_zp is None else in_zp)
        y = T(out_shape, kind, 0.3 if kind == "int8" else 0.02,
              (-5 if kind == "int8" else 0) if out_zp is None else out_zp)
    opts = schema.options("FULLY_CONNECTED", fused_activation_function=act, keep_num_dims=keep)
    return op_model("FULLY_CONNECTED", [x, wt, b], [y], opts)


CASES = [
    {},
    {"act": 1},
    {"act": 2},
    {"act": 3},
    {"bias": False},
    {"in_shape": (1, 3, 4, 12)},
    {"in_shape": (3, 4, 12), "keep": True},
    {"in_shape": (1, 1)},
    {"per_channel": True},
    {"per_channel": True, "bias": False, "act": 1},
    {"in_zp": 5, "out_zp": -7},
    {"in_shape": (1, 1000), "units": 3},
    {"in_shape": (7, 300), "units": 33},
]


@pytest.mark.parametrize("kind", ["int8", "int16", "float32"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()) or "default")
def test_fully_connected_matches_tflm(kind: str, case: dict) -> None:
    assert_same_as_tflm(fc_model(kind, **case), runs=3)


def test_fully_connected_extreme_inputs() -> None:
    for kind in ("int8", "int16"):
        model = fc_model(kind, in_shape=(1, 64), seed=3)
        info = np.iinfo(kind)
        for value in (info.min, info.max):
            assert_same_as_tflm(model, inputs=[np.full((1, 64), value, kind)])


def test_fully_connected_float_special_values() -> None:
    """inf/NaN/-0.0 in inputs and weights: values, and which NaN comes out, are TFLM's."""
    rng = np.random.default_rng(1)
    for seed in range(4):
        w = rng.uniform(-1, 1, (5, 12)).astype(np.float32)
        if seed >= 2:
            w[rng.random(w.shape) < 0.1] = rng.choice(SPECIALS, size=1)
        model = fc_model("float32", act=seed % 2, weights=w, seed=seed)
        x = rng.uniform(-2, 2, (2, 12)).astype(np.float32)
        mask = rng.random(x.shape) < 0.3
        x[mask] = rng.choice(SPECIALS, size=int(mask.sum()))
        assert_same_as_tflm(model, inputs=[x])


def test_bias_scale_must_match() -> None:
    """TFLM refuses a bias scale more than 2% (of the output scale) away from input * filter scale."""
    with pytest.raises(PrepareError):
        Interpreter.from_bytes(fc_model("int8", bias_scale=0.5))
    assert_same_as_tflm(fc_model("int8", bias_scale=0.05 * 0.0123 * 1.01))  # within tolerance: runs


def test_int16_needs_int64_bias() -> None:
    """TFLM reads an int32 bias of a 16x8 fully connected op as int64 (garbage): micronn refuses it."""
    with pytest.raises(PrepareError):
        Interpreter.from_bytes(fc_model("int16", bias_dtype="int32"))


@pytest.mark.parametrize("name", ["hello_world_int8.tflite", "hello_world_float.tflite", "keyword_scrambled.tflite",
                                  "trained_lstm_int8.tflite", "micro_speech_quantized.tflite"])
def test_real_models(name: str) -> None:
    try:
        assert_same_as_tflm((MODELS / name).read_bytes(), runs=3)
    except UnsupportedError as e:  # ops owned by other kernels may not exist yet
        pytest.skip(str(e))


@pytest.mark.parametrize("kind", ["int8", "float32"])
def test_runtime_weights(kind: str) -> None:
    """Weights that are a model input (not a constant) are read at invoke."""
    q = {"int8": [(0.1, 2), (0.05, 0), (0.2, -1)], "float32": [(), (), ()]}[kind]
    model = op_model("FULLY_CONNECTED", [T((2, 6), kind, *q[0]), T((3, 6), kind, *q[1])], [T((2, 3), kind, *q[2])],
                     schema.options("FULLY_CONNECTED"))
    assert_same_as_tflm(model, runs=2)
