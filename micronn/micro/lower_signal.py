"""Lowerings of the audio front end (family ``signal``): TFLM's signal-library ops and the int32/int16 integer ops
around them in micro_speech's ``audio_preprocessor_int8``.

Signal ops: SignalWindow, SignalFftAutoScale, SignalRfft (int16 and int32), SignalEnergy, SignalFilterBank,
SignalFilterBankSquareRoot, SignalFilterBankSpectralSubtraction, SignalPCAN and SignalFilterBankLog. Integer ops:
ADD, SUB and MUL (int32 raw, int16 quantized), DIV (int32), MAXIMUM and MINIMUM (int16, int32), CAST between
int8, int16, int32, uint32 and bool, and the comparisons and logical ops a WHILE loop's condition uses.

Every parameter is read off the Python kernel's prepare: the FFT's digit-reversal order, radix plan and rounded
twiddles, the filter bank's bands, the per-channel smoothing coefficients, the log's correction table; they go
in as constant arrays. SignalFilterBankSpectralSubtraction keeps its noise estimate between invokes in the arena's
persistent tail, where its Python kernel put it: ``_persistent`` makes that memory addressable (see there).

Outputs placed over an input: the elementwise kernels (window, auto scale, the binary ops) accept exactly in place,
CAST any overlap one of its two directions survives. The other signal kernels do not register as streaming, so
``lower`` refuses a plan that overlaps them (LowerError) instead of computing garbage; none of the planners
overlaps them in the audio model.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from micronn.kernels.signal_filter_bank_log import CORRECTION
from micronn.micro.lower import INT_TYPES, ConstRef, LowerError, ScratchRef, Task, _i32, _Op, lowering
from micronn.micro.lower_elementwise import binary_walk, check_in_place

# uint32 is read and written as its int32 bits, bool read as its byte (0 or 1)
CAST_TYPES = {**INT_TYPES, "uint32": INT_TYPES["int32"], "bool": INT_TYPES["uint8"]}
CAST_BOOL = 4  # cast.c's output code for bool (x != 0)


def _const(a: Any, dtype: str) -> ConstRef:
    """``a`` as a little-endian constant array of ``dtype`` (values wrap to its width, as the kernels read them)."""
    return ConstRef(np.ascontiguousarray((np.asarray(a, np.int64) & ((1 << (8 * np.dtype(dtype).itemsize)) - 1))
                                         .astype(np.uint64).astype(np.dtype(dtype).newbyteorder("<"))))


def _count(o: _Op, i: int = 0) -> int:
    return int(np.prod(o.node.outputs[i].shape, dtype=np.int64))


def _persistent(o: _Op, view: np.ndarray) -> ScratchRef:
    """A reference to persistent memory that operator ``o``'s Python kernel took in the arena's tail (its state
    between invokes), so that the device kernel updates the same bytes.

    Task arguments address arena memory only as tensors or as the operator's scratch buffers; a persistent
    buffer is neither. Every resolver (the device runtime, the exporter, the host tests) finds a scratch buffer by
    its view in the node's ``scratch_views``, wherever in the arena it lies, so the state's view is listed there,
    after the planned scratch buffers (once: a later lowering finds it again). ``allocate_tensors`` rebuilds the
    list, and the view with it at the next lowering.
    """
    views = o.node.scratch_views
    for i, v in enumerate(views):
        if v is not None and v.ctypes.data == view.ctypes.data and v.nbytes == view.nbytes:
            return ScratchRef(o.index, i)
    views.append(view.reshape(-1).view(np.uint8))
    return ScratchRef(o.index, len(views) - 1)


# ---- the signal library ---------------------------------------------------------------------------------------------


@lowering("SignalWindow", "int16", streaming=True)
def _window(o: _Op) -> list[Task]:
    """The kernel reads each sample before writing it: an output exactly over the input is fine."""
    check_in_place(o)
    return [o.task("mn_signal_window_s16", o.out(), o.inp(0), o.inp(1), _count(o), int(o.k.frame), int(o.k.shift))]


@lowering("SignalFftAutoScale", "int16", streaming=True)
def _fft_auto_scale(o: _Op) -> list[Task]:
    """The kernel finds the peak before writing: an output exactly over the input is fine."""
    check_in_place(o)
    return [o.task("mn_signal_fft_auto_scale_s16", o.out(0), o.out(1), o.inp(0), _count(o))]


@lowering("SignalRfft", "int16", "int32")
def _rfft(o: _Op) -> list[Task]:
    """The FFT as prepare planned it (``k.fft``): stages innermost first, with their rounded twiddles."""
    k = o.k
    kind = o.node.inputs[0].dtype.name
    if kind not in ("int16", "int32"):
        raise o.unsupported(kind)
    if k.frames == 0:
        return []
    ar, cfft = k.fft.ar, k.fft.cfft
    plan, tw, offset = [], [], 0
    for st in reversed(cfft.stages):  # signal_rfft.c's PLAN_WORDS: p, m, groups, offset, MAX / p, 4 constants
        extra = [int(e) for e in st.extra] + [0] * (4 - len(st.extra))
        plan += [st.p, st.m, st.stride, offset, ar.max // st.p, *extra]
        tw.append(np.stack([st.twr.T, st.twi.T], axis=-1).reshape(-1))  # per u: (re, im) of inputs 1 .. p-1
        offset += tw[-1].size
    scalar = "<i2" if kind == "int16" else "<i4"
    split = np.stack([k.fft.sr, k.fft.si], axis=-1).reshape(-1)
    symbol = "mn_signal_rfft_s16" if kind == "int16" else "mn_signal_rfft_s32"
    return [o.task(symbol, o.out(), o.inp(0), k.frames, k.input_length, k.fft.half, _i32(cfft.order),
                   len(cfft.stages), _i32(plan), _const(np.concatenate(tw), scalar), _const(split, scalar),
                   ar.max // 2)]


@lowering("SignalEnergy", "int16")
def _energy(o: _Op) -> list[Task]:
    return [o.task("mn_signal_energy_s16", o.out(), o.inp(0), _count(o), int(o.k.start), int(o.k.end))]


@lowering("SignalFilterBank", "uint32")
def _filter_bank(o: _Op) -> list[Task]:
    """The bands prepare kept (positive widths, validated against every buffer) as (band, bin, weight, width)."""
    bands = np.asarray(o.k.bands, np.int64).reshape(-1, 4)
    return [o.task("mn_signal_filter_bank_u32", o.out(), o.inp(0), o.inp(1), o.inp(2), _i32(bands.reshape(-1)),
                   len(bands), int(o.k.nch))]


@lowering("SignalFilterBankSquareRoot", "uint64")
def _square_root(o: _Op) -> list[Task]:
    return [o.task("mn_signal_filter_bank_square_root_u64", o.out(), o.inp(0), o.inp(1), _count(o))]


@lowering("SignalFilterBankSpectralSubtraction", "uint32")
def _spectral_subtraction(o: _Op) -> list[Task]:
    """The noise estimate lives in the persistent tail (``k.estimate``), updated in place by the device."""
    k = o.k
    return [o.task("mn_signal_filter_bank_spectral_subtraction_u32", o.out(0), o.out(1), o.inp(0),
                   _persistent(o, k.estimate), _const(k.smoothing, "uint32"), _const(k.keep, "uint32"), _count(o),
                   int(k.min_remaining), int(k.bits), int(k.sub_bits), int(k.clamping))]


@lowering("SignalPCAN", "uint32")
def _pcan(o: _Op) -> list[Task]:
    return [o.task("mn_signal_pcan_u32", o.out(), o.inp(0), o.inp(1), o.inp(2), _count(o), int(o.k.shift))]


@lowering("SignalFilterBankLog", "uint32")
def _filter_bank_log(o: _Op) -> list[Task]:
    return [o.task("mn_signal_filter_bank_log_u32", o.out(), o.inp(0), _i32(CORRECTION), _count(o), int(o.k.bits),
                   int(o.k.scale))]


# ---- integer ops ------------------------------------------------------------------------------------------------


def _operands(o: _Op, dtype: str) -> None:
    """Refuse operands of another type than the kernel reads and writes."""
    if any(t is None or t.dtype != np.dtype(dtype) for t in [*o.node.inputs[:2], o.node.outputs[0]]):
        raise o.unsupported(f"{dtype} with operands of another type")


@lowering("ADD", "int32", streaming=True)
@lowering("SUB", "int32", streaming=True)
@lowering("MUL", "int32", streaming=True)
@lowering("DIV", "int32", streaming=True)
def _arithmetic_s32(o: _Op) -> list[Task]:
    """The clamp range is prepare's: the full range for ADD (TFLM ignores its activation), the activation's else."""
    _operands(o, "int32")
    check_in_place(o)
    return [o.task(f"mn_{o.name.lower()}_s32", o.out(), o.inp(0), o.inp(1), int(o.k.lo), int(o.k.hi),
                   *binary_walk(o))]


def _shifts(o: _Op, *shifts: int) -> None:
    """Refuse multiplier shifts that ``mn_mbqm`` cannot apply (at most 31 bits either way)."""
    if any(not -31 <= int(s) <= 31 for s in shifts):
        raise o.unsupported(f"int16 with a multiplier shift of {max(shifts, key=abs)}")


@lowering("ADD", "int16", streaming=True)
@lowering("SUB", "int16", streaming=True)
def _add_s16(o: _Op) -> list[Task]:
    """TFLM's general rescaling path (left shift 15), every multiplier and bound from ``AddSubParams``."""
    p = o.k.params
    _operands(o, "int16")
    _shifts(o, p.s1, p.s2, p.so)
    check_in_place(o)
    return [o.task(f"mn_{o.name.lower()}_s16", o.out(), o.inp(0), o.inp(1), int(p.off1), int(p.off2),
                   int(p.left_shift), int(p.m1), int(p.s1), int(p.m2), int(p.s2), int(p.mo), int(p.so),
                   int(p.off_out), int(p.lo), int(p.hi), *binary_walk(o))]


@lowering("MUL", "int16", streaming=True)
def _mul_s16(o: _Op) -> list[Task]:
    k = o.k
    _operands(o, "int16")
    _shifts(o, k.shift)
    check_in_place(o)
    return [o.task("mn_mul_s16", o.out(), o.inp(0), o.inp(1), int(k.zp1), int(k.zp2), int(k.multiplier),
                   int(k.shift), int(k.zp_out), int(k.lo), int(k.hi), *binary_walk(o))]


@lowering("MAXIMUM", "int16", "int32", streaming=True)
@lowering("MINIMUM", "int16", "int32", streaming=True)
def _max_min(o: _Op) -> list[Task]:
    dtype = o.node.inputs[0].dtype.name
    _operands(o, dtype)
    check_in_place(o)
    return [o.task(f"mn_{o.name.lower()}_{'s16' if dtype == 'int16' else 's32'}", o.out(), o.inp(0), o.inp(1),
                   *binary_walk(o))]


def _cast_backward(o: _Op) -> int:
    """1 when the cast must run from the last element to the first, 0 from the first: the direction in which no
    element's write reaches an input element still unread, when the plan places the output over the input.

    Writing element i (going forward) leaves the unread inputs i + 1 .. n - 1 intact when
    out + (i + 1) * so <= in + (i + 1) * si (for i < n - 1: the last write leaves nothing unread); going backward,
    inputs 0 .. i - 1 when out + i * so >= in + i * si (for i > 0). Both are linear in i, so their ends decide:
    k = i + 1 (forward) and k = i (backward) from 1 to n - 1."""
    if not o.overlaps():
        return 0
    out, inp = o.places[o.op.outputs[0]][0], o.places[o.op.inputs[0]][0]
    so, si = o.node.outputs[0].dtype.itemsize, o.node.inputs[0].dtype.itemsize
    n = _count(o)
    if all(out + k * so <= inp + k * si for k in (1, n - 1)) or n < 2:
        return 0
    if all(out + k * so >= inp + k * si for k in (1, n - 1)):
        return 1
    raise LowerError(f"operator {o.index} (CAST): its output overlaps its input so that neither direction reads "
                     "every element before it is overwritten")


@lowering("CAST", *CAST_TYPES, streaming=True)
def _cast(o: _Op) -> list[Task]:
    """Integer and bool casts (float32 is not lowered here), in the direction the plan's overlap allows."""
    src, dst = o.node.inputs[0].dtype.name, o.node.outputs[0].dtype.name
    if dst not in CAST_TYPES:
        raise o.unsupported(f"{src} -> {dst}")
    if o.in_place() and {src, dst} <= {"int32", "uint32"}:
        return []  # every value keeps its bits where it is: nothing to do
    return [o.task("mn_cast", o.out(), o.inp(0), _count(o), CAST_TYPES[src],
                   CAST_BOOL if dst == "bool" else CAST_TYPES[dst], _cast_backward(o))]


# ---- comparisons and logical ops (a loop's condition) ----------------------------------------------------------

COMPARE_OPS = {"EQUAL": 0, "NOT_EQUAL": 1, "LESS": 2, "LESS_EQUAL": 3, "GREATER": 4, "GREATER_EQUAL": 5}
COMPARE_TYPES = {"bool": 0, "int16": 1, "int32": 2, "int64": 3, "float32": 4}


@lowering("EQUAL", *COMPARE_TYPES)
@lowering("NOT_EQUAL", *COMPARE_TYPES)
@lowering("LESS", *COMPARE_TYPES)
@lowering("LESS_EQUAL", *COMPARE_TYPES)
@lowering("GREATER", *COMPARE_TYPES)
@lowering("GREATER_EQUAL", *COMPARE_TYPES)
def _compare(o: _Op) -> list[Task]:
    kind = o.node.inputs[0].dtype.name
    return [o.task("mn_compare", o.out(), o.inp(0), o.inp(1), COMPARE_OPS[o.name], COMPARE_TYPES[kind],
                   *binary_walk(o))]


@lowering("LOGICAL_AND", "bool", streaming=True)
@lowering("LOGICAL_OR", "bool", streaming=True)
def _logical(o: _Op) -> list[Task]:
    check_in_place(o)
    return [o.task("mn_logical", o.out(), o.inp(0), o.inp(1), int(o.name == "LOGICAL_OR"), *binary_walk(o))]
