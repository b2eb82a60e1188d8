"""Lowerings of UNIDIRECTIONAL_SEQUENCE_LSTM (kernel family ``lstm``): int8 (TFLM's int8x8_16 scheme) and float32.

One task per operator: the kernels (``kernels/unidirectional_sequence_lstm*.c``) run the whole time loop and update
the variable hidden and cell states in place, so a sequence continues across invokes as in the interpreter. The
four gate vectors of a batch row live in the four scratch buffers the Python kernel requested.

int8: every parameter comes from the Python kernel's prepare (each gate product's multiplier and shift to int16
at 2^-12, the element-wise products' multipliers, the cell tanh's input scaling, the quantized cell clip). The
zero points are folded here per gate and unit: the input product's bias becomes
``bias - x_zp * sum(w - w_zp)`` and the recurrent product gets ``-h_zp * sum(w - w_zp)`` (wrapped to int32, as
the reference wraps the whole sum), so the kernel sums ``x * (w - w_zp)`` only. The sigmoid table of TFLM's int16
LOGISTIC/TANH comes from ``micronn.fixedpoint`` as a constant.

float32: the weights and biases are read from their tensors; the cell clip is passed as its bits.

The int16 variant (int16 activations, int64 biases) has no kernel yet and stays unsupported.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from micronn.fixedpoint import sigmoid_table_uint16
from micronn.kernels.unidirectional_sequence_lstm import (
    BIASES,
    CELL_STATE,
    GATES,
    INPUT_WEIGHTS,
    OUTPUT_STATE,
    RECURRENT_WEIGHTS,
)
from micronn.micro.lower import Arg, ConstRef, ScratchRef, Task, _i32, _Op, _wrap, lowering
from micronn.micro.lower_f32 import f32_bits

OP = "UNIDIRECTIONAL_SEQUENCE_LSTM"


def _common(o: _Op) -> tuple[list[Arg], list[Arg]]:
    """(the gate weights' references: 4 input then 4 recurrent, in GATES order; the four scratch buffers)."""
    weights: list[Arg] = [o.inp(INPUT_WEIGHTS[g]) for g in GATES] + [o.inp(RECURRENT_WEIGHTS[g]) for g in GATES]
    return weights, [ScratchRef(o.index, i) for i in range(4)]


def _geometry(o: _Op) -> list[int]:
    k, inp = o.k, o.node.inputs[0]
    return [k.batch, k.steps, inp.shape[2], k.units, int(k.time_major), int(k.cell_tanh)]


def _folded(o: _Op, fcs: dict[str, Any], index: dict[str, int], in_zp: int,
            bias: dict[str, np.ndarray] | None) -> tuple[ConstRef, ConstRef]:
    """(the folded int32 biases of four gate products, concatenated in GATES order; their (multiplier, shift,
    weight offset) triples)."""
    folded, quant = [], []
    for g in GATES:
        fc = fcs[g]
        w = np.asarray(o.node.input(index[g]), np.int64) + fc.weights_offset
        b = np.zeros(w.shape[0], np.int64) if bias is None else np.asarray(bias[g], np.int64).reshape(-1)
        folded.append(_wrap(b - in_zp * w.sum(axis=1)))
        quant += [fc.multiplier, fc.shift, fc.weights_offset]
    return _i32(np.concatenate(folded)), _i32(quant)


def _activation_input(multiplier: int, left_shift: int) -> tuple[int, int, int]:
    """The int16 TANH's input rescaling ``(x * m + rnd) >> s`` (int32 wrap) as (m mod 2^32, rnd, s), from TFLM's
    (input_multiplier, input_left_shift): a zero multiplier means ``3 << left_shift`` with no shift."""
    if multiplier == 0:
        m, rnd, s = 3 << left_shift, 0, 0
    else:
        m, rnd, s = multiplier, (1 << (left_shift - 1)) if left_shift > 0 else 0, left_shift
    return int(_wrap(np.int64(m & 0xFFFFFFFF))), rnd, s


@lowering(OP, "int8")
def lstm_s8(o: _Op) -> list[Task]:
    k, ins = o.k, o.node.inputs
    tensors = [ins[i] for i in (*INPUT_WEIGHTS.values(), *RECURRENT_WEIGHTS.values(), *BIASES.values())]
    if not all(t is not None and t.is_constant for t in tensors):
        raise o.unsupported("int8 with non-constant weights or biases")
    hidden = ins[OUTPUT_STATE]
    assert hidden is not None
    mul32, rnd, shift = _activation_input(*k.tanh_cell)
    if not 0 <= shift < 32:
        raise o.unsupported(f"int8 with a cell tanh input shift of {shift}")
    bias = {g: np.asarray(o.node.input(BIASES[g])) for g in GATES}
    bias_in, quant_in = _folded(o, k.input_fc, INPUT_WEIGHTS, -k.input_fc[GATES[0]].input_offset, bias)
    bias_rec, quant_rec = _folded(o, k.recurrent_fc, RECURRENT_WEIGHTS, int(hidden.zero_point), None)
    quant = _i32(np.concatenate([quant_in.data, quant_rec.data]))
    table = ConstRef(np.ascontiguousarray(sigmoid_table_uint16().astype("<u2")))
    weights, scratch = _common(o)
    mul = [k.forget_mul.multiplier, k.forget_mul.shift, k.input_mul.multiplier, k.input_mul.shift,
           k.hidden_mul.multiplier, k.hidden_mul.shift, k.hidden_mul.zero_point]
    return [o.task("mn_unidirectional_sequence_lstm_s8", o.out(), o.inp(0), *weights, bias_in, bias_rec, quant,
                   o.inp(OUTPUT_STATE), o.inp(CELL_STATE), *scratch, table, *_geometry(o), *map(int, mul), mul32,
                   rnd, shift, int(k.cell_clip > 0), int(k.quantized_clip))]


@lowering(OP, "float32")
def lstm_f32(o: _Op) -> list[Task]:
    weights, scratch = _common(o)
    return [o.task("mn_unidirectional_sequence_lstm_f32", o.out(), o.inp(0), *weights,
                   *(o.inp(BIASES[g]) for g in GATES), o.inp(OUTPUT_STATE), o.inp(CELL_STATE), *scratch,
                   *_geometry(o), f32_bits(o.k.cell_clip))]
