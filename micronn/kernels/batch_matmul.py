"""BATCH_MATMUL: TFLM's reference kernel for float32, int8 and int16 (``lhs @ rhs`` with broadcast batch dims).

``adj_x``/``adj_y`` transpose the last two dimensions of the LHS/RHS first. TFLM's kernel works on an RHS
transposed to (..., N, K) and, with adj_x, on a transposed LHS: it keeps both copies in *persistent* buffers
(the arena's tail, sized like the operand: elements x element size), not in scratch, so the planned head holds
only the tensors. micronn keeps the same buffers in the tail and uses them the same way (a constant RHS is
transposed once).

Every output element is a dot product over K in order: float32 products added one by one to a float32 total
starting at +0.0; int8 sums ``(rhs - rhs_zp) * (lhs - lhs_zp)`` in int32 (wrapping like C) and requantizes with
the 32-bit double-rounding MultiplyByQuantizedMultiplier; int16 (all zero points 0) sums in int64 and
requantizes with the 64-bit variant of the 16x8 kernels. The real multiplier is
``lhs_scale * rhs_scale / output_scale`` computed in double (each float32 scale widened first, as TFLM does).
BATCH_MATMUL has no fused activation: outputs saturate at the type's limits.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels._conv_util import FloatSum, Requant, exact_matmul, float_kernel, requant64
from micronn.kernels.base import Kernel, Node, register
from micronn.quant import dtype_range, quantize_multiplier, wrap_int32

DTYPES = ("float32", "int8", "int16")


def broadcast_batch(node: Node, lhs: tuple[int, ...], rhs: tuple[int, ...]) -> tuple[int, ...]:
    """The broadcast batch dimensions of two shapes extended to the same rank (TFLM's rule: equal or one is 1)."""
    rank = max(len(lhs), len(rhs))
    lhs = (1,) * (rank - len(lhs)) + lhs
    rhs = (1,) * (rank - len(rhs)) + rhs
    out = []
    for a, b in zip(lhs[:-2], rhs[:-2]):
        if a != b and 1 not in (a, b):
            raise node.fail(f"batch dimensions {lhs[:-2]} and {rhs[:-2]} do not broadcast")
        out.append(b if a == 1 else a)
    return tuple(out)


@register
class BatchMatMul(Kernel):
    """TFLM BATCH_MATMUL (reference kernel): 2-D to 5-D operands of the same type, no hybrid mode."""

    op = "BATCH_MATMUL"
    dtypes = frozenset(DTYPES)

    def prepare(self, node: Node) -> None:
        if len(node.inputs) != 2 or len(node.outputs) != 1 or None in node.inputs:
            raise node.fail("expects 2 inputs (lhs, rhs) and 1 output")
        lhs, rhs = node.inputs
        out = node.outputs[0]
        if lhs.dtype.name not in DTYPES:
            raise node.fail(f"input type {lhs.dtype.name} is not supported (TFLM handles {', '.join(DTYPES)})")
        if rhs.dtype != lhs.dtype:
            raise node.fail(f"lhs is {lhs.dtype.name} but rhs is {rhs.dtype.name} (TFLM has no hybrid mode)")
        if out.dtype != lhs.dtype:
            raise node.fail(f"inputs are {lhs.dtype.name} but the output is {out.dtype.name}")
        for name, t in (("lhs", lhs), ("rhs", rhs)):
            if not 2 <= len(t.shape) <= 5:
                raise node.fail(f"{name} must have 2 to 5 dimensions, got shape {t.shape}")
        o = node.options
        self.adj_x, self.adj_y = bool(o.adj_x), bool(o.adj_y)
        m, k = (lhs.shape[-1], lhs.shape[-2]) if self.adj_x else lhs.shape[-2:]
        k_rhs, n = (rhs.shape[-1], rhs.shape[-2]) if self.adj_y else rhs.shape[-2:]
        if k != k_rhs:
            raise node.fail(f"lhs {lhs.shape} (adj_x={self.adj_x}) and rhs {rhs.shape} (adj_y={self.adj_y}) "
                            f"disagree on the accumulation depth: {k} vs {k_rhs}")
        expected = broadcast_batch(node, tuple(lhs.shape), tuple(rhs.shape)) + (m, n)
        if tuple(out.shape) != expected:
            raise node.fail(f"output shape {out.shape} does not match the computed shape {expected}")
        self.depth = k
        self.kind = lhs.dtype.name
        if self.kind != "float32":
            self._prepare_quantized(node)

        # TFLM's persistent transposition buffers (see the module docstring)
        def swapped(shape: tuple[int, ...]) -> tuple[int, ...]:
            return shape[:-2] + (shape[-1], shape[-2])

        self.lhs_t = node.persistent(np.zeros(swapped(lhs.shape), lhs.dtype)) if self.adj_x else None
        self.rhs_t = None if self.adj_y else node.persistent(np.zeros(swapped(rhs.shape), rhs.dtype))
        self.rhs_ready = False
        if self.rhs_t is not None and rhs.is_constant:
            np.copyto(self.rhs_t, np.swapaxes(node.input(1), -1, -2))
            self.rhs_ready = True

    def _prepare_quantized(self, node: Node) -> None:
        lhs, rhs = node.inputs
        out = node.outputs[0]
        for name, t in (("lhs", lhs), ("rhs", rhs), ("output", out)):
            if t.quant is None or len(t.quant.scale) == 0:
                raise node.fail(f"the {name} tensor of a quantized BATCH_MATMUL must be quantized")
        product = float(np.float32(lhs.scale)) * float(np.float32(rhs.scale))
        if product < 0:
            raise node.fail(f"lhs scale x rhs scale is negative ({product})")
        out_scale = float(np.float32(out.scale))
        if out_scale == 0:
            raise node.fail("the output scale is zero")
        self.multiplier, self.shift = quantize_multiplier(product / out_scale)
        self.lhs_zp, self.rhs_zp, self.out_zp = lhs.zero_point, rhs.zero_point, out.zero_point
        self.qmin, self.qmax = dtype_range(out.dtype)
        if self.kind == "int16":
            if (self.lhs_zp, self.rhs_zp, self.out_zp) != (0, 0, 0):
                raise node.fail("int16 BATCH_MATMUL needs zero points of 0 on every tensor, got "
                                f"{self.lhs_zp}, {self.rhs_zp}, {self.out_zp}")
            if self.shift > 14:
                raise node.fail(f"output multiplier 2**{self.shift} is too large for TFLM's 64-bit rescaling")
        else:
            self.requant = Requant(np.array([self.multiplier]), np.array([self.shift]))
        # exact products: |x - zp| <= 255 for int8, <= 32768 for int16
        bound = self.depth * (255 * 255 if self.kind == "int8" else 32768 * 32768)
        self.exact = np.dtype(np.float32 if bound < 2**24 else np.float64 if bound < 2**53 else np.int64)

    def _operands(self, node: Node) -> tuple[np.ndarray, np.ndarray]:
        """(A, B) with A (..., M, K) and B (..., K, N), through TFLM's transposition buffers."""
        lhs, rhs = node.input(0), node.input(1)
        if self.lhs_t is not None:
            np.copyto(self.lhs_t, np.swapaxes(lhs, -1, -2))
            lhs = self.lhs_t
        if self.rhs_t is not None:
            if not self.rhs_ready:
                np.copyto(self.rhs_t, np.swapaxes(rhs, -1, -2))
            rhs = np.swapaxes(self.rhs_t, -1, -2)
        else:
            rhs = np.swapaxes(rhs, -1, -2)  # adj_y: the rhs is (..., N, K) already
        return lhs, rhs

    def invoke(self, node: Node) -> None:
        a, b = self._operands(node)
        out = node.output(0)
        if self.kind == "float32":
            out[...] = float_kernel(lambda exact: self._float_dot(a, b, out.shape, exact))
            return
        a_off = a.astype(self.exact) - self.exact.type(self.lhs_zp)
        b_off = b.astype(self.exact) - self.exact.type(self.rhs_zp)
        acc = exact_matmul(a_off, b_off)
        if self.kind == "int8":
            scaled = self.requant(wrap_int32(acc))
        else:
            scaled = requant64(acc, self.multiplier, self.shift)
        out[...] = np.clip(scaled + self.out_zp, self.qmin, self.qmax)

    def _float_dot(self, a: np.ndarray, b: np.ndarray, shape: tuple[int, ...], exact: bool) -> np.ndarray:
        """TFLM's float loop: for each output, total += rhs[k] * lhs[k] for k in order, in float32."""
        total = FloatSum(shape, exact)
        for k in range(self.depth):
            total.add_product(b[..., k:k + 1, :], a[..., :, k:k + 1])
        return total.total
