"""Arithmetic shared by the recurrent kernels (UNIDIRECTIONAL_SEQUENCE_LSTM, SVDF), exactly as TFLM computes it.

* ``dot_float``: float32 matrix-vector products accumulated in C's sequential order.

TFLM's int16 sigmoid/tanh, its float logistic and the C library's ``tanhf`` live in ``micronn.fixedpoint`` and
``micronn.kernels._unary``, shared with the LOGISTIC and TANH kernels.
"""

from __future__ import annotations

import numpy as np


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
