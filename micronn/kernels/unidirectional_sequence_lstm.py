"""UNIDIRECTIONAL_SEQUENCE_LSTM, as TFLM's current (2023+) reference kernel computes it.

TFLM supports the plain Keras LSTM only: all four gates (no CIFG), no peephole, no projection, no layer
norm. For each time step, over every batch row at once:

    forget = sigmoid(W_xf x + b_f + W_hf h)      input  = sigmoid(W_xi x + b_i + W_hi h)
    cell_g = tanh(W_xc x + b_c + W_hc h)         cell   = clip(forget * cell + input * cell_g)
    output = sigmoid(W_xo x + b_o + W_ho h)      h      = output * tanh(cell);  out[t] = h

``h`` (``output_state``, input 18) and ``cell`` (``cell_state``, input 19) are variable tensors updated
in place, so the sequence continues across invokes. Types: float32; int8 activations with int8 weights,
int32 biases and an int16 cell state; int16 activations with int8 weights, int64 biases and an int16
cell state. In the integer paths each fully connected product is rescaled to int16 at 2^-12 (the
input of TFLM's int16 sigmoid/tanh, whose outputs are Q0.15), the two products of a gate are added
with int16 saturation, and the element-wise products are rescaled with multipliers computed in
double precision from the gate scale 2^-15 and the cell/hidden scales.
"""

from __future__ import annotations

import math

import numpy as np

from micronn.fixedpoint import logistic_float, logistic_int16, tanh_int16
from micronn.ir import Activation, Tensor
from micronn.kernels._lstm_util import add_first, dot_float, mul_second, nan_from
from micronn.kernels._unary import tanhf
from micronn.kernels.base import Kernel, Node, register
from micronn.quant import (
    multiply_by_quantized_multiplier,
    multiply_by_quantized_multiplier_64,
    quantize_multiplier,
    wrap_int32,
)

INPUT = 0
INPUT_WEIGHTS = {"input": 1, "forget": 2, "cell": 3, "output": 4}
RECURRENT_WEIGHTS = {"input": 5, "forget": 6, "cell": 7, "output": 8}
PEEPHOLE = (9, 10, 11)
BIASES = {"input": 12, "forget": 13, "cell": 14, "output": 15}
PROJECTION = (16, 17)
OUTPUT_STATE, CELL_STATE = 18, 19
LAYER_NORM = (20, 21, 22, 23)
GATES = ("forget", "input", "cell", "output")

GATE_INPUT_SCALE = 2.0**-12  # int16 FC outputs feed the int16 sigmoid/tanh in Q3.12
GATE_OUTPUT_SCALE = 2.0**-15  # the int16 sigmoid/tanh give Q0.15

FLT_MAX = np.float32(np.finfo(np.float32).max)

# activation dtype -> (weight dtype, bias dtype); the cell state is int16 in both integer variants
INTEGER_VARIANTS = {np.dtype(np.int8): (np.dtype(np.int8), np.dtype(np.int32)),
                    np.dtype(np.int16): (np.dtype(np.int8), np.dtype(np.int64))}


def _clamp_float(x: np.ndarray) -> np.ndarray:
    """TFLM's float activation range for 'no activation': finite values pass, infinities saturate."""
    return np.clip(x, -FLT_MAX, FLT_MAX)


class _GateFc:
    """The integer fully connected product of one gate input (TFLM's FullyConnectedParams) to int16."""

    def __init__(self, src: Tensor, weights: Tensor):
        self.input_offset = -src.zero_point
        self.weights_offset = -weights.zero_point
        self.wide = src.dtype == np.int16  # 16x8: int64 accumulator and TFLM's int64 rescale
        # in double precision (measured against TFLM: a float32 product gives other multipliers)
        real = src.scale * weights.scale / GATE_INPUT_SCALE
        self.multiplier, self.shift = quantize_multiplier(real)

    def __call__(self, x: np.ndarray, w: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
        acc = (x.astype(np.int64) + self.input_offset) @ (w.astype(np.int64) + self.weights_offset).T
        if bias is not None:
            acc = acc + bias.astype(np.int64)
        if self.wide:
            y = multiply_by_quantized_multiplier_64(acc, self.multiplier, self.shift)
        else:
            y = multiply_by_quantized_multiplier(wrap_int32(acc), self.multiplier, self.shift)
        return np.clip(y, -32768, 32767)


class _Mul:
    """TFLM's element-wise integer multiplication of two symmetric int16 values into ``out_dtype``."""

    def __init__(self, scale_1: float, scale_2: float, out_scale: float, out_dtype: np.dtype, out_zp: int = 0):
        self.multiplier, self.shift = quantize_multiplier(scale_1 * scale_2 / out_scale)
        self.zero_point = out_zp
        info = np.iinfo(out_dtype)
        self.lo, self.hi = int(info.min), int(info.max)

    def __call__(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        y = multiply_by_quantized_multiplier(a * b, self.multiplier, self.shift) + self.zero_point
        return np.clip(y, self.lo, self.hi)


def _log2_rounded(x: float) -> int:
    """TFLM's CheckedLog2 result: the exponent of the nearest power of two (the cell scale should be one)."""
    return math.floor(math.log2(x) + 0.5)


def _tensor(node: Node, i: int) -> Tensor:
    t = node.inputs[i]
    if t is None:
        raise node.fail(f"input {i} is required")
    return t


@register
class UnidirectionalSequenceLstm(Kernel):
    op = "UNIDIRECTIONAL_SEQUENCE_LSTM"
    dtypes = frozenset({"int8", "int16", "float32"})

    def prepare(self, node: Node) -> None:
        if len(node.inputs) != 24 or len(node.outputs) != 1:
            raise node.fail(f"expected 24 inputs and 1 output, got {len(node.inputs)} and {len(node.outputs)}")
        ins = node.inputs
        inp, hidden, cell, out = ins[INPUT], ins[OUTPUT_STATE], ins[CELL_STATE], node.outputs[0]
        opts = node.options
        self._validate(node, inp, hidden, cell, out)
        assert inp is not None and hidden is not None and cell is not None

        self.time_major = bool(opts.time_major)
        t_dim, b_dim = (0, 1) if self.time_major else (1, 0)
        self.batch, self.steps = inp.shape[b_dim], inp.shape[t_dim]
        self.units = int(np.prod(hidden.shape)) // self.batch
        # TFLM's cell gate applies tanh for TANH and nothing at all for any other activation (its "only
        # sigmoid or tanh" assertion is compiled out), so the raw pre-activation goes through
        self.cell_tanh = opts.fused_activation_function == Activation.TANH
        self.cell_clip = float(np.float32(opts.cell_clip))

        self.quantized = inp.dtype != np.float32
        if self.quantized:
            self.input_fc = {g: _GateFc(inp, _tensor(node, INPUT_WEIGHTS[g])) for g in GATES}
            self.recurrent_fc = {g: _GateFc(hidden, _tensor(node, RECURRENT_WEIGHTS[g])) for g in GATES}
            cell_scale = float(cell.scale)
            self.forget_mul = _Mul(GATE_OUTPUT_SCALE, cell_scale, cell_scale, np.dtype(np.int16))
            self.input_mul = _Mul(GATE_OUTPUT_SCALE, GATE_OUTPUT_SCALE, cell_scale, np.dtype(np.int16))
            self.hidden_mul = _Mul(GATE_OUTPUT_SCALE, GATE_OUTPUT_SCALE, float(hidden.scale), hidden.dtype,
                                   hidden.zero_point)
            power = _log2_rounded(cell_scale)
            shift = 15 + power - 3
            self.tanh_cell = (3, -shift) if shift < 0 else (0, shift)  # (input_multiplier, input_left_shift)
            self.quantized_clip = int(min(max(self.cell_clip / cell_scale, -32768.0), 32767.0))  # truncates
        # TFLM's four cell-sized buffers (gate outputs and the recurrent product), in request order
        for _ in range(4):
            node.request_scratch(self.batch * self.units * cell.dtype.itemsize)

    def _validate(self, node: Node, inp: Tensor | None, hidden: Tensor | None, cell: Tensor | None,
                  out: Tensor) -> None:
        """TFLM's LstmTensors::ValidateTensorStatus and ValidateTensorSize."""
        ins = node.inputs
        if inp is None or hidden is None or cell is None:
            raise node.fail("input, output_state and cell_state are required")
        if not hidden.is_variable or not cell.is_variable:
            raise node.fail("output_state and cell_state must be variable tensors")
        if hidden.dtype != inp.dtype or out.dtype != inp.dtype:
            raise node.fail(f"input {inp.dtype}, output_state {hidden.dtype} and output {out.dtype} must match")
        absent = {"peephole": PEEPHOLE, "projection": PROJECTION, "layer norm": LAYER_NORM}
        for what, idx in absent.items():
            if any(ins[i] is not None for i in idx):
                raise node.fail(f"{what} LSTMs are not supported (TFLM supports the standard LSTM only)")
        weights = [ins[i] for i in (*INPUT_WEIGHTS.values(), *RECURRENT_WEIGHTS.values())]
        biases = [ins[i] for i in BIASES.values()]
        if any(t is None for t in weights + biases):
            raise node.fail("all eight weight and four bias tensors are required (no CIFG)")
        if len(inp.shape) != 3:
            raise node.fail(f"input must be 3-D, got shape {inp.shape}")
        time_major = bool(node.options.time_major)
        batch = inp.shape[1] if time_major else inp.shape[0]
        n_input = inp.shape[2]
        n_state = hidden.shape[1] if len(hidden.shape) > 1 else -1
        for i, t in enumerate(weights):
            assert t is not None
            want = (n_state, n_input if i < 4 else n_state)
            if tuple(t.shape) != want:
                raise node.fail(f"weight tensor {t.name!r} has shape {t.shape}, expected {want}")
        for t in biases:
            assert t is not None
            if tuple(t.shape) != (n_state,):
                raise node.fail(f"bias tensor {t.name!r} has shape {t.shape}, expected ({n_state},)")
        for t in (hidden, cell):
            if int(np.prod(t.shape)) != batch * n_state:
                raise node.fail(f"state tensor {t.name!r} has {int(np.prod(t.shape))} elements, expected "
                                f"{batch * n_state}")
        if len(out.shape) != 3 or tuple(out.shape) != (inp.shape[0], inp.shape[1], n_state):
            raise node.fail(f"output shape {out.shape}, expected {(inp.shape[0], inp.shape[1], n_state)}")

        w_types = {t.dtype for t in weights if t is not None}
        b_types = {t.dtype for t in biases if t is not None}
        if len(w_types) != 1 or len(b_types) != 1:
            raise node.fail("all weights must share one type and all biases another")
        w_type, b_type = w_types.pop(), b_types.pop()
        if inp.dtype == np.float32:
            if w_type != np.float32 or b_type != np.float32 or cell.dtype != np.float32:
                raise node.fail("a float32 LSTM needs float32 weights, biases and cell state")
        elif inp.dtype in INTEGER_VARIANTS:
            if (w_type, b_type) != INTEGER_VARIANTS[inp.dtype] or cell.dtype != np.int16:
                want_w, want_b = INTEGER_VARIANTS[inp.dtype]
                raise node.fail(f"a {inp.dtype} LSTM needs {want_w} weights, {want_b} biases and an int16 cell "
                                f"state, got {w_type}, {b_type} and {cell.dtype}")
            for t in weights:
                assert t is not None
                if t.quant is None or t.quant.per_channel:
                    raise node.fail(f"weight tensor {t.name!r} must be quantized per tensor")
            for t in (inp, hidden, *weights):  # the wheel refuses negative scales here (not on the cell state)
                if t is not None and t.scale < 0:
                    raise node.fail(f"tensor {t.name!r} has a negative scale {t.scale:g}")
        else:
            raise node.fail(f"unsupported input type {inp.dtype}")

    # ---- invoke ---------------------------------------------------------------------------------------------

    def invoke(self, node: Node) -> None:
        x_all = node.input(INPUT)
        out = node.output(0)
        if not self.time_major:  # (batch, time, ...) -> (time, batch, ...); rows are independent
            x_all, out = x_all.transpose(1, 0, 2), out.transpose(1, 0, 2)
        hidden = node.input(OUTPUT_STATE).reshape(self.batch, self.units)
        cell = node.input(CELL_STATE).reshape(self.batch, self.units)
        w_in = {g: node.input(INPUT_WEIGHTS[g]) for g in GATES}
        w_rec = {g: node.input(RECURRENT_WEIGHTS[g]) for g in GATES}
        bias = {g: node.input(BIASES[g]) for g in GATES}
        step = self._step_int if self.quantized else self._step_float
        for t in range(self.steps):
            step(x_all[t], hidden, cell, w_in, w_rec, bias)
            out[t] = hidden

    def _step_int(self, x: np.ndarray, hidden: np.ndarray, cell: np.ndarray, w_in: dict, w_rec: dict,
                  bias: dict) -> None:
        def gate(g: str) -> np.ndarray:
            pre = self.input_fc[g](x, w_in[g], bias[g]) + self.recurrent_fc[g](hidden, w_rec[g], None)
            pre = np.clip(pre, -32768, 32767)
            if g == "cell":
                return tanh_int16(pre, 0, 0) if self.cell_tanh else pre
            return logistic_int16(pre, 0, 0)

        forget, input_gate, cell_gate = gate("forget"), gate("input"), gate("cell")
        c = self.forget_mul(forget, cell.astype(np.int64))
        c = np.clip(c + self.input_mul(input_gate, cell_gate), -32768, 32767)
        if self.cell_clip > 0:
            c = np.clip(c, -self.quantized_clip, self.quantized_clip)
        cell[...] = c
        output_gate = gate("output")
        hidden[...] = self.hidden_mul(tanh_int16(c, *self.tanh_cell), output_gate)

    def _step_float(self, x: np.ndarray, hidden: np.ndarray, cell: np.ndarray, w_in: dict, w_rec: dict,
                    bias: dict) -> None:
        # Where two NaNs meet, TFLM's compiled code keeps (measured against the wheel): the input's in a product
        # of a fully connected, the running total's in its sum, the bias's in total + bias, the first operand's
        # in its element-wise add, the second operand's in its element-wise multiply.
        def gate(g: str) -> np.ndarray:
            zero = np.float32(0.0)  # TFLM adds a zero bias to the recurrent product
            with np.errstate(all="ignore"):
                fc_in = nan_from(dot_float(x, w_in[g], True) + bias[g], bias[g])
                pre = add_first(_clamp_float(fc_in), _clamp_float(dot_float(hidden, w_rec[g], True) + zero))
            if g == "cell":
                return tanhf(pre) if self.cell_tanh else pre
            return logistic_float(pre)

        forget, input_gate, cell_gate = gate("forget"), gate("input"), gate("cell")
        c = add_first(_clamp_float(mul_second(forget, cell)), _clamp_float(mul_second(input_gate, cell_gate)))
        if self.cell_clip > 0:
            clip = np.float32(self.cell_clip)
            c = np.maximum(np.minimum(clip, c), -clip)
        cell[...] = c
        output_gate = gate("output")
        hidden[...] = _clamp_float(mul_second(tanhf(c), output_gate))
