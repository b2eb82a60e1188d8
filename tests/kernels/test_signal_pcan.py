"""SignalPCAN against the TFLM wheel, byte for byte: noise estimates of every bit length (0, 1, 2 read the table
directly), smooth and random full-range gain tables (int16 gains wrap and sign-extend), every SNR shift, both
branches of the output shrink; bad models are refused."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import PrepareError, UnsupportedError
from micronn.kernels._custom_options import custom_options
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_tflm


def smooth_lut() -> np.ndarray:
    """A gain table shaped like micro_speech's, gain ~ 2**15 / (1 + e / 2**14)**0.95, laid out as TFLM reads it:
    the gains of 0 and 1, then per bit length b >= 2, from index 4 * b - 6, the quadratic (value, slope, curvature,
    unused) over the fraction t in [0, 1) of [2**(b - 1), 2**b); the value for b = 2 is also the gain of 2."""
    def g(e: float) -> float:
        return 32767 / (1 + e / 2**14) ** 0.95
    lut = [g(0), g(1)]
    for b in range(2, 33):
        a, mid, end = g(2.0 ** (b - 1)), g(1.5 * 2.0 ** (b - 1)), g(2.0 ** b)
        lut += [a, 4 * mid - 3 * a - end, 2 * end - 4 * mid + 2 * a, 0]
    return np.round(lut[:125]).astype(np.int16)


def pcan_model(n: int, lut: np.ndarray | None, snr_shift: int = 6, sizes: tuple | None = None,
               dtypes: tuple = ("uint32", "uint32", "int16", "uint32"), lut_len: int = 125, **extra) -> bytes:
    n_in, n_noise, n_out = sizes or (n, n, n)
    table = T((lut_len,), dtypes[2]) if lut is None else T((len(lut),), dtypes[2], data=lut)
    return op_model("SignalPCAN", [T((n_in,), dtypes[0]), T((n_noise,), dtypes[1]), table], [T((n_out,), dtypes[3])],
                    custom_options=custom_options(snr_shift=snr_shift, **extra))


def spread(n: int, rng: np.random.Generator) -> np.ndarray:
    return (rng.integers(0, 2**32, n, dtype=np.uint64) >> rng.integers(0, 32, n).astype(np.uint64)).astype(np.uint32)


def noise_values(rng: np.random.Generator) -> np.ndarray:
    """0..2100 (every small case and fraction width), the edges of every bit length, and a random spread."""
    edges = [v for b in range(1, 33) for v in (2**b - 1, 2**b, 2**b + 1, 3 * 2 ** (b - 1))]
    return np.concatenate([np.arange(2100), np.array(edges, np.uint64) % 2**32, spread(1000, rng)]).astype(np.uint32)


@pytest.mark.parametrize("snr_shift", [0, 6, 12, 20, 31, 32, 63])
@pytest.mark.parametrize("kind", ["smooth", "random"])
def test_matches_tflm(kind: str, snr_shift: int) -> None:
    rng = np.random.default_rng(snr_shift)
    lut = smooth_lut() if kind == "smooth" else rng.integers(-32768, 32768, 125).astype(np.int16)
    noise = noise_values(rng)
    signal = spread(len(noise), rng)
    model = pcan_model(len(noise), lut, snr_shift)
    assert_same_as_tflm(model, [signal, noise])
    assert_same_as_tflm(model, [np.full(len(noise), 2**32 - 1, np.uint32), noise])


def test_table_as_model_input_and_longer() -> None:
    rng = np.random.default_rng(5)
    model = pcan_model(64, None, 6, lut_len=130)
    for _ in range(3):
        lut = rng.integers(-32768, 32768, 130).astype(np.int16)
        assert_same_as_tflm(model, [spread(64, rng), spread(64, rng), lut])
    assert_same_as_tflm(pcan_model(16, np.append(smooth_lut(), [5, -5]), 6), runs=2)


@pytest.mark.parametrize("dtypes", [("int32", "uint32", "int16", "uint32"), ("uint32", "int32", "int16", "uint32"),
                                    ("uint32", "uint32", "int32", "uint32"), ("uint32", "uint32", "int16", "int32")],
                         ids=str)
def test_unsupported_types(dtypes: tuple) -> None:
    model = pcan_model(2, smooth_lut().astype(dtypes[2]), dtypes=dtypes)
    with pytest.raises(TflmError):
        run_tflm(model, [np.zeros(2, dtypes[0]), np.zeros(2, dtypes[1])])
    with pytest.raises((UnsupportedError, PrepareError)):
        Interpreter(model).allocate_tensors()


@pytest.mark.parametrize("model,match", [
    (pcan_model(4, smooth_lut()[:124]), "gain_lut"),  # a noise estimate of 2**31 or more reads entry 124
    (pcan_model(4, smooth_lut(), sizes=(4, 5, 4)), "elements"),
    (pcan_model(4, smooth_lut(), sizes=(5, 4, 4)), "elements"),
    (pcan_model(4, smooth_lut(), sizes=(4, 4, 5)), "elements"),
    (pcan_model(4, smooth_lut(), 64), "out of range"),
    (pcan_model(4, smooth_lut(), -1), "out of range"),
    (pcan_model(4, smooth_lut(), aaa=1), "exactly the keys"),
    (op_model("SignalPCAN", [T((4,), "uint32"), T((4,), "uint32"), T((125,), "int16", data=smooth_lut())],
              [T((4,), "uint32")], custom_options=custom_options()), "missing"),
    (op_model("SignalPCAN", [T((4,), "uint32"), T((4,), "uint32"), T((5, 25), "int16", data=smooth_lut())],
              [T((4,), "uint32")], custom_options=custom_options(snr_shift=6)), "1 dimension"),
    (op_model("SignalPCAN", [T((1, 4), "uint32"), T((1, 4), "uint32"), T((125,), "int16", data=smooth_lut())],
              [T((1, 4), "uint32")], custom_options=custom_options(snr_shift=6)), "1 dimension"),
    (op_model("SignalPCAN", [T((4,), "uint32"), T((4,), "uint32")], [T((4,), "uint32")],
              custom_options=custom_options(snr_shift=6)), "inputs"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_rejects_bad_models(model: bytes, match: str) -> None:
    with pytest.raises(PrepareError, match=match):
        Interpreter(model).allocate_tensors()
