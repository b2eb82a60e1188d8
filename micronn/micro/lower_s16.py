"""Lowerings of the int16x8 kernels (family ``s16``): int16 activations, int8 weights, int64 (or int32) biases.

CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, AVERAGE_POOL_2D, MAX_POOL_2D and SOFTMAX with int16 inputs, as the
Python kernels prepare them (``micronn/kernels``). What the device would otherwise recompute per call is
precomputed here: TFLM's 64-bit requantization reduces each multiplier to Q15 and one total right shift, biases
become int64 arrays (FULLY_CONNECTED's folded with its input zero point), and the weights tell whether a window's
sum can leave int32 (``wide``: the kernels then sum in int64, which a Cortex-M pays for). SOFTMAX gets prepare's
two lookup tables as constants.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from micronn.micro.lower import Arg, ConstRef, Task, _i32, _Op, lowering

INT16_MAX_ABS = 32768  # the largest |x| of an int16 input (the 16x8 convolutions ignore the zero point)


def _i64(a: Any) -> ConstRef:
    return ConstRef(np.ascontiguousarray(np.asarray(a, np.int64).astype("<i8")))


def _check(o: _Op, kind: str) -> None:
    if kind != "int16":
        raise o.unsupported(kind)
    if not getattr(o.k, "constant", True):
        raise o.unsupported(f"{kind} with non-constant weights")


def _per_channel(a: Any, n: int) -> np.ndarray:
    return np.broadcast_to(np.asarray(a, np.int64).reshape(-1), (n,))


def _q15_args(mults: Any, shifts: Any, n: int) -> list[Arg]:
    """TFLM's MultiplyByQuantizedMultiplier(int64, ...) per channel: its multiplier rounded to Q15 and its total
    right shift, as ``requant64`` of the Python kernels computes them."""
    m, s = _per_channel(mults, n), _per_channel(shifts, n)
    return [_i32(np.where(m < 0x7FFF0000, (m + (1 << 15)) >> 16, 0x7FFF)), _i32(15 - s)]


def _wide(rows: np.ndarray, max_in: int = INT16_MAX_ABS) -> int:
    """1 if a sum of ``max_in``-bounded inputs times one row of weights can leave int32 (then summed in int64)."""
    bound = max_in * int(np.abs(rows.astype(np.int64)).sum(axis=1).max(initial=0))
    return int(bound >= 2**31)


@lowering("CONV_2D", "int16", streaming=True)
def _conv(o: _Op) -> list[Task]:
    k, inp = o.k, o.node.inputs[0]
    _check(o, k.kind)
    w, win = k.weights(o.node), k.win
    oc, fh, fw, fc = w.shape
    bias = k.bias64 if k.bias64 is not None else np.zeros(oc, np.int64)
    requant32 = bool(k.acc32)  # an int32 bias: the int8 kernels' 32-bit requantization of the wrapped sum
    quant = ([_i32(_per_channel(k.mult64, oc)), _i32(_per_channel(k.shift64, oc))] if requant32
             else _q15_args(k.mult64, k.shift64, oc))
    return [o.task("mn_conv_2d_s16", o.out(), o.inp(0), o.inp(1), _i64(bias), *quant, inp.shape[0], win.in_h,
                   win.in_w, inp.shape[3], win.out_h, win.out_w, oc, fh, fw, fc, win.stride_h, win.stride_w,
                   win.dilation_h, win.dilation_w, win.pad_top, win.pad_left, int(k.act_min), int(k.act_max),
                   int(requant32), 0 if requant32 else _wide(w.reshape(oc, -1)), int(o.overlaps()))]


@lowering("DEPTHWISE_CONV_2D", "int16", streaming=True)
def _depthwise(o: _Op) -> list[Task]:
    k, inp = o.k, o.node.inputs[0]
    _check(o, k.kind)
    w, win = k.weights(o.node), k.win
    _, fh, fw, oc = w.shape
    bias = k.bias if k.bias is not None else np.zeros(oc, np.int64)
    return [o.task("mn_depthwise_conv_2d_s16", o.out(), o.inp(0), o.inp(1), _i64(bias),
                   *_q15_args(k.mult64, k.shift64, oc), inp.shape[0], win.in_h, win.in_w, inp.shape[3], win.out_h,
                   win.out_w, k.mult, fh, fw, win.stride_h, win.stride_w, win.dilation_h, win.dilation_w,
                   win.pad_top, win.pad_left, int(k.act_min), int(k.act_max), _wide(w.reshape(-1, oc).T),
                   int(o.overlaps()))]


@lowering("FULLY_CONNECTED", "int16")
def _fully_connected(o: _Op) -> list[Task]:
    k = o.k
    _check(o, k.kind)
    w = k.weights(o.node).reshape(-1, k.depth)[:k.units]
    bias = k.bias if k.bias is not None else np.zeros(k.units, np.int64)
    # bias - zp * sum(w): equal, modulo 2^64 as the reference's int64 arithmetic, to summing (x - zp) * w
    bias_full = np.asarray(bias, np.int64) - np.int64(k.in_zp) * w.astype(np.int64).sum(axis=1)
    return [o.task("mn_fully_connected_s16", o.out(), o.inp(0), o.inp(1), _i64(bias_full),
                   *_q15_args(k.mult64, k.shift64, k.units), k.batches, k.depth, k.units, int(k.out_zp),
                   int(k.act_min), int(k.act_max), _wide(w))]


@lowering("AVERAGE_POOL_2D", "int16", streaming=True)
@lowering("MAX_POOL_2D", "int16", streaming=True)
def _pool(o: _Op) -> list[Task]:
    k, inp = o.k, o.node.inputs[0]
    if k.kind != "int16":
        raise o.unsupported(k.kind)
    win = k.win
    symbol = "mn_average_pool_2d_s16" if o.name == "AVERAGE_POOL_2D" else "mn_max_pool_2d_s16"
    return [o.task(symbol, o.out(), o.inp(0), inp.shape[0], win.in_h, win.in_w, inp.shape[3], win.out_h, win.out_w,
                   win.filter_h, win.filter_w, win.stride_h, win.stride_w, win.pad_top, win.pad_left,
                   int(k.act_min), int(k.act_max), int(o.overlaps()))]


@lowering("SOFTMAX", "int16")
def _softmax(o: _Op) -> list[Task]:
    k, inp = o.k, o.node.inputs[0]
    if k.in_dtype != "int16" or k.out_dtype != "int16":
        raise o.unsupported(f"{k.in_dtype} -> {k.out_dtype}")
    size = int(np.prod(inp.shape, dtype=np.int64))
    if size == 0:
        return []
    depth = inp.shape[-1]
    tables = [ConstRef(np.ascontiguousarray(np.asarray(t).astype("<i2"))) for t in (k.exp_lut, k.reciprocal_lut)]
    return [o.task("mn_softmax_s16", o.out(), o.inp(0), *tables, size // depth, depth, int(k.multiplier),
                   int(k.shift))]
