"""Shared pieces of the elementwise kernels: operand checks, broadcasting, activation clamps and
TFLM's fixed-point rescaling of quantized operands.

TFLM broadcasts like numpy (shapes aligned on the right, a dimension of 1 stretches), walking the
output shape, which it never recomputes: the model's output shape must be the broadcast shape
(leading 1s aside). When the inputs have identical shapes TFLM takes a flat path instead, where only
the element count of the output matters.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from micronn.ir import Activation, Tensor
from micronn.kernels.base import Kernel, Node
from micronn.quant import (
    activation_range_quantized,
    dtype_range,
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    wrap_int32,
)

FLOAT32_MAX = np.float32(np.finfo(np.float32).max)

# TFLM's RuntimeShape holds at most 6 dimensions: the binary kernels compute garbage (or crash) beyond,
# and micronn refuses such operands. Unary kernels count elements only and take any rank.
MAX_DIMS = 6
BINARY = ("input 1", "input 2", "the output")  # how errors name the operands of a binary kernel


def operands(node: Node, n_inputs: int) -> tuple[list[Tensor], Tensor]:
    """The ``n_inputs`` input tensors and the single output, refusing omitted inputs and other counts."""
    if len(node.inputs) != n_inputs or len(node.outputs) != 1:
        raise node.fail(f"expects {n_inputs} input(s) and 1 output, got {len(node.inputs)} and {len(node.outputs)}")
    if any(t is None for t in node.inputs):
        raise node.fail("an input is omitted")
    return list(node.inputs), node.outputs[0]  # type: ignore[arg-type]


def same_types(node: Node, tensors: Sequence[Tensor], names: Sequence[str]) -> None:
    """Refuse operands whose types differ (TFLM reads them all as the first one's type)."""
    first = tensors[0].dtype
    for t, name in zip(tensors[1:], names[1:], strict=True):
        if t.dtype != first:
            raise node.fail(f"{name} is {t.dtype.name} but {names[0]} is {first.name}")


def binary_operands(node: Node) -> tuple[Tensor, Tensor, Tensor]:
    """The two inputs and the output of a binary kernel, of one type, the inputs broadcasting to the output."""
    (a, b), out = operands(node, 2)
    same_types(node, [a, b, out], BINARY)
    check_broadcast(node, [a, b], out)
    return a, b, out


def _strip_leading_ones(shape: Sequence[int]) -> tuple[int, ...]:
    shape = tuple(int(d) for d in shape)
    k = 0
    while k < len(shape) and shape[k] == 1:
        k += 1
    return shape[k:]


def check_broadcast(node: Node, inputs: Sequence[Tensor], out: Tensor, max_dims: int | None = MAX_DIMS) -> bool:
    """Validate the operand shapes against the output like TFLM's two paths; True when broadcasting.

    Identical input shapes take TFLM's flat path: the output needs the same number of elements.
    Otherwise the inputs must broadcast (numpy rules) to the output shape, leading 1s aside.
    ``max_dims`` (None for no limit) bounds the rank of every operand.
    """
    shapes = [tuple(t.shape) for t in inputs]
    if max_dims is not None and max(len(s) for s in [*shapes, tuple(out.shape)]) > max_dims:
        raise node.fail(f"operands of shapes {', '.join(map(str, [*shapes, tuple(out.shape)]))}: TFLM supports at "
                        f"most {max_dims} dimensions here")
    if any(0 in s for s in [*shapes, tuple(out.shape)]):
        raise node.fail("zero-size tensors are not supported (TFLM's allocator refuses them)")
    if all(s == shapes[0] for s in shapes):
        n_in = int(np.prod(shapes[0], dtype=np.int64))
        n_out = int(np.prod(out.shape, dtype=np.int64))
        if n_in != n_out:
            raise node.fail(f"inputs of shape {shapes[0]} have {n_in} elements but the output {tuple(out.shape)} "
                            f"has {n_out}")
        return False
    try:
        shape = np.broadcast_shapes(*shapes)
    except ValueError:
        raise node.fail(f"input shapes {', '.join(map(str, shapes))} do not broadcast") from None
    if _strip_leading_ones(shape) != _strip_leading_ones(out.shape):
        raise node.fail(f"inputs {', '.join(map(str, shapes))} broadcast to {shape}, but the output is "
                        f"{tuple(out.shape)}")
    return True


def broadcast_inputs(node: Node, n_inputs: int) -> list[np.ndarray]:
    """The input views, each reshaped so that numpy broadcasting yields exactly the output's shape."""
    out_shape = tuple(node.outputs[0].shape)
    views = [node.input(i) for i in range(n_inputs)]
    shapes = [v.shape for v in views]
    if all(s == shapes[0] for s in shapes):
        return [v.reshape(out_shape) for v in views]
    rank = len(out_shape)
    return [v.reshape((1,) * (rank - v.ndim) + v.shape) if v.ndim < rank else v.reshape(_fit(v.shape, rank))
            for v in views]


def _fit(shape: tuple[int, ...], rank: int) -> tuple[int, ...]:
    """Drop the leading 1s of a shape with more dimensions than the output (checked in prepare)."""
    return shape[len(shape) - rank:] if rank else ()


def activation(node: Node) -> int:
    """The fused activation of the operator (NONE when it has no options)."""
    opts = node.options
    return int(getattr(opts, "fused_activation_function", Activation.NONE)) if opts is not None else Activation.NONE


def float_activation_range(act: int) -> tuple[np.float32, np.float32]:
    """TFLM CalculateActivationRange<float>: activations other than the RELUs clamp to +-FLT_MAX."""
    if act == Activation.RELU:
        return np.float32(0.0), FLOAT32_MAX
    if act == Activation.RELU6:
        return np.float32(0.0), np.float32(6.0)
    if act == Activation.RELU_N1_TO_1:
        return np.float32(-1.0), np.float32(1.0)
    return -FLOAT32_MAX, FLOAT32_MAX


def int_activation_range(act: int, dtype: np.dtype) -> tuple[int, int]:
    """TFLM CalculateActivationRange<int32_t/int64_t>: the RELU bounds in raw integers."""
    lo, hi = dtype_range(dtype)
    if act == Activation.RELU:
        return 0, hi
    if act == Activation.RELU6:
        return 0, 6
    if act == Activation.RELU_N1_TO_1:
        return -1, 1
    return lo, hi


def quantized_activation_range(act: int, out: Tensor) -> tuple[int, int]:
    """TFLM CalculateActivationRangeQuantized; TANH and SIGN_BIT clamp to the type's range only (the
    wheel accepts them silently)."""
    if act not in (Activation.RELU, Activation.RELU6, Activation.RELU_N1_TO_1):
        act = Activation.NONE
    return activation_range_quantized(act, out)


def activation_range(node: Node, out: Tensor) -> tuple:
    """The clamp range of the fused activation for the output's type: quantized, float32 or raw integers."""
    act = activation(node)
    if out.dtype in (np.int8, np.int16):
        return quantized_activation_range(act, out)
    if out.dtype == np.float32:
        return float_activation_range(act)
    return int_activation_range(act, out.dtype)


def nan_from_second(a: Tensor, b: Tensor, out: Tensor, broadcast_only: bool) -> bool:
    """Whether TFLM's float ADD/MUL returns its second operand's NaN when both operands are NaN.

    x86 returns the NaN of an instruction's first source, and the compiler ordered the wheel's loops so that the
    second input comes first, except when its last dimension is broadcast (a scalar held in a register); ADD with
    equal shapes (``broadcast_only``) keeps the first input first. Found by experiment with the wheel."""
    if broadcast_only and tuple(a.shape) == tuple(b.shape):
        return False
    last = out.shape[-1] if len(out.shape) else 1
    return not (last > 1 and (len(b.shape) == 0 or b.shape[-1] == 1))


def both_nan(raw: np.ndarray, x1: np.ndarray, x2: np.ndarray, second: bool) -> np.ndarray:
    """``raw`` (float32 ``x1 + x2`` or ``x1 * x2``) where both operands are NaN: the second's NaN where ``second``
    (``nan_from_second``) else the first's, quieted, as x86 gives it for that order. Set explicitly: numpy's loops
    (like a C compiler) may put either operand of a sum or product first, depending on sizes and broadcasting."""
    if raw.dtype != np.float32:
        return raw
    both = np.isnan(x1) & np.isnan(x2)
    if not both.any():
        return raw
    raw = np.array(np.broadcast_to(raw, both.shape), np.float32)
    pick = np.broadcast_to(x2 if second else x1, both.shape).astype(np.float32)
    raw.view(np.uint32)[both] = pick.view(np.uint32)[both] | np.uint32(0x00400000)
    return raw


def clamp(x: np.ndarray, lo, hi) -> np.ndarray:
    """std::min(std::max(x, lo), hi) exactly, NaN and signed zeros included."""
    x = np.where(x < lo, lo, x)
    return np.where(hi < x, hi, x)


def require_quantized(node: Node, tensors: Sequence[Tensor], names: Sequence[str]) -> None:
    """Refuse int8/int16 operands without a usable per-tensor scale (TFLM would divide by zero)."""
    for t, name in zip(tensors, names, strict=True):
        if t.quant is None or len(t.quant.scale) == 0:
            raise node.fail(f"{name} ({t.dtype.name}) needs quantization parameters")
        if not np.float32(t.scale) > 0 or not np.isfinite(np.float32(t.scale)):
            raise node.fail(f"{name} has scale {t.scale}; it must be positive and finite")


def multiplier_below_one(node: Node, real: float, what: str) -> tuple[int, int]:
    """TFLM QuantizeMultiplierSmallerThanOneExp, whose checks abort the process: micronn refuses instead."""
    if not 0.0 < real < 1.0:
        raise node.fail(f"the {what} multiplier {real!r} must lie in (0, 1) (TFLM aborts otherwise)")
    m, shift = quantize_multiplier(real)
    if shift > 0:
        raise node.fail(f"the {what} multiplier {real!r} rounds up to 1 (TFLM aborts)")
    return m, shift


def requantize(x: np.ndarray, multiplier: int, shift: int) -> np.ndarray:
    """TFLM MultiplyByQuantizedMultiplier (int32 in, int32 out, values carried in int64)."""
    return multiply_by_quantized_multiplier(x, multiplier, shift)


def rescale_operand(x: np.ndarray, offset: int, left_shift: int, multiplier: int, shift: int) -> np.ndarray:
    """``(x + offset) << left_shift`` with int32 wrap-around, then scaled by a multiplier below one.

    This is how TFLM's ADD, SUB, SQUARED_DIFFERENCE and int8 comparisons bring both operands to a common
    fixed-point scale before combining them.
    """
    shifted = wrap_int32((x.astype(np.int64) + offset) << left_shift)
    return multiply_by_quantized_multiplier(shifted, multiplier, shift)


def saturate(x: np.ndarray, lo: int, hi: int, dtype: np.dtype) -> np.ndarray:
    """Clamp integer results into [lo, hi] and narrow them to ``dtype``."""
    return np.clip(x, lo, hi).astype(dtype)


class AddSubParams:
    """TFLM's quantized ADD/SUB parameters: both operands are rescaled to twice the larger input scale
    (after a left shift of 20 bits for int8, 15 for int16), combined, and rescaled to the output."""

    def __init__(self, node: Node, a: Tensor, b: Tensor, out: Tensor, act: int):
        require_quantized(node, [a, b, out], BINARY)
        self.left_shift = 15 if out.dtype == np.int16 else 20
        s1, s2, so = np.float32(a.scale), np.float32(b.scale), np.float32(out.scale)
        twice_max = 2.0 * float(max(s1, s2))  # double arithmetic (float32 differs in the last bit, and so do results)
        real1, real2 = float(s1) / twice_max, float(s2) / twice_max
        real_out = twice_max / (float(1 << self.left_shift) * float(so))
        self.m1, self.s1 = multiplier_below_one(node, real1, "input 1")
        self.m2, self.s2 = multiplier_below_one(node, real2, "input 2")
        self.mo, self.so = multiplier_below_one(node, real_out, "output")
        self.off1, self.off2, self.off_out = -a.zero_point, -b.zero_point, out.zero_point
        self.lo, self.hi = quantized_activation_range(act, out)
        self.dtype = out.dtype

    def compute(self, x1: np.ndarray, x2: np.ndarray, subtract: bool) -> np.ndarray:
        a = rescale_operand(x1, self.off1, self.left_shift, self.m1, self.s1)
        b = rescale_operand(x2, self.off2, self.left_shift, self.m2, self.s2)
        raw = wrap_int32(a - b if subtract else a + b)
        return saturate(requantize(raw, self.mo, self.so) + self.off_out, self.lo, self.hi, self.dtype)


class Binary(Kernel):
    """A binary kernel that combines its raw operands with ``apply`` (MAXIMUM, LOGICAL_AND, ...)."""

    reads_input_first = True  # computes the whole result before writing

    def prepare(self, node: Node) -> None:
        binary_operands(node)

    def invoke(self, node: Node) -> None:
        x1, x2 = broadcast_inputs(node, 2)
        out = node.output(0)
        out[...] = self.apply(x1, x2).reshape(out.shape)
