"""Checks shared by the kernels of TFLM's signal library (the audio front end of micro_speech and the streaming
ops: SignalFramer, SignalOverlapAdd, SignalStacker, SignalDelay).

Two facts established against the TFLM wheel shape these helpers:

* The kernels read their FlexBuffer options by *position* in the map's sorted key vector, not by name: a map with an
  extra key, a missing key or no map at all makes them read the wrong values, zeros or crash (no map segfaults the
  wheel). micronn therefore accepts only a map holding exactly the keys the converter writes, in sorted order, where
  reading by name and by position agree.
* Their prepare checks types and ranks but not sizes; whenever a size mismatch would make TFLM read or write past a
  buffer (or leave output elements unwritten), micronn refuses the model instead.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from flatbuffers import flexbuffers

from micronn.ir import Tensor
from micronn.kernels._custom_options import read_options
from micronn.kernels.base import Node
from micronn.tflite.reader import MAX_TENSOR_BYTES

MASK32 = 0xFFFFFFFF
INT32_MAX = 2**31 - 1


def operands(node: Node, n_inputs: int, n_outputs: int) -> tuple[list[Tensor], list[Tensor]]:
    """The operator's inputs and outputs, after checking their counts and that none is omitted."""
    if len(node.inputs) != n_inputs or len(node.outputs) != n_outputs:
        raise node.fail(f"takes {n_inputs} inputs and {n_outputs} outputs, got {len(node.inputs)} and "
                        f"{len(node.outputs)}")
    if any(t is None for t in node.inputs):
        raise node.fail("no input may be omitted")
    return list(node.inputs), list(node.outputs)  # type: ignore[arg-type]


def expect(node: Node, t: Tensor, what: str, dtype: str, rank: int | None = 1) -> int:
    """Check ``t``'s type (and rank, unless None); returns its number of elements."""
    if t.dtype != np.dtype(dtype):
        raise node.fail(f"{what} must be {dtype}, got {t.dtype.name}")
    if rank is not None and len(t.shape) != rank:
        raise node.fail(f"{what} must have {rank} dimension{'s' if rank != 1 else ''}, got shape {list(t.shape)}")
    return int(np.prod(t.shape, dtype=np.int64))


def same_size(node: Node, n: int, **sizes: int) -> None:
    """Every size in ``sizes`` must be ``n`` (TFLM would read or write past a buffer otherwise)."""
    for what, size in sizes.items():
        if size != n:
            raise node.fail(f"{what} has {size} elements, expected {n}")


def signal_options(node: Node, kinds: dict[str, type]) -> dict[str, Any]:
    """The options named in ``kinds``, which must be exactly the map's keys (TFLM reads them by position)."""
    values = read_options(node, kinds)
    keys = list(flexbuffers.Loads(bytes(node.op.custom_options or b"")))
    if keys != sorted(kinds):
        raise node.fail(f"custom options must hold exactly the keys {sorted(kinds)} in this order (TFLM reads them "
                        f"by position), got {keys}")
    return values


def in_range(node: Node, name: str, value: int, lo: int, hi: int) -> int:
    """``value`` if ``lo <= value <= hi``; a PrepareError naming option ``name`` otherwise."""
    if not lo <= value <= hi:
        raise node.fail(f"{name} = {value} is out of range [{lo}, {hi}]")
    return value


def constant(node: Node, t: Tensor, what: str) -> np.ndarray:
    """The data of a tensor micronn needs constant to validate it before invoke (TFLM indexes with it unchecked)."""
    if not t.is_constant:
        raise node.fail(f"{what} must be a constant tensor (its values index other buffers)")
    return np.asarray(t.data).reshape(-1)


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
