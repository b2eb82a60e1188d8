"""Control flow and resource variables: what IF, WHILE, CALL_ONCE and the variable ops share with the interpreter.

TFLM runs every subgraph of a model from one arena: a control-flow operator copies its inputs into the
inputs of the subgraph it calls, invokes it, and copies its outputs back (``Interpreter.invoke_subgraph``,
``subgraph_inputs``, ``subgraph_outputs``). Resource variables (``VAR_HANDLE`` ids, read and written by
``READ_VARIABLE``/``ASSIGN_VARIABLE``) live in the arena's persistent tail, in a store shared by all subgraphs
of one interpreter, as TFLM's ``MicroResourceVariables``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from micronn.errors import InvokeError
from micronn.ir import Operator

# Options fields naming the subgraphs a control-flow op runs, in the order TFLM plans them.
CALLS: dict[str, tuple[str, ...]] = {
    "IF": ("then_subgraph_index", "else_subgraph_index"),
    "WHILE": ("cond_subgraph_index", "body_subgraph_index"),
    "CALL_ONCE": ("init_subgraph_index",),
}


def called_subgraphs(op: Operator) -> list[int]:
    """The subgraphs ``op`` may run (IF: then, else; WHILE: cond, body; CALL_ONCE: init); [] for other ops."""
    if op.custom or op.op not in CALLS or op.options is None:
        return []
    return [int(getattr(op.options, name)) for name in CALLS[op.op]]


def copy_tensors(dst: list[np.ndarray], src: list[np.ndarray], what: str, check_types: bool = False) -> None:
    """Copy each ``src`` view's bytes over the ``dst`` view at the same position, as TFLM's memcpy does.

    TFLM only requires equal byte counts (and, for IF, equal types), not equal shapes; it fails the invoke
    otherwise, and so does this.
    """
    if len(dst) != len(src):
        raise InvokeError(f"{what}: {len(src)} tensors to copy into {len(dst)}")
    for i, (d, s) in enumerate(zip(dst, src)):
        if d.nbytes != s.nbytes or (check_types and d.dtype != s.dtype):
            raise InvokeError(f"{what}: tensor {i} is {s.dtype.name}{list(s.shape)} ({s.nbytes} bytes) but must "
                              f"fill {d.dtype.name}{list(d.shape)} ({d.nbytes} bytes)")
        raw(d)[...] = raw(s)


def raw(view: np.ndarray) -> np.ndarray:
    """The bytes of a contiguous tensor view, as a flat uint8 view (writes go through)."""
    return view.reshape(-1).view(np.uint8)


@dataclass
class _Variable:
    container: str | None
    shared_name: str
    buffer: np.ndarray | None = None  # uint8 view into the arena tail, once an ASSIGN_VARIABLE sized it
    default: int = 0  # byte value of a reset: the int8 zero point of the first assigned tensor, else 0


@dataclass
class ResourceVariables:
    """The resource variables of one interpreter, keyed like TFLM's by (container, shared_name)."""

    variables: list[_Variable] = field(default_factory=list)

    def create_id(self, container: str | None, shared_name: str) -> int:
        """The id of the variable named so, created if new. A missing container matches any container."""
        for i, v in enumerate(self.variables):
            if (container is None or container == v.container) and shared_name == v.shared_name:
                return i
        self.variables.append(_Variable(container, shared_name))
        return len(self.variables) - 1

    def get(self, rid: int, what: str) -> _Variable:
        if not 0 <= rid < len(self.variables):
            raise InvokeError(f"{what}: resource variable {rid} does not exist ({len(self.variables)} created)")
        return self.variables[rid]

    def reset(self) -> None:
        """Every variable back to its default bytes, as TFLM's reset does (CALL_ONCE does not run again)."""
        for v in self.variables:
            if v.buffer is not None:
                v.buffer[...] = v.default
