"""ELU (``x < 0 ? exp(x) - 1 : x``), like TFLM's reference kernel: float32 and int8.

* float32: C's ``expm1f`` for negative inputs, bit for bit.
* int8: a 256-entry lookup table built in prepare (TFLM's ``PopulateLookupTable``, in float32 with
  ``expf(x) - 1``) and kept with the operator's persistent data, like TFLM.
"""

from __future__ import annotations

import numpy as np

from micronn import fixedpoint as fp
from micronn.kernels import _unary as un
from micronn.kernels.base import Kernel, Node, register


def _elu_for_table(x: np.ndarray) -> np.ndarray:
    """The transform TFLM tabulates: ``x < 0 ? expf(x) - 1 : x`` in float32."""
    with np.errstate(all="ignore"):
        return np.where(x < 0, fp.expf(x) - np.float32(1), x)


@register
class Elu(Kernel):
    op = "ELU"
    dtypes = frozenset({"float32", "int8"})
    reads_input_first = True

    def prepare(self, node: Node) -> None:
        inp, out = un.unary_operands(node)
        self.table = node.persistent(un.lut_int8(_elu_for_table, inp, out)) if inp.dtype == np.int8 else None

    def invoke(self, node: Node) -> None:
        x, out = node.input(0), node.output(0)
        if self.table is not None:
            out[...] = self.table[x.view(np.uint8)].reshape(out.shape)
            return
        negative = x < 0
        y = x.copy()
        y[negative] = un.expm1f(x[negative])
        out[...] = y.reshape(out.shape)
