"""Lowerings of float32 operators (kernel family ``f32``): FULLY_CONNECTED, CONV_2D, DEPTHWISE_CONV_2D,
AVERAGE_POOL_2D, MAX_POOL_2D, SOFTMAX, EXP, ADD, SUB, MUL, LOGISTIC and TANH.

The kernels (``kernels/*_f32.c``) read weights and biases straight from their tensors: float kernels have nothing
to fold ahead of time, so each task carries the geometry and the float parameters (activation range, beta) from
the Python kernel's prepare, floats as their IEEE-754 bit patterns. A missing bias is a null pointer (0), which
the kernels skip, as the reference does. RESHAPE of float32 tensors already lowers to ``mn_copy``.

The planner may place EXP's output over its (dying, same-shaped) input. ``mn_exp_f32`` reads each element before
it writes it, front to back, so an output that starts at or before its input is safe: EXP registers with
``streaming=True`` (``lower`` then accepts an overlapping output) and its lowering refuses the other kind.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from micronn.micro.lower import Arg, LowerError, Task, _Op, lowering
from micronn.micro.lower_elementwise import binary_walk, check_in_place


def f32_bits(value: Any) -> int:
    """A float32's bit pattern as a signed 32-bit word (how the kernels read float arguments)."""
    return int(np.asarray(value, np.float32).reshape(()).view(np.int32))


def _bias(o: _Op) -> Arg:
    inputs = o.op.inputs
    return o.inp(2) if len(inputs) > 2 and inputs[2] >= 0 else 0


def _act(k: Any) -> list[int]:
    return [f32_bits(k.fact_min), f32_bits(k.fact_max)]


@lowering("FULLY_CONNECTED", "float32")
def fully_connected(o: _Op) -> list[Task]:
    k = o.k
    return [o.task("mn_fully_connected_f32", o.out(), o.inp(0), o.inp(1), _bias(o), k.batches, k.depth, k.units,
                   *_act(k))]


@lowering("CONV_2D", "float32", streaming=True)
def conv_2d(o: _Op) -> list[Task]:
    k, inp = o.k, o.node.inputs[0]
    win = k.win
    oc, fh, fw, fc = o.node.inputs[1].shape
    return [o.task("mn_conv_2d_f32", o.out(), o.inp(0), o.inp(1), _bias(o), inp.shape[0], win.in_h, win.in_w,
                   inp.shape[3], win.out_h, win.out_w, oc, fh, fw, fc, win.stride_h, win.stride_w, win.dilation_h,
                   win.dilation_w, win.pad_top, win.pad_left, *_act(k), int(o.overlaps()))]


@lowering("DEPTHWISE_CONV_2D", "float32", streaming=True)
def depthwise_conv_2d(o: _Op) -> list[Task]:
    k, inp = o.k, o.node.inputs[0]
    win = k.win
    _, fh, fw, _ = o.node.inputs[1].shape
    return [o.task("mn_depthwise_conv_2d_f32", o.out(), o.inp(0), o.inp(1), _bias(o), inp.shape[0], win.in_h,
                   win.in_w, inp.shape[3], win.out_h, win.out_w, k.mult, fh, fw, win.stride_h, win.stride_w,
                   win.dilation_h, win.dilation_w, win.pad_top, win.pad_left, *_act(k), int(o.overlaps()))]


@lowering("AVERAGE_POOL_2D", "float32", streaming=True)
@lowering("MAX_POOL_2D", "float32", streaming=True)
def pool_2d(o: _Op) -> list[Task]:
    k, inp = o.k, o.node.inputs[0]
    win = k.win
    symbol = "mn_average_pool_2d_f32" if o.name == "AVERAGE_POOL_2D" else "mn_max_pool_2d_f32"
    return [o.task(symbol, o.out(), o.inp(0), inp.shape[0], win.in_h, win.in_w, inp.shape[3], win.out_h, win.out_w,
                   win.filter_h, win.filter_w, win.stride_h, win.stride_w, win.pad_top, win.pad_left, *_act(k),
                   int(o.overlaps()))]


@lowering("SOFTMAX", "float32")
def softmax(o: _Op) -> list[Task]:
    k, inp = o.k, o.node.inputs[0]
    size = int(np.prod(inp.shape, dtype=np.int64))
    if size == 0:
        return []
    depth = inp.shape[-1]
    return [o.task("mn_softmax_f32", o.out(), o.inp(0), size // depth, depth, f32_bits(k.beta))]


@lowering("EXP", "float32", streaming=True)
def exp(o: _Op) -> list[Task]:
    if o.overlaps() and o.places[o.op.outputs[0]][0] > o.places[o.op.inputs[0]][0]:
        raise LowerError(f"operator {o.index} (EXP): its output starts inside its input, which its device kernel "
                         "would overwrite before reading")
    size = int(np.prod(o.node.inputs[0].shape, dtype=np.int64))
    return [o.task("mn_exp_f32", o.out(), o.inp(0), size)] if size else []


@lowering("ADD", "float32", streaming=True)
@lowering("SUB", "float32", streaming=True)
@lowering("MUL", "float32", streaming=True)
def binary(o: _Op) -> list[Task]:
    """The clamp range and the NaN order (``swap``) are the Python kernel's; exactly in place is fine."""
    k = o.k
    if any(t is None or t.dtype != np.float32 for t in [*o.node.inputs[:2], o.node.outputs[0]]):
        raise o.unsupported("float32 with operands of another type")
    check_in_place(o)
    return [o.task(f"mn_{o.name.lower()}_f32", o.out(), o.inp(0), o.inp(1), f32_bits(k.lo), f32_bits(k.hi),
                   int(bool(getattr(k, "swap", False))), *binary_walk(o))]


@lowering("LOGISTIC", "float32", streaming=True)
@lowering("TANH", "float32", streaming=True)
def squashing(o: _Op) -> list[Task]:
    """Front to back, each element read before it is written: exactly in place is fine."""
    check_in_place(o)
    size = int(np.prod(o.node.inputs[0].shape, dtype=np.int64))
    return [o.task(f"mn_{o.name.lower()}_f32", o.out(), o.inp(0), size)] if size else []
