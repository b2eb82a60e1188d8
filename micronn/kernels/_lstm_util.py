"""Arithmetic shared by the recurrent kernels (UNIDIRECTIONAL_SEQUENCE_LSTM, SVDF), exactly as TFLM computes it.

* ``logistic_int16`` / ``tanh_int16``: TFLM's int16 sigmoid and tanh (``reference_integer_ops``), which
  interpolate linearly in a 256-entry uint16 table of ``sigmoid(i / 24)`` (tanh uses
  ``tanh(x) = 2 * sigmoid(2x) - 1``). The table below was measured from the ``tflite-micro`` wheel's int16
  LOGISTIC and TANH kernels over every int16 input (see ``tests/kernels/test_lstm.py``); it is not
  ``round(65536 * sigmoid(i / 24))`` everywhere (about 50 entries are one higher or lower).
* ``tanhf`` / ``logistic_float``: float32 ``std::tanh`` and TFLM's float logistic as the host C library
  computes them (glibc's ``tanhf`` is not correctly rounded, so it is called for real).
* ``dot_float``: float32 matrix-vector products accumulated in C's sequential order.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable

import numpy as np

from micronn.fixedpoint import expf

# sigmoid(i / 24) in unsigned Q0.16 (saturated to 65535), i = 0..255, as TFLM's int16 sigmoid/tanh use it.
SIGMOID_TABLE = np.array([
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149,
    40794, 41432, 42064, 42688, 43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369,
    47911, 48443, 48964, 49475, 49975, 50464, 50942, 51409, 51865, 52311, 52745, 53169,
    53581, 53983, 54374, 54755, 55125, 55485, 55834, 56174, 56503, 56823, 57133, 57433,
    57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370,
    60565, 60753, 60935, 61110, 61279, 61441, 61599, 61750, 61896, 62036, 62172, 62302,
    62428, 62549, 62666, 62778, 62886, 62990, 63090, 63186, 63279, 63368, 63454, 63536,
    63615, 63691, 63765, 63835, 63903, 63968, 64030, 64090, 64148, 64204, 64257, 64308,
    64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652, 64687, 64721, 64754, 64786,
    64816, 64845, 64873, 64900, 64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079,
    65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208, 65221, 65234, 65246, 65258,
    65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360, 65367,
    65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425, 65429, 65433,
    65438, 65442, 65445, 65449, 65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474,
    65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491, 65493, 65495, 65497, 65498,
    65500, 65501, 65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513,
    65514, 65515, 65516, 65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522,
    65523, 65523, 65524, 65524, 65525, 65525, 65526, 65526, 65526, 65527, 65527, 65528,
    65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530, 65530, 65530, 65531, 65531,
    65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533, 65533, 65533,
    65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534,
    65534, 65534, 65534, 65535,
], dtype=np.int64)


def _scaled_input(x: np.ndarray, input_multiplier: int, input_left_shift: int) -> np.ndarray:
    """Bring int16 input to the table's scale (1/(3*4096) per unit): a power-of-two input scale passes
    ``input_multiplier == 0`` and becomes a multiplication by ``3 << input_left_shift``."""
    x = np.asarray(x, dtype=np.int64)
    if input_multiplier == 0:
        input_multiplier, input_left_shift = 3 << input_left_shift, 0
    rounding = (1 << (input_left_shift - 1)) if input_left_shift > 0 else 0
    return (x * input_multiplier + rounding) >> input_left_shift


def _interpolate(a: np.ndarray, frac_bits: int, saturated: int) -> np.ndarray:
    """Table value at ``a / 2**frac_bits`` with ``frac_bits`` more fraction bits; ``saturated`` from entry 255 on."""
    uh = a >> frac_bits
    idx = np.minimum(uh, 254)
    ua = SIGMOID_TABLE[idx]
    ub = SIGMOID_TABLE[idx + 1]
    ut = a & ((1 << frac_bits) - 1)
    return np.where(uh >= 255, np.int64(saturated), (ua << frac_bits) + ut * (ub - ua))


def logistic_int16(x, input_multiplier: int = 0, input_left_shift: int = 0) -> np.ndarray:
    """TFLM's int16 sigmoid: int16 input, Q0.15 int16 output (as int64)."""
    v = _scaled_input(x, input_multiplier, input_left_shift)
    res = _interpolate(np.abs(v), 9, 0x7FFF << 10)
    res = np.where(v >= 0, res + (1 << 9), (1 << 25) - res + (1 << 9) - 1)
    return res >> 10


def tanh_int16(x, input_multiplier: int = 0, input_left_shift: int = 0) -> np.ndarray:
    """TFLM's int16 tanh: int16 input, Q0.15 int16 output (as int64)."""
    v = _scaled_input(x, input_multiplier, input_left_shift)
    res = _interpolate(np.abs(v), 8, 0xFFFF << 8)
    res = np.where(v >= 0, res - (1 << 23) + (1 << 7), -res + (1 << 23) + (1 << 7) - 1)
    return res >> 8


# ---- float32 as the C library computes it ---------------------------------------------------------------------


def _libm(name: str) -> Callable[[float], float] | None:
    try:
        fn = getattr(ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6"), name)
    except (OSError, AttributeError):  # pragma: no cover - no C math library
        return None
    fn.restype = ctypes.c_float
    fn.argtypes = [ctypes.c_float]
    return fn


_LIBM_TANHF = _libm("tanhf")


def tanhf(x) -> np.ndarray:
    """float32 ``std::tanh`` as the host C library computes it.

    glibc's ``tanhf`` (through ``expm1f``) is off by an ulp from the correctly rounded value for about a
    fifth of inputs in [-4, 4], with no way to tell which from the outside, so every element goes through
    the C library (the LSTM evaluates only ``batch * units`` of them per step).
    """
    x = np.asarray(x, dtype=np.float32)
    if _LIBM_TANHF is None or x.size == 0:  # pragma: no cover - no C math library: correctly rounded
        return np.tanh(x.astype(np.float64)).astype(np.float32)
    return np.asarray(np.frompyfunc(_LIBM_TANHF, 1, 1)(x), dtype=np.float64).astype(np.float32).reshape(x.shape)


def logistic_float(x) -> np.ndarray:
    """TFLM's float32 sigmoid (reference_ops::Logistic): 1 above 16.619047, exp(x) below -9,
    else 1 / (1 + exp(-x)), all in float32 with the C library's ``expf``."""
    x = np.asarray(x, dtype=np.float32)
    one = np.float32(1.0)
    with np.errstate(over="ignore"):
        mid = one / (one + expf(-x))
    low = expf(x)
    return np.where(x > np.float32(16.619047164916992188), one, np.where(x < np.float32(-9.0), low, mid)).astype(
        np.float32)


def dot_float(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``x @ w.T`` in float32, each sum accumulated from 0 in index order like a C loop.

    ``x`` is (batch, depth), ``w`` is (units, depth); numpy's BLAS would sum in another order.
    """
    x = np.asarray(x, dtype=np.float32)
    w = np.asarray(w, dtype=np.float32)
    acc = np.zeros((x.shape[0], w.shape[0]), dtype=np.float32)
    for d in range(x.shape[1]):
        acc += x[:, d : d + 1] * w[:, d]
    return acc
