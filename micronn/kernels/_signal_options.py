"""What the streaming ops of TFLM's signal library (SignalFramer, SignalOverlapAdd, SignalStacker, SignalDelay)
share: reading their FlexBuffer options the way TFLM does, and bounding the state they keep between invokes.

TFLM reads most of these options by their position among the map's values, not by name (a FlexBuffer map
stores its keys sorted, so the converter's names fix the positions). A map holding a name more or one less
shifts every later value in TFLM; micronn refuses such maps instead of guessing which value TFLM would read.
"""

from __future__ import annotations

from typing import Any

from flatbuffers import flexbuffers

from micronn.kernels._custom_options import read_options
from micronn.kernels.base import Node
from micronn.tflite.reader import MAX_TENSOR_BYTES

INT32_MAX = 2**31 - 1


def signal_options(node: Node, kinds: dict[str, type]) -> dict[str, Any]:
    """The options of ``kinds`` (all required), refusing maps that hold any other name."""
    values = read_options(node, kinds)
    names = set(flexbuffers.Loads(bytes(node.op.custom_options)))  # read_options checked it is a valid map
    extra = sorted(str(n) for n in names - set(kinds))
    if extra:
        raise node.fail(f"unexpected custom options {extra}: TFLM reads {sorted(kinds)} by their position in "
                        "the map, which other names would shift")
    return values


def check_state_bytes(node: Node, nbytes: int, what: str) -> None:
    """Refuse state no microcontroller could hold (it would also be a huge host allocation)."""
    if nbytes > MAX_TENSOR_BYTES:
        raise node.fail(f"{what} would need {nbytes} bytes of persistent state, beyond any microcontroller")


def leading(shape: tuple[int, ...], inner: int) -> int:
    """The product of ``shape``'s dimensions but its last ``inner`` ones (1 for none): the ops' outer rows."""
    n = 1
    for d in shape[:len(shape) - inner]:
        n *= int(d)
    return n
