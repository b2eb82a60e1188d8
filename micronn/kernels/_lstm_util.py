"""Arithmetic shared by the recurrent kernels (UNIDIRECTIONAL_SEQUENCE_LSTM, SVDF), exactly as TFLM computes it.

* ``dot_float``: float32 matrix-vector products accumulated in C's sequential order.
* ``nan_from``, ``add_first``, ``mul_second``: which NaN comes out of a float32 operation whose operands are both
  NaN, as TFLM's compiled LSTM picks it (measured against the wheel): x86 returns one operand's NaN, quieted, and
  numpy's loops pick either operand depending on array size and layout, so the winner is set explicitly.

TFLM's int16 sigmoid/tanh, its float logistic and the C library's ``tanhf`` live in ``micronn.fixedpoint`` and
``micronn.kernels._unary``, shared with the LOGISTIC and TANH kernels.
"""

from __future__ import annotations

import numpy as np


def dot_float(x: np.ndarray, w: np.ndarray, exact_nan: bool = False) -> np.ndarray:
    """``x @ w.T`` in float32, each sum accumulated from 0 in index order like a C loop.

    ``x`` is (batch, depth), ``w`` is (units, depth); numpy's BLAS would sum in another order. With ``exact_nan``
    NaNs propagate as TFLM's ``total += input * weight`` does: the input's NaN in a product, the running total's
    in a sum (only needed when ``x`` or ``w`` hold NaNs: every NaN that arithmetic creates has the same bits).
    """
    x = np.asarray(x, dtype=np.float32)
    w = np.asarray(w, dtype=np.float32)
    acc = np.zeros((x.shape[0], w.shape[0]), dtype=np.float32)
    exact_nan = exact_nan and bool(np.isnan(x).any() or np.isnan(w).any())
    with np.errstate(all="ignore"):
        for d in range(x.shape[1]):
            if not exact_nan:
                acc += x[:, d : d + 1] * w[:, d]
                continue
            xs = x[:, d : d + 1]
            acc = add_first(acc, nan_from(xs * w[:, d], xs))
    return acc


_QUIET = np.uint32(0x00400000)


def nan_from(result: np.ndarray, winner: np.ndarray) -> np.ndarray:
    """``result`` (changed in place) where ``winner`` is NaN takes that NaN, quieted as x86 arithmetic returns it."""
    mask = np.isnan(winner)
    if mask.any():
        mask = np.broadcast_to(mask, result.shape)
        bits = np.broadcast_to(np.asarray(winner, np.float32), result.shape)[mask].view(np.uint32) | _QUIET
        result[mask] = bits.view(np.float32)
    return result


def add_first(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """float32 ``a + b`` keeping ``a``'s NaN when both are NaN."""
    with np.errstate(all="ignore"):
        return nan_from(np.asarray(np.add(a, b, dtype=np.float32)), a)


def mul_second(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """float32 ``a * b`` keeping ``b``'s NaN when both are NaN."""
    with np.errstate(all="ignore"):
        return nan_from(np.asarray(np.multiply(a, b, dtype=np.float32)), b)
