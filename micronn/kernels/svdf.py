"""SVDF: a rank-decomposed fully connected layer over a sliding window of time (TFLM's reference kernel).

Each invoke shifts the variable ``activation_state`` (batch, num_filters * memory_size) left by one
time step, writes the feature projection ``weights_feature @ input`` into the newest column, then
takes each filter's dot product with ``weights_time`` over the window, sums groups of ``rank``
filters into ``num_units`` outputs, adds the bias and applies the activation.

Integer path: int8 input and weights_feature, int16 (or int8) weights_time and state of the same
type, int32 bias, int8 output. TFLM rescales the feature projection into the state's scale with
``input * weights_feature / state`` and the time projection into the output with
``state * weights_time / output``, both computed in double precision, and ignores the fused
activation (the output's quantized range is the only clamp).
"""

from __future__ import annotations

import numpy as np

from micronn.ir import Activation
from micronn.kernels._lstm_util import dot_float
from micronn.kernels._unary import tanhf
from micronn.kernels.base import Kernel, Node, register
from micronn.quant import activation_range_float, multiply_by_quantized_multiplier, quantize_multiplier, wrap_int32

INPUT, WEIGHTS_FEATURE, WEIGHTS_TIME, BIAS, STATE = range(5)


@register
class Svdf(Kernel):
    op = "SVDF"
    dtypes = frozenset({"int8", "float32"})

    def prepare(self, node: Node) -> None:
        if len(node.inputs) != 5 or len(node.outputs) != 1:
            raise node.fail(f"expected 5 inputs and 1 output, got {len(node.inputs)} and {len(node.outputs)}")
        inp, wf, wt, bias, state = node.inputs
        out = node.outputs[0]
        if inp is None or wf is None or wt is None or state is None:
            raise node.fail("input, weights_feature, weights_time and activation_state are required")
        if bias is None:  # TFLM's SVDF dereferences the bias unconditionally (it crashes without one)
            raise node.fail("SVDF needs a bias")
        rank = int(node.options.rank)
        if len(inp.shape) != 2 or len(wf.shape) != 2 or len(wt.shape) != 2 or len(out.shape) != 2:
            raise node.fail("input, weights_feature, weights_time and output must be 2-D")
        batch, input_size = inp.shape
        num_filters, memory_size = wf.shape[0], wt.shape[1]
        if rank <= 0 or num_filters % rank:
            raise node.fail(f"num_filters {num_filters} is not a multiple of rank {rank}")
        num_units = num_filters // rank
        if wf.shape[1] != input_size or wt.shape[0] != num_filters:
            raise node.fail(f"weights_feature {wf.shape} / weights_time {wt.shape} do not fit input {inp.shape}")
        if tuple(out.shape) != (batch, num_units):
            raise node.fail(f"output shape {out.shape}, expected {(batch, num_units)}")
        if tuple(bias.shape) != (num_units,):
            raise node.fail(f"bias shape {bias.shape}, expected ({num_units},)")
        if len(state.shape) != 2 or tuple(state.shape) != (batch, memory_size * num_filters):
            raise node.fail(f"activation_state shape {state.shape}, expected {(batch, memory_size * num_filters)}")
        if not state.is_variable:
            raise node.fail("activation_state must be a variable tensor")
        self.rank, self.num_units, self.num_filters, self.memory_size = rank, num_units, num_filters, memory_size
        self.activation = int(node.options.fused_activation_function)

        if inp.dtype == np.int8:
            if wf.dtype != np.int8 or wt.dtype not in (np.int8, np.int16) or state.dtype != wt.dtype:
                raise node.fail("int8 SVDF needs int8 weights_feature and weights_time/state both int16 or int8")
            if out.dtype != np.int8:
                raise node.fail(f"int8 SVDF needs an int8 output, got {out.dtype}")
            if bias.dtype != np.int32:
                raise node.fail(f"int8 SVDF needs an int32 bias, got {bias.dtype}")
            if abs(bias.scale - state.scale * wt.scale) >= 1e-5:
                raise node.fail("bias scale must be activation_state scale * weights_time scale")
            # in double precision (measured against TFLM: a float32 product or quotient gives other multipliers)
            scale_1 = inp.scale * wf.scale / state.scale
            scale_2 = state.scale * wt.scale / out.scale
            self.mult_1, self.shift_1 = quantize_multiplier(scale_1)
            self.mult_2, self.shift_2 = quantize_multiplier(scale_2)
            self.input_zp, self.output_zp, self.state_zp = inp.zero_point, out.zero_point, state.zero_point
            # TFLM's int32 scratch: per-filter time products, then per-unit sums (computed here in temporaries)
            node.request_scratch(batch * num_filters * 4)
            node.request_scratch(batch * num_units * 4)
            self.quantized = True
        elif inp.dtype == np.float32:
            named = {"weights_feature": wf, "weights_time": wt, "bias": bias, "activation_state": state, "output": out}
            for name, t in named.items():
                if t.dtype != np.float32:
                    raise node.fail(f"float32 SVDF needs a float32 {name}, got {t.dtype}")
            if self.activation not in (Activation.NONE, Activation.RELU, Activation.RELU6, Activation.RELU_N1_TO_1,
                                       Activation.TANH):
                raise node.fail(f"unsupported fused activation {self.activation}")
            node.request_scratch(batch * num_filters * 4)  # TFLM's float per-filter products
            self.quantized = False
        else:
            raise node.fail(f"unsupported input type {inp.dtype}")

    def invoke(self, node: Node) -> None:
        if self.quantized:
            self._invoke_int(node)
        else:
            self._invoke_float(node)

    def _shift_state(self, node: Node) -> np.ndarray:
        """Shift the state one step left (TFLM moves the whole buffer by one element; every filter's last
        slot is then overwritten); returns it viewed as (batch, num_filters, memory_size)."""
        state = node.input(STATE)
        flat = state.reshape(-1)
        flat[:-1] = flat[1:].copy()
        return state.reshape(state.shape[0], self.num_filters, self.memory_size)

    def _invoke_int(self, node: Node) -> None:
        x = node.input(INPUT).astype(np.int64) - self.input_zp
        wf = node.input(WEIGHTS_FEATURE).astype(np.int64)
        wt = node.input(WEIGHTS_TIME).astype(np.int64)
        state = self._shift_state(node)
        info = np.iinfo(state.dtype)

        feature = wrap_int32(x @ wf.T)  # (batch, num_filters)
        feature = multiply_by_quantized_multiplier(feature, self.mult_1, self.shift_1)
        state[:, :, -1] = (np.clip(feature, info.min, info.max) + self.state_zp).astype(state.dtype)

        batch = state.shape[0]
        per_filter = wrap_int32(np.einsum("bfm,fm->bf", state.astype(np.int64) - self.state_zp, wt))
        acc = node.input(BIAS).astype(np.int64) + per_filter.reshape(batch, self.num_units, self.rank).sum(axis=2)
        acc = wrap_int32(acc)
        y = multiply_by_quantized_multiplier(acc, self.mult_2, self.shift_2) + self.output_zp
        node.output(0)[...] = np.clip(y, -128, 127)

    def _invoke_float(self, node: Node) -> None:
        x = node.input(INPUT)
        wf = node.input(WEIGHTS_FEATURE)
        wt = node.input(WEIGHTS_TIME)
        state = self._shift_state(node)
        batch = state.shape[0]

        # dot products summed from 0.0f in index order, like TFLM's loops
        state[:, :, -1] = dot_float(x, wf)
        per_filter = np.zeros((batch, self.num_filters), np.float32)
        for j in range(self.memory_size):
            per_filter += wt[:, j] * state[:, :, j]

        y = np.broadcast_to(node.input(BIAS), (batch, self.num_units)).astype(np.float32)
        grouped = per_filter.reshape(batch, self.num_units, self.rank)
        for r in range(self.rank):
            y = y + grouped[:, :, r]
        if self.activation == Activation.TANH:
            y = tanhf(y)
        elif self.activation != Activation.NONE:
            lo, hi = activation_range_float(self.activation)
            y = np.minimum(np.maximum(y, np.float32(lo)), np.float32(hi))
        node.output(0)[...] = y
