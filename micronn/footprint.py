"""The whole arena TFLM needs, on the host wheel and on a 32-bit Cortex-M: what to write in ``kTensorArenaSize``.

micronn plans the head (activations and scratch) itself; TFLM's persistent tail also holds the interpreter's
own structures, and their size depends on the pointer width. On the 64-bit host wheel ``print_allocations()``
reports the tail by category. A Cortex-M build has 4-byte pointers and ``size_t``, so:

==========================================  =========  ========  =========================================
structure                                   64-bit     32-bit    fields
==========================================  =========  ========  =========================================
TfLiteEvalTensor (one per tensor)           24 B       12 B      data pointer, dims pointer, type enum
NodeAndRegistration (one per operator)      64 B       32 B      TfLiteNode (6 pointers + int), registration
TfLiteTensor (persistent, model I/O)        64 B       36 B      type, data, dims, params, allocation type,
                                                                 bytes, quantization {type, params pointer}
TfLiteAffineQuantization (quantized I/O)    24 B       12 B      scale, zero-point pointers, axis
==========================================  =========  ========  =========================================

Variable tensors' data and the kernels' int32 arrays (per-channel multipliers and shifts, tables) are the same
size on both. What remains (kernels' OpData structs, builtin option structs and the interpreter's bookkeeping)
shrinks only where it holds pointers; :func:`tflm_footprint` keeps it at its 64-bit size, so its Cortex-M tail
is an upper bound (safe for ``kTensorArenaSize``), and also gives the lower bound with that remainder halved.
The head is the same on both: tensor sizes and TFLM's 16-byte alignment do not depend on the pointer width.

micronn answers from its own model of the tail: :func:`estimate_tflm_tail` predicts the 64-bit tail from the graph
(the structures above, micronn's own persistent data, and per-operator constants fitted to the wheel on the models
in ``tests/models``; within a few percent there, ``tests/test_footprint.py`` checks it). A figure the wheel measured
can be passed in (``measured=``); ``micronn.testing.measured_tflm_footprint`` does that for tests and benchmarks,
so the library never depends on its test oracle and gives the same answer on every install.
"""

from __future__ import annotations

from typing import Any

from micronn.interpreter import Interpreter

POINTER_SHRINK = {  # 64-bit minus 32-bit bytes of one structure
    "TfLiteEvalTensor": 12, "NodeAndRegistration": 32, "TfLiteTensor": 28, "TfLiteAffineQuantization": 12,
}
# Fitted to the wheel: the interpreter's fixed bookkeeping, per extra subgraph, per scratch request, and each
# operator's OpData + builtin options beyond micronn's own persistent arrays (64-bit bytes).
_BASE, _PER_SUBGRAPH, _PER_SCRATCH, _DEFAULT_OP = 512, 256, 8, 64
_PER_OP = {
    "CONV_2D": 128, "DEPTHWISE_CONV_2D": 87, "FULLY_CONNECTED": 112, "SOFTMAX": 104, "AVERAGE_POOL_2D": 59,
    "MAX_POOL_2D": 52, "RESHAPE": 49, "ADD": 17, "MUL": 11, "PAD": 106, "CONCATENATION": 46, "TRANSPOSE_CONV": 46,
    "QUANTIZE": 11, "SVDF": 69, "MEAN": 24, "RELU": 121, "STRIDED_SLICE": 133, "SHAPE": 0, "PACK": 0,
    "UNIDIRECTIONAL_SEQUENCE_LSTM": 687, "LOGISTIC": 11, "TANH": 7, "LESS": 7, "GATHER": 4, "SPLIT": 4,
    "LOGICAL_AND": 4, "WHILE": 4, "CAST": 4, "DIV": 4, "MINIMUM": 4, "MAXIMUM": 4,
    # the signal library, at micro_speech's sizes (40 filterbank channels)
    "SignalWindow": 26, "SignalFftAutoScale": 26, "SignalEnergy": 26, "SignalFilterBankSquareRoot": 26,
    "SignalPCAN": 26, "SignalFilterBankLog": 26, "SignalFilterBank": 408, "SignalFilterBankSpectralSubtraction": 80,
}


def _op_bytes(g: Any, op: Any) -> int:
    """An operator's tail bytes beyond micronn's own persistent arrays. The FFTs keep twiddle and work tables that
    grow with the length (measured on the wheel: 352 bytes plus, per point of the half-length complex FFT n,
    2.5 values of the FFT's type)."""
    if op.op in ("SignalRfft", "SignalIrfft") and op.outputs:
        t = g.tensors[op.outputs[0] if op.op == "SignalRfft" else op.inputs[0]]
        n = max(t.shape[-1] - 2, 0) // 2 if t.shape else 0  # fft_length + 2 values: n = fft_length / 2 points
        size = 4 if t.dtype.itemsize == 2 else 8
        return 352 + size * (n + 3 * n // 2) - (16 if op.op == "SignalIrfft" and t.dtype.kind != "f" else 0)
    return _PER_OP.get(op.op, _DEFAULT_OP)


def _structure(interp: Any) -> dict[str, int]:
    """Counts TFLM's tail depends on, from an allocated micronn Interpreter."""
    model = interp.model
    main = model.main
    io = [main.tensors[t] for t in list(main.inputs) + list(main.outputs)]
    variables = sum(t.nbytes for g in model.subgraphs for t in g.tensors if t.is_variable)
    return {
        "tensors": sum(len(g.tensors) for g in model.subgraphs),
        "operators": sum(len(g.operators) for g in model.subgraphs),
        "subgraphs": len(model.subgraphs),
        "io_tensors": len(io),
        "quantized_io": sum(1 for t in io if t.quant is not None and len(t.quant.scale)),
        "scratch_requests": sum(len(n.scratch_sizes) for ns in interp._all_nodes for n in ns),
        # TFLM keeps one copy of per-channel arrays per operator: count the copies micronn's tail shares
        "micronn_persistent": interp.tail + interp.tail_shared,
        "variables": variables,
    }


def _interp(model: Any) -> Any:
    it = model if isinstance(model, Interpreter) else Interpreter(model, planner="tflm")
    if not it._allocated:
        it.allocate_tensors()
    return it


def _known_bytes(s: dict[str, int]) -> int:
    """The 64-bit tail bytes whose layout is known: eval tensors, node structs, persistent I/O tensors with their
    quantization, and micronn's own persistent data (the same arrays TFLM keeps)."""
    return (24 * s["tensors"] + 64 * s["operators"] + 64 * s["io_tensors"] + 32 * s["quantized_io"]
            + s["micronn_persistent"])


def estimate_tflm_tail(model: Any) -> int:
    """TFLM's 64-bit persistent tail predicted from the graph (no wheel needed); ``model`` may be an Interpreter."""
    it = _interp(model)
    s = _structure(it)
    return (_known_bytes(s) + _BASE + _PER_SUBGRAPH * (s["subgraphs"] - 1)
            + _PER_SCRATCH * s["scratch_requests"] + sum(_op_bytes(g, op) for g in it.model.subgraphs
                                                         for op in g.operators))


def cortex_m_tail(host_tail: int, s: dict[str, int], remainder: int = 0) -> dict[str, int]:
    """The 32-bit tail from a 64-bit one: known structures shrink exactly; ``remainder`` (structs of unknown
    layout) is kept whole for the upper bound and halved for the lower one."""
    shrink = (POINTER_SHRINK["TfLiteEvalTensor"] * s["tensors"] + POINTER_SHRINK["NodeAndRegistration"]
              * s["operators"] + POINTER_SHRINK["TfLiteTensor"] * s["io_tensors"]
              + POINTER_SHRINK["TfLiteAffineQuantization"] * s["quantized_io"])
    upper = host_tail - shrink
    return {"tail_bytes": upper, "tail_bytes_low": upper - remainder // 2}


def tflm_footprint(model: Any, head: int | None = None, measured: dict[str, Any] | None = None) -> dict[str, Any]:
    """TFLM's arena for ``model`` (path, bytes, IR or Interpreter) on the host wheel and on a Cortex-M.

    ``head``: the planned head to add (default: TFLM's own plan). The host tail is micronn's estimate unless
    ``measured`` gives the wheel's ``print_allocations`` figures (``{"tail": ..., "categories": ...}``, or
    ``{"error": ...}`` when the wheel refused the model).
    """
    it = _interp(model)
    s = _structure(it)
    head = it.head if head is None else head
    if measured and "error" not in measured:
        host_tail = measured["tail"]
        cats = measured["categories"]
        listed = sum(used for used, _, _ in cats.values())
        buffers = cats.get("Persistent buffer data", (0, 0, 0))[0]
        remainder = max(0, host_tail - listed) + max(0, buffers - s["micronn_persistent"] + s["variables"])
        how = "measured with the tflite-micro wheel"
    else:
        host_tail = estimate_tflm_tail(it)
        remainder = host_tail - _known_bytes(s)
        how = "estimated from the graph" + (f" (the wheel failed: {measured['error']})" if measured else "")
    m = cortex_m_tail(host_tail, s, remainder)
    return {
        "head_bytes": head,
        "host": {"tail_bytes": host_tail, "total_bytes": head + host_tail, "measured": bool(measured)
                 and "error" not in measured, "how": how},
        "cortex_m": {"tail_bytes": m["tail_bytes"], "total_bytes": head + m["tail_bytes"],
                     "total_bytes_low": head + m["tail_bytes_low"], "bound": "upper"},
        "structure": s,
    }


def tflm_tail(model: Any, bits: int = 64) -> int:
    """TFLM's persistent tail in bytes for ``model`` as micronn estimates it: the host wheel's (``bits=64``) or a
    Cortex-M build's (32, upper bound)."""
    if bits not in (32, 64):
        raise ValueError(f"bits must be 32 or 64, got {bits}")
    f = tflm_footprint(model)
    return f["host" if bits == 64 else "cortex_m"]["tail_bytes"]
