"""EQUAL, NOT_EQUAL, LESS, LESS_EQUAL, GREATER and GREATER_EQUAL with numpy broadcasting and a bool
output, like TFLM's reference kernels.

Float, integer and bool operands are compared as they are. int8 operands are first brought to a
common fixed-point scale, as TFLM does: each, offset by its zero point and shifted left by 8 bits, is
multiplied by its own scale (a quantized multiplier below one: TFLM aborts on scales of 1 or more),
so operands with different quantization compare by real value, up to rounding.

TFLM supports bool only for EQUAL/NOT_EQUAL. Its GREATER accepts int16 but does not compute the
comparison (the wheel's output does not follow the inputs: all False in a fresh process, stale arena
bytes after other models ran): micronn refuses it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from micronn.kernels import _elementwise as ew
from micronn.kernels.base import Kernel, Node, register

LEFT_SHIFT = 8


class Comparison(Kernel):
    """Shared prepare/invoke; subclasses set ``op``, ``dtypes`` and ``compare``."""

    compare: Callable[[np.ndarray, np.ndarray], np.ndarray]

    def prepare(self, node: Node) -> None:
        (a, b), out = ew.operands(node, 2)
        ew.same_types(node, [a, b], ["input 1", "input 2"])
        if out.dtype != np.bool_:
            raise node.fail(f"the output must be bool, got {out.dtype.name}")
        ew.check_broadcast(node, [a, b], out)
        self.rescale = None
        if a.dtype == np.int8:
            ew.require_quantized(node, [a, b], ["input 1", "input 2"])
            self.rescale = [
                (-t.zero_point, *ew.multiplier_below_one(node, float(np.float32(t.scale)), f"input {i + 1} scale"))
                for i, t in enumerate((a, b))
            ]

    def invoke(self, node: Node) -> None:
        x1, x2 = ew.broadcast_inputs(node, 2)
        if self.rescale is not None:
            (o1, m1, s1), (o2, m2, s2) = self.rescale
            x1 = ew.rescale_operand(x1, o1, LEFT_SHIFT, m1, s1)
            x2 = ew.rescale_operand(x2, o2, LEFT_SHIFT, m2, s2)
        out = node.output(0)
        out[...] = type(self).compare(x1, x2).reshape(out.shape)


ORDERED = frozenset({"float32", "int8", "int32", "int64"})


@register
class Equal(Comparison):
    op = "EQUAL"
    dtypes = ORDERED | {"bool"}
    compare = np.equal


@register
class NotEqual(Comparison):
    op = "NOT_EQUAL"
    dtypes = ORDERED | {"bool"}
    compare = np.not_equal


@register
class Less(Comparison):
    op = "LESS"
    dtypes = ORDERED
    compare = np.less


@register
class LessEqual(Comparison):
    op = "LESS_EQUAL"
    dtypes = ORDERED
    compare = np.less_equal


@register
class Greater(Comparison):
    op = "GREATER"
    dtypes = ORDERED  # TFLM accepts int16 but its output does not depend on the inputs: unsupported here
    compare = np.greater


@register
class GreaterEqual(Comparison):
    op = "GREATER_EQUAL"
    dtypes = ORDERED
    compare = np.greater_equal
