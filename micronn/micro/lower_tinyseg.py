"""Lowerings of TinySeg's spill operators (``micronn/kernels/spill.py``, ``fetch.py``, ``fetch_conv_2d.py``).

Spill and Fetch move raw bytes, so one kernel each serves every element type; FetchConv2D is the int8 CONV_2D
kernel's arithmetic (``mn_kernels.h``'s dot products and output stage) over a concatenation it never builds.
Storage is reached only through a ``StorageRef`` argument: the function whoever places the tasks provides
(``runtime.DeviceModel``: a memory-backed one).

Layouts follow the Python kernels' prepare (``Parts``): a Fetch's parts in output order as (kind, address or
storage id, bytes per outer row), read through the scratch line buffer prepare requested when the spilled bytes
are not contiguous in the output; a FetchConv2D's parts as (kind, address or id, channels) with its ring of
``ring`` input rows per spilled part back to back in its scratch buffer, as the Python kernel lays them out.

The ``drop`` option has no counterpart in the storage function's contract (read or write only), so it is not
signalled to the device: a memory-backed storage has nothing to release.
"""

from __future__ import annotations

from micronn.micro.lower import Arg, ScratchRef, StorageRef, Task, _biases, _Op, _requant_args, lowering

# every element type a Spill or Fetch can carry: they copy bytes, whatever the bytes mean
SPILL_TYPES = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16", "float32",
               "float64", "bool")
PART_RAM, PART_VICTIM = 0, 1  # kinds of a part in the argument words


# streaming: Spill has no output to overlap anything (and the generic overlap check expects one)
@lowering("Spill", *SPILL_TYPES, streaming=True)
def _spill(o: _Op) -> list[Task]:
    victim = o.node.inputs[0]
    return [o.task("mn_spill", StorageRef(), int(o.k.id), o.inp(0), int(victim.nbytes))]


def _parts(o: _Op, unit: int) -> list[Arg]:
    """(kind, address or id, extent * unit) per part, in output order."""
    words: list[Arg] = []
    for kind, key, extent in o.k.parts.order:
        words += [PART_RAM, o.inp(key), extent * unit] if kind == "ram" else [PART_VICTIM, int(key), extent * unit]
    return words


@lowering("Fetch", "", *SPILL_TYPES)
def _fetch(o: _Op) -> list[Task]:
    k, out = o.k, o.node.outputs[0]
    p = k.parts
    if out.nbytes == 0:
        return []
    scratch: Arg = ScratchRef(o.index, k.scratch) if k.scratch is not None else 0
    return [o.task("mn_fetch", o.out(), scratch, StorageRef(), p.outer, p.line, len(p.order),
                   *_parts(o, p.inner * out.dtype.itemsize))]


@lowering("FetchConv2D", "", *SPILL_TYPES)
def _fetch_conv(o: _Op) -> list[Task]:
    k = o.k
    if k.kind != "int8":  # the key is the first input's type, the filter's when every part is spilled
        raise o.unsupported(k.kind)
    if not k.constant:
        raise o.unsupported(f"{k.kind} with non-constant weights")
    w, win, concat = k.weights(k.view), k.full_win, k.concat
    oc, fh, fw, fc = w.shape
    filt = o.ref(o.op.inputs[-2])
    bias_full = _biases(k, oc, w.reshape(oc, -1).sum(1))[1]  # padded taps hold the zero point: one bias serves
    return [o.task("mn_fetch_conv_2d_s8", o.out(), filt, bias_full,
                   *_requant_args(k.mults, k.shifts, oc, shift8=True), ScratchRef(o.index, k.scratch), StorageRef(),
                   concat.shape[0], win.in_h, win.in_w, concat.shape[3], win.out_h, win.out_w, oc, fh, fw, fc,
                   win.stride_h, win.stride_w, win.dilation_h, win.dilation_w, win.pad_top, win.pad_left,
                   -int(k.in_zp), int(k.out_zp), int(k.act_min), int(k.act_max), k.ring, len(k.parts.order),
                   *_parts(o, 1))]

