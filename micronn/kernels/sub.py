"""SUB with numpy broadcasting and a fused activation, byte-identical to TFLM's reference kernel.

The same arithmetic as ADD (see add.py) with the second operand subtracted; the quantized scale
ratios are computed in double, as for ADD (checked against the wheel: float32 ratios differ). Unlike
ADD, TFLM's int32 SUB clamps to the fused activation's range.
"""

from __future__ import annotations

from micronn.kernels.add import Add
from micronn.kernels.base import register


@register
class Sub(Add):
    """TFLM SUB for float32, int8, int16 and int32."""

    op = "SUB"
    subtract = True
    int_activation = True
