"""SignalFilterBankSquareRoot (TFLM signal library): rounded integer square roots of uint64 filter-bank sums.

Inputs: ``input`` (uint64, 1-D) and ``scale_bits`` (int32 scalar, usually SignalFftAutoScale's second output, so
known only at invoke). Output: uint32, 1-D, same size. Custom options: none are read (any, or none, are accepted).

Each output is ``sqrt(x) >> scale_bits`` where the square root is TFLM's integer one, established against the wheel
over tens of thousands of values: ``s = floor(sqrt(x))`` rounded up when the remainder ``x - s*s`` exceeds ``s``
(i.e. to nearest), except that it saturates instead: at 0xFFFF for inputs below 2**32 (2**32 - 1 gives 65535, not
65536) and at 0xFFFFFFFF above.

Refused: ``scale_bits`` outside [0, 31], a C undefined shift (the wheel's x86 build shifts by ``scale_bits % 32``); in
prepare when the tensor is constant, else as an InvokeError at invoke. Sizes must match (TFLM loops over the output,
reading past a shorter input).
"""

from __future__ import annotations

import numpy as np

from micronn.errors import InvokeError
from micronn.kernels import _signal as sf
from micronn.kernels.base import Kernel, Node, register

U64 = np.uint64


def rounded_sqrt(x: np.ndarray) -> np.ndarray:
    """TFLM's integer square root of uint64 values (see the module docstring), as uint64."""
    s = np.minimum(np.sqrt(x.astype(np.float64)), float(sf.MASK32)).astype(U64)  # floor(sqrt) within one
    s -= (s * s > x).astype(U64)
    s += ((s < U64(sf.MASK32)) & ((s + U64(1)) * (s + U64(1)) <= x)).astype(U64)
    cap = np.where(x >> U64(32), U64(sf.MASK32), U64(0xFFFF))
    return s + ((x - s * s > s) & (s != cap)).astype(U64)


@register
class SignalFilterBankSquareRoot(Kernel):
    op = "SignalFilterBankSquareRoot"
    dtypes = frozenset({"uint64"})
    reads_input_first = True

    def prepare(self, node: Node) -> None:
        (x, scale), (out,) = sf.operands(node, 2, 1)
        n = sf.expect(node, x, "input", "uint64")
        sf.expect(node, scale, "scale_bits", "int32", rank=0)
        sf.same_size(node, n, output=sf.expect(node, out, "output", "uint32"))
        if scale.is_constant:
            sf.in_range(node, "scale_bits", int(np.asarray(scale.data).reshape(-1)[0]), 0, 31)

    def invoke(self, node: Node) -> None:
        shift = int(node.input(1).reshape(-1)[0])
        if not 0 <= shift <= 31:
            raise InvokeError(f"operator {node.index} ({self.op}): scale_bits = {shift} is out of range [0, 31]")
        node.output(0)[...] = (rounded_sqrt(node.input(0)) >> U64(shift)).astype(np.uint32)
