"""Shared pieces of ADD_N, BROADCAST_ARGS, COS, SIN, DYNAMIC_UPDATE_SLICE, EMBEDDING_LOOKUP, FLOOR_DIV,
FLOOR_MOD, REDUCE_ALL and REVERSE_V2. Not a kernel module: it registers nothing.

* ``sinf`` / ``cosf``: float32 sine and cosine exactly as glibc's ``sinf`` / ``cosf``, which TFLM's float
  kernels call through ``std::sin(float)`` / ``std::cos(float)``.
* ``FloatFunction``: the kernel shape of TFLM's float32-only elementwise functions (SIN, COS).
* ``FloatBinary``: the operand rules of TFLM's float32 FLOOR_DIV / FLOOR_MOD, which broadcast through
  ``BroadcastBinaryFunction4DSlow`` (at most 4 dimensions) and otherwise walk the flat elements.
* ``element_count`` / ``refuse_zero_size``: small checks several of these kernels make.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from micronn.ir import Tensor
from micronn.kernels import _elementwise as ew
from micronn.kernels import _unary as un
from micronn.kernels._reduce import invoke_error
from micronn.kernels.base import Kernel, Node

__all__ = [
    "FloatBinary",
    "cosf",
    "element_count",
    "invoke_error",
    "refuse_zero_size",
    "sinf",
]

# glibc 2.36's sinf and cosf are not correctly rounded (each differs from the float64 sin/cos rounded to float32
# for about 29 million float32 inputs), but an exhaustive comparison over every finite float finds them differing
# only where the exact value lies within 0.0607 ulp (sinf) and 0.0608 ulp (cosf) of a rounding tie; numpy's
# float64 sin/cos equal glibc's on every float32 input. Values within 0.1 ulp of a tie go to the C library.
TRIG_TIE_ULPS = 0.1


def sinf(x) -> np.ndarray:
    """float32 sine as C's ``sinf``, bit for bit (NaN payloads included)."""
    return un._libm_exact("sinf", np.sin, x, TRIG_TIE_ULPS)


def cosf(x) -> np.ndarray:
    """float32 cosine as C's ``cosf``, bit for bit (NaN payloads included)."""
    return un._libm_exact("cosf", np.cos, x, TRIG_TIE_ULPS)


def element_count(t: Tensor) -> int:
    return int(np.prod(t.shape, dtype=np.int64))


def refuse_zero_size(node: Node, tensors: Sequence[Tensor | None]) -> None:
    """Refuse zero-size operands up front: TFLM's allocator does not accept them."""
    if any(t is not None and element_count(t) == 0 for t in tensors):
        raise node.fail("zero-size tensors are not supported (TFLM's allocator refuses them)")


# BroadcastBinaryFunction4DSlow extends every shape to 4 dimensions; TFLM aborts on more.
MAX_BROADCAST_DIMS = 4


class FloatBinary(Kernel):
    """Operand checks and broadcasting of TFLM's float32 FLOOR_DIV and FLOOR_MOD.

    Inputs of identical shapes are combined element by element over the flat buffers (any rank TFLM's
    RuntimeShape holds, the output needing as many elements); other shapes broadcast like numpy to the
    output's shape through TFLM's 4-D broadcasting loop, which aborts on operands of more than 4 dimensions.
    """

    dtypes = frozenset({"float32"})
    reads_input_first = True

    def prepare(self, node: Node) -> None:
        (a, b), out = ew.operands(node, 2)
        ew.same_types(node, [a, b, out], ("input 1", "input 2", "the output"))
        broadcasting = ew.check_broadcast(node, [a, b], out)
        if broadcasting and max(len(a.shape), len(b.shape), len(out.shape)) > MAX_BROADCAST_DIMS:
            raise node.fail(f"broadcasting {tuple(a.shape)} with {tuple(b.shape)}: TFLM's broadcasting "
                            f"{node.op.op} supports at most {MAX_BROADCAST_DIMS} dimensions (it aborts beyond)")

    def invoke(self, node: Node) -> None:
        x1, x2 = ew.broadcast_inputs(node, 2)
        out = node.output(0)
        with np.errstate(all="ignore"):  # infinities and NaNs arise silently, as in C
            out[...] = self.apply(node, x1, x2).reshape(out.shape)

    def apply(self, node: Node, x1: np.ndarray, x2: np.ndarray) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError
