"""A latency model for TinySeg's models on an STM32H7-class Cortex-M7 at 480 MHz (the paper's Nicla Vision).

Compute: ``cycles = MACs * CYCLES_PER_MAC + activation bytes moved * CYCLES_PER_BYTE + CYCLES_PER_OP`` per
operator. ``CYCLES_PER_BYTE`` (a reference kernel's load, index arithmetic and store per byte) and ``CYCLES_PER_OP``
(TFLM's per-operator dispatch) are our assumptions; ``CYCLES_PER_MAC`` is calibrated so that tiny_unet.tflite's base
latency is the paper's measured 1190 ms (Table 5): 7.47 cycles per int8 MAC, in line with TFLM's portable reference
convolution on an M7 (no CMSIS-NN). Storage: what the storage backends' modeled clocks say (``Storage.stats``),
which run the real transfers, so compression ratios and asynchronous erase are the ones actually achieved.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from micronn.interpreter import Interpreter
from micronn.ir import Model, Operator, Subgraph, op_macs, random_inputs
from micronn.storage import FlashStorage, open_storage
from micronn.tflite.reader import Source, read
from micronn.tinyseg.transform import _options

CLOCK_HZ = 480e6
CYCLES_PER_BYTE = 2.0
CYCLES_PER_OP = 2000.0
CYCLES_PER_MAC = 7.47
STORAGES = ("flash", "qspi", "file", "remote")


def op_seconds(sg: Subgraph, op: Operator) -> float:
    moved = sum(sg.tensors[t].nbytes for t in [*op.inputs, *op.outputs] if t >= 0 and not sg.tensors[t].is_constant)
    return (op_macs(sg, op) * CYCLES_PER_MAC + moved * CYCLES_PER_BYTE + CYCLES_PER_OP) / CLOCK_HZ


def compute_seconds(model: Model) -> float:
    sg = model.main
    return sum(op_seconds(sg, op) for op in sg.operators)


def run(model: Model | Source, storage: str = "memory", *, compress: bool = False, async_erase: bool = False,
        inputs: list[np.ndarray] | None = None) -> dict[str, Any]:
    """Invoke ``model`` once with a fresh storage of that kind, advancing the storage's clock by each operator's
    modeled compute time (so an asynchronous erase overlaps computation as on the dual-core chip)."""
    m = model if isinstance(model, Model) else read(model)
    kw = {"async_erase": True} if async_erase else {}
    st = open_storage(storage, compress=compress, **kw)
    try:
        it = Interpreter(m, storage=st)
        it.allocate_tensors()
        for i, x in enumerate(inputs if inputs is not None else random_inputs(m)):
            it.set_input(x, i)
        compute = 0.0
        for kernel, node in zip(it._kernels, it._nodes):  # the interpreter's own loop, with the clock in between
            kernel.invoke(node)
            s = op_seconds(m.main, node.op)
            compute += s
            st.advance(s)  # a Compressed wrapper passes the time on to the storage it wraps
        stats = getattr(st, "inner", st).stats
        return {"compute_ms": compute * 1e3, "storage_ms": stats.modeled_s * 1e3,
                "total_ms": (compute + stats.modeled_s) * 1e3, "bytes_written": stats.bytes_written,
                "bytes_read": stats.bytes_read, "ratio": st.stats.ratio,
                "outputs": [it.get_output(i) for i in range(len(m.main.outputs))]}
    finally:
        st.close()


def predict(model: Model, storage: str = "memory") -> float:
    """Seconds for one inference, from compute and the storage's timing of each transfer (no run: for choosing among
    spill plans). Spills write (and erase) once; fetches read row by row as the kernels do."""
    timing = _timing(storage)
    sg = model.main
    total = compute_seconds(model)
    for op in sg.operators:
        if op.op == "Spill":
            n = sg.tensors[op.inputs[0]].nbytes
            total += timing.write_s(n) + (timing.erase_s(n) if storage in FlashStorage.PRESETS or storage == "flash"
                                          else 0.0)
        elif op.op in ("Fetch", "FetchConv2D"):
            o = _options(op)
            out = sg.tensors[op.outputs[0]]
            rows = out.shape[1] if len(out.shape) == 4 else 1
            for size in o["sizes"]:
                n = out.nbytes // max(out.shape[(o["axis"] + len(out.shape)) % len(out.shape)], 1) * size
                if op.op == "FetchConv2D":
                    n = o["height"] * o["width"] * size * out.shape[0] * out.dtype.itemsize
                    rows = o["height"]
                total += rows * timing.read_s(n // rows)
    return total


_TIMINGS: dict[str, Any] = {}


def _timing(storage: str) -> Any:
    if storage not in _TIMINGS:
        st = open_storage(storage)
        _TIMINGS[storage] = st.timing
        st.close()
    return _TIMINGS[storage]


def breakdown(models: dict[str, Model], storages: tuple[str, ...] = STORAGES) -> list[dict[str, Any]]:
    """Table 5: latency of each model (``{"base": ..., "+ temporary tensor reduction": ..., "+ spilling": ...,
    "+ fused fetching": ...}``) per storage, then the final model with compression and with async erase."""
    final = list(models.values())[-1]
    rows = []
    for name, m in models.items():
        rows.append({"step": name, **{s: round(run(m, s)["total_ms"], 1) for s in storages}})
    rows.append({"step": "+ compression", **{s: round(run(final, s, compress=True)["total_ms"], 1)
                                             for s in storages}})
    rows.append({"step": "+ async erase", **{s: round(run(final, s, compress=True, async_erase=True)["total_ms"], 1)
                                             if s in ("flash", "qspi") else None for s in storages}})
    return rows
