"""BROADCAST_ARGS: the broadcast shape of two 1-D shape tensors, like TFLM's reference kernel.

TFLM walks the output's (static) length from the back: each entry is the pair of input entries at that
position from the back (1 where an input is shorter), giving the other one where either is 1. It compares
and stores those entries as C ``int``: int64 shapes are truncated to 32 bits first. Two entries that differ
with neither 1 make TFLM abort the process (TFLITE_CHECK_EQ); micronn fails the invoke instead (or the
prepare, for constant shapes). An output shorter than the broadcast rank keeps its last entries; a longer
one starts with 1s.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels._extra import invoke_error, refuse_zero_size
from micronn.kernels.base import Kernel, Node, register
from micronn.quant import wrap_int32


@register
class BroadcastArgs(Kernel):
    """TFLM BROADCAST_ARGS for int32 and int64 shapes."""

    op = "BROADCAST_ARGS"
    dtypes = frozenset({"int32", "int64"})
    reads_input_first = True  # the whole result is computed before the output is written

    def prepare(self, node: Node) -> None:
        if len(node.inputs) != 2 or any(t is None for t in node.inputs) or len(node.outputs) != 1:
            raise node.fail("expects 2 inputs (two shapes) and 1 output")
        s1, s2, out = node.inputs[0], node.inputs[1], node.outputs[0]
        refuse_zero_size(node, [s1, s2, out])
        if s2.dtype != s1.dtype or out.dtype != s1.dtype:
            raise node.fail(f"the shapes and the output must share one type, got {s1.dtype.name}, "
                            f"{s2.dtype.name} and {out.dtype.name}")
        for t, name in ((s1, "shape 1"), (s2, "shape 2"), (out, "the output")):
            if len(t.shape) != 1:
                raise node.fail(f"{name} must be 1-D, got shape {tuple(t.shape)}")
        self.result: np.ndarray | None = None
        if s1.is_constant and s2.is_constant:
            self.result = self.compute(node, node.fail)

    def compute(self, node: Node, error) -> np.ndarray:
        n = node.outputs[0].shape[0]

        def from_back(x: np.ndarray) -> np.ndarray:  # entries as C ints, last first, padded with 1s to n
            v = wrap_int32(np.asarray(x, np.int64).reshape(-1))[::-1][:n]
            return np.concatenate([v, np.ones(n - len(v), np.int64)])

        a, b = from_back(node.input(0)), from_back(node.input(1))
        bad = (a != 1) & (b != 1) & (a != b)
        if bad.any():
            k = int(np.argmax(bad))
            raise error(f"dimensions {int(a[k])} and {int(b[k])} (position {k} from the back) do not broadcast "
                        "(TFLM aborts the process)")
        return np.where(a == 1, b, a)[::-1]

    def invoke(self, node: Node) -> None:
        result = self.result
        if result is None:
            result = self.compute(node, lambda msg: invoke_error(node, msg))
        node.output(0)[...] = result
