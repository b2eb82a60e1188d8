"""CAST between TFLM's supported types, value by value like C's ``static_cast`` on TFLM's x86-64 host build.

TFLM casts from and to float32, int8, int16, int32, uint32 and bool (any pair), ignoring quantization.
Integer narrowing keeps the low bits (C's conversions); to bool is ``x != 0`` (NaN is true). float32 ->
integer truncates toward zero and saturates at the target type's limits (infinities included); NaN gives 0.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels import _elementwise as ew
from micronn.kernels.base import Kernel, Node, register

TYPES = frozenset({"float32", "int8", "int16", "int32", "uint32", "bool"})


def cast(x: np.ndarray, to: np.dtype) -> np.ndarray:
    """TFLM's cast of ``x`` to ``to``, elementwise."""
    if to == np.bool_:
        return x != 0
    if x.dtype == np.float32 and to != np.float32:
        info = np.iinfo(to)
        with np.errstate(invalid="ignore"):
            clipped = np.clip(np.trunc(x.astype(np.float64)), info.min, info.max)
        return np.where(np.isnan(clipped), 0, clipped).astype(to)
    return x.astype(to)  # integers keep their low bits, like C's conversions


@register
class Cast(Kernel):
    """TFLM CAST between float32, int8, int16, int32, uint32 and bool."""

    op = "CAST"
    dtypes = TYPES
    reads_input_first = True  # computes the whole result before writing

    def prepare(self, node: Node) -> None:
        (a,), out = ew.operands(node, 1)
        if out.dtype.name not in TYPES:
            raise node.fail(f"TFLM cannot cast to {out.dtype.name} (it casts to {', '.join(sorted(TYPES))})")
        ew.check_broadcast(node, [a], out, max_dims=None)

    def invoke(self, node: Node) -> None:
        out = node.output(0)
        out[...] = cast(node.input(0), out.dtype).reshape(out.shape)
