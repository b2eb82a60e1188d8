"""Helpers shared by the reduction kernels (MEAN, SUM, REDUCE_MAX, REDUCE_MIN) and a few index-reading ops.

TFLM's reducers walk the input in row-major order and fold every element into the output slot of its
non-reduced coordinates. Moving the reduced axes last and flattening them therefore lists, for each output,
its elements in exactly TFLM's order; the kernels fold along that last axis. Not a kernel module: it
registers nothing.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from micronn.errors import InvokeError
from micronn.ir import Tensor
from micronn.kernels.base import Kernel, Node
from micronn.quant import multiply_by_quantized_multiplier, quantize_multiplier, wrap_int32

FLOAT_LOWEST = np.float32(np.finfo(np.float32).min)
FLOAT_MAX = np.float32(np.finfo(np.float32).max)


def invoke_error(node: Node, msg: str) -> InvokeError:
    """An error naming the operator, for kernels that can only check run-time values (TFLM fails at invoke)."""
    return InvokeError(f"operator {node.index} ({node.op.op}): {msg}")


def int32_words(node: Node, i: int) -> np.ndarray:
    """Input ``i`` read the way TFLM reads an ``int32_t*`` index tensor: its first int32 words, whatever its type."""
    raw = np.ascontiguousarray(node.input(i)).reshape(-1)
    return raw.view(np.int32)[: raw.size].astype(np.int64) if raw.dtype.itemsize >= 4 else raw.astype(np.int64)


def resolve_axes(values: np.ndarray, rank: int) -> tuple[int, ...] | str:
    """TFLM ResolveAxis: wrap negative axes, drop duplicates; the sorted axes, or why they are invalid."""
    if rank == 0:  # TFLM short-cuts scalars: the axes go unused
        return ()
    out: set[int] = set()
    for v in np.asarray(values).reshape(-1).tolist():
        a = v + rank if v < 0 else v
        if not 0 <= a < rank:
            return f"axis {v} is out of range for a {rank}-D input"
        out.add(a)
    return tuple(sorted(out))


def reduced_2d(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """(outputs, reduced elements): each row lists one output's elements in TFLM's (row-major) order."""
    kept = [k for k in range(x.ndim) if k not in axes]
    n_out = int(np.prod([x.shape[k] for k in kept], dtype=np.int64))
    return np.transpose(x, kept + list(axes)).reshape(n_out, -1)


def float_sum_rows(x2: np.ndarray) -> np.ndarray:
    """float32 ``total = 0; total += x`` along each row, in order, exactly as TFLM's loop rounds.

    ``np.add.accumulate`` is sequential (numpy's ``sum`` is pairwise and rounds differently); adding +0.0
    reproduces TFLM's zero start, which turns an all -0.0 row into +0.0. Once the running total is NaN the
    C loop keeps that NaN, so a NaN row takes the value of its first NaN partial sum.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        partial = np.add.accumulate(x2.astype(np.float32, copy=False), axis=1, dtype=np.float32)
        total = partial[:, -1] + np.float32(0.0)
    nan_rows = np.isnan(total)
    if nan_rows.any():
        first = np.argmax(np.isnan(partial[nan_rows]), axis=1)
        total[nan_rows] = partial[nan_rows][np.arange(len(first)), first]
    return total


def float_extreme_rows(x2: np.ndarray, is_max: bool) -> np.ndarray:
    """TFLM's float REDUCE_MAX/MIN: start at lowest()/max(), replace when ``in > current`` (``<`` for min).

    NaNs never win, infinities end at the float range's limit, and among equal values the first one seen
    stays, which decides the sign of a zero result.
    """
    init = FLOAT_LOWEST if is_max else FLOAT_MAX
    clean = np.where(np.isnan(x2), init, x2)
    best = clean.max(axis=1) if is_max else clean.min(axis=1)
    best = np.maximum(best, init) if is_max else np.minimum(best, init)
    zero = best == 0
    if zero.any():  # +0.0 and -0.0 compare equal: the first zero of the row is what TFLM keeps
        rows = clean[zero]
        first = np.argmax(rows == 0, axis=1)
        best[zero] = rows[np.arange(len(first)), first]
    return best.astype(np.float32)


class Reducer(Kernel):
    """Shared prepare of MEAN, SUM, REDUCE_MAX and REDUCE_MIN: inputs, the int32 axis tensor, the output size.

    TFLM requests two scratch buffers for its index bookkeeping, 4 bytes per input dimension and 4 bytes
    per entry of the axis tensor (duplicates included), so no rank or axis count limit applies. Constant
    axes are resolved here; TFLM reads the axis tensor at every invoke, so a computed one is resolved (and
    checked) at invoke instead.
    """

    def check_common(self, node: Node) -> None:
        if len(node.inputs) != 2 or len(node.outputs) != 1 or node.inputs[0] is None or node.inputs[1] is None:
            raise node.fail("expects 2 inputs (input, axis) and 1 output")
        inp, axis, out = node.inputs[0], node.inputs[1], node.outputs[0]
        if axis.dtype != np.int32:
            raise node.fail(f"the axis tensor must be int32 (TFLM requires it), got {axis.dtype.name}")
        if inp.dtype != out.dtype:
            raise node.fail(f"input is {inp.dtype.name} but output is {out.dtype.name}")
        # TFLM's index buffers: one int per input dimension and one per entry of the axis tensor
        node.request_scratch(4 * len(inp.shape))
        node.request_scratch(4 * int(np.prod(axis.shape, dtype=np.int64)))
        self.axes: tuple[int, ...] | None = None
        if axis.is_constant:
            self.axes = self.resolve(node, node.input(1), node.fail)

    def resolve(self, node: Node, values: np.ndarray, error: Callable[[str], Exception]) -> tuple[int, ...]:
        """Resolve and check the axes against the input and output shapes; ``error(msg)`` builds the exception."""
        inp, out = node.inputs[0], node.outputs[0]
        axes = resolve_axes(values, len(inp.shape))
        if isinstance(axes, str):
            raise error(axes + " (TFLM fails at invoke)")
        n_out = int(np.prod([d for k, d in enumerate(inp.shape) if k not in axes], dtype=np.int64))
        if n_out != int(np.prod(out.shape, dtype=np.int64)):
            raise error(f"reducing {inp.shape} over axes {list(axes)} gives {n_out} values, "
                        f"but the output {out.shape} holds {int(np.prod(out.shape))}")
        return axes

    def current_axes(self, node: Node) -> tuple[int, ...]:
        if self.axes is not None:
            return self.axes
        return self.resolve(node, node.input(1), lambda msg: invoke_error(node, msg))


class MeanOrSum(Reducer):
    """TFLM MEAN and SUM for float32, int8 and int16.

    float32 sums in order in float32 (MEAN then divides by the element count in float32). int8/int16
    follow TFLM's QuantizedMeanOrSum: an int32 sum of the raw values, minus the input zero point times the
    count, rescaled by QuantizeMultiplier(input scale / output scale); MEAN folds 1/count into that
    multiplier (pre-shifting it by up to floor(log2(count)) bits, clamped to 32 and to 31 + shift, then
    integer-dividing). TFLM requests one int32 scratch buffer per output element for the quantized types.
    """

    dtypes = frozenset({"float32", "int8", "int16"})
    is_mean = False

    def prepare(self, node: Node) -> None:
        self.check_common(node)
        inp, out = node.inputs[0], node.outputs[0]
        self.quantized = inp.dtype != np.float32
        if self.quantized:
            real = float(np.float32(inp.scale)) / float(np.float32(out.scale)) if out.scale else float("inf")
            if not np.isfinite(real):
                raise node.fail("the output scale is 0")
            self.multiplier, self.shift = quantize_multiplier(real)
            self.in_zp, self.out_zp = inp.zero_point, out.zero_point
            self.scratch = node.request_scratch(4 * int(np.prod(out.shape, dtype=np.int64)))

    def invoke(self, node: Node) -> None:
        axes = self.current_axes(node)
        x2 = reduced_2d(node.input(0), axes)
        out = node.output(0).reshape(-1)
        n = x2.shape[1]
        if not self.quantized:
            total = float_sum_rows(x2)
            if self.is_mean:
                total = total / np.float32(n)
            out[...] = total
            return
        total = wrap_int32(x2.astype(np.int64).sum(axis=1))  # TFLM's int32 temp_sum
        multiplier, shift = self.multiplier, self.shift
        if self.is_mean:
            pre = min(n.bit_length() - 1, 32, 31 + shift)
            multiplier = int(wrap_int32((multiplier << pre) // n))  # pre >= 0: quantize_multiplier's shift >= -31
            shift -= pre
        shifted = wrap_int32(total - self.in_zp * n)
        y = multiply_by_quantized_multiplier(shifted, multiplier, shift) + self.out_zp
        info = np.iinfo(out.dtype)
        out[...] = np.clip(y, info.min, info.max)


def qparams_equal(a: Tensor, b: Tensor) -> bool:
    """TFLM's float/int comparison of two tensors' per-tensor scale and zero point."""
    return float(np.float32(a.scale)) == float(np.float32(b.scale)) and a.zero_point == b.zero_point


class MaxOrMin(Reducer):
    """TFLM REDUCE_MAX and REDUCE_MIN for float32 and int8 (the wheel rejects int16 at invoke).

    int8 never rescales: TFLM fails unless input and output share scale and zero point.
    """

    dtypes = frozenset({"float32", "int8"})
    is_max = True

    def prepare(self, node: Node) -> None:
        self.check_common(node)
        inp, out = node.inputs[0], node.outputs[0]
        if inp.dtype == np.int8 and not qparams_equal(inp, out):
            raise node.fail(f"int8 input and output need the same scale and zero point (TFLM does not rescale), "
                            f"got ({inp.scale}, {inp.zero_point}) and ({out.scale}, {out.zero_point})")

    def invoke(self, node: Node) -> None:
        x2 = reduced_2d(node.input(0), self.current_axes(node))
        out = node.output(0).reshape(-1)
        if out.dtype == np.float32:
            out[...] = float_extreme_rows(x2, self.is_max)
        else:
            out[...] = x2.max(axis=1) if self.is_max else x2.min(axis=1)


class ArgMinMax(Kernel):
    """TFLM ARG_MAX and ARG_MIN: float32 or int8 input, int32 axis, int32 output (all the wheel accepts).

    TFLM starts from the first element and moves on only when an element compares strictly greater (less),
    so ties keep the first index, a NaN is never picked, and a NaN first element keeps index 0.
    """

    dtypes = frozenset({"float32", "int8"})
    is_max = True

    def prepare(self, node: Node) -> None:
        if len(node.inputs) != 2 or len(node.outputs) != 1 or node.inputs[0] is None or node.inputs[1] is None:
            raise node.fail("expects 2 inputs (input, axis) and 1 output")
        inp, axis, out = node.inputs[0], node.inputs[1], node.outputs[0]
        if axis.dtype != np.int32:
            raise node.fail(f"the axis must be int32 (TFLM fails at invoke on {axis.dtype.name})")
        if out.dtype != np.int32:
            raise node.fail(f"the output must be int32 (TFLM fails at invoke on {out.dtype.name})")
        if len(inp.shape) == 0:
            raise node.fail("the input must have at least one dimension")
        self.axis: int | None = None
        if axis.is_constant:
            self.axis = self.resolve(node, int(node.input(1).reshape(-1)[0]), node.fail)

    def resolve(self, node: Node, value: int, error: Callable[[str], Exception]) -> int:
        inp, out = node.inputs[0], node.outputs[0]
        rank = len(inp.shape)
        a = value + rank if value < 0 else value
        if not 0 <= a < rank:
            raise error(f"axis {value} is out of range for a {rank}-D input")
        n_out = int(np.prod(inp.shape, dtype=np.int64)) // inp.shape[a]
        if n_out != int(np.prod(out.shape, dtype=np.int64)):
            raise error(f"reducing {inp.shape} along axis {a} gives {n_out} values, the output {out.shape} holds "
                        f"{int(np.prod(out.shape))}")
        return a

    def invoke(self, node: Node) -> None:
        x = node.input(0)
        axis = self.axis
        if axis is None:
            axis = self.resolve(node, int(node.input(1).reshape(-1)[0]), lambda msg: invoke_error(node, msg))
        x = np.moveaxis(x, axis, -1)
        out = node.output(0).reshape(-1)
        if x.dtype == np.float32:
            first_nan = np.isnan(x[..., 0])
            fill = -np.inf if self.is_max else np.inf
            x = np.where(np.isnan(x), np.float32(fill), x)
            idx = np.atleast_1d(np.argmax(x, axis=-1) if self.is_max else np.argmin(x, axis=-1))
            idx[np.atleast_1d(first_nan)] = 0
        else:
            idx = np.argmax(x, axis=-1) if self.is_max else np.argmin(x, axis=-1)
        out[...] = idx.reshape(-1)
