"""Control flow and resource variables: what IF, WHILE, CALL_ONCE and the variable ops share with the interpreter.

TFLM runs every subgraph of a model from one arena and plans them on one timeline (see
``micronn.planners.tensor_requests``): a control-flow operator copies its inputs into the inputs of the
subgraph it calls, invokes it, and copies its outputs back. Resource variables (``VAR_HANDLE`` ids, read and
written by ``READ_VARIABLE``/``ASSIGN_VARIABLE``) live in the arena's persistent tail, in a store shared by
all subgraphs of one interpreter, like TFLM's ``MicroResourceVariables``.

These kernels reach past the plain kernel contract, to the interpreter behind their node:
``node.interp.model``, ``node.interp.invoke_subgraph(i)``, ``node.interp.subgraph_inputs(i)`` /
``subgraph_outputs(i)`` (live views), ``node.interp.resources`` (a :class:`ResourceVariables`), and
``node.bind_output(i, view)`` (prepare only: the output uses the kernel's own persistent memory and is left
out of the planned head, as VAR_HANDLE's output is in TFLM).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from micronn.errors import InvokeError
from micronn.ir import RESOURCE, Subgraph, Tensor


def copy_tensors(dst: list[np.ndarray], src: list[np.ndarray], what: str) -> None:
    """Copy each ``src`` view's bytes over the ``dst`` view at the same position, as TFLM's memcpy does.

    TFLM only requires as many tensors and equal byte counts, not equal types or shapes; it fails the
    invoke otherwise, and so does this.
    """
    if len(dst) != len(src):
        raise InvokeError(f"{what}: {len(src)} tensors to copy into {len(dst)}")
    for i, (d, s) in enumerate(zip(dst, src)):
        if d.nbytes != s.nbytes:
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
        """The id of the variable named so, created if new. A missing container matches any container.

        Raises ValueError where TFLM would compare a container with a missing one (it crashes there).
        """
        if container is not None and any(v.container is None for v in self.variables):
            raise ValueError(f"container {container!r} given after a VAR_HANDLE without one (TFLM crashes on this)")
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


def subgraph_index(node: Any, index: int, what: str) -> Subgraph:
    """The subgraph ``index`` a control-flow operator names in its option ``what``, refusing a missing one.

    TFLM only checks ``index < subgraph count``; a negative index makes it crash at invoke, so micronn
    refuses it in prepare too.
    """
    subgraphs = node.interp.model.subgraphs
    if not 0 <= index < len(subgraphs):
        raise node.fail(f"{what} is {index}, but the model has {len(subgraphs)} subgraphs")
    return subgraphs[index]


def check_io(node: Any, sg: Subgraph, what: str, n_inputs: int, n_outputs: int | None) -> None:
    """Refuse a called subgraph whose input/output counts differ from what the operator passes."""
    if len(sg.inputs) != n_inputs:
        raise node.fail(f"{what} subgraph {sg.index} has {len(sg.inputs)} inputs, but the operator passes {n_inputs}")
    if n_outputs is not None and len(sg.outputs) != n_outputs:
        raise node.fail(f"{what} subgraph {sg.index} has {len(sg.outputs)} outputs, but the operator has "
                        f"{n_outputs}")


def resource_id(view: np.ndarray) -> int:
    """The id held by a RESOURCE (or int32) tensor: its first four bytes, as TFLM reads ``data.i32[0]``."""
    return int(raw(view)[:4].view("<i4")[0])


def check_id_tensor(node: Any, t: Tensor | None, what: str) -> None:
    """A resource id input must be one RESOURCE or int32 element, as TFLM's variable ops require."""
    if t is None or t.dtype not in (RESOURCE, np.dtype(np.int32)):
        raise node.fail(f"{what} must be a RESOURCE or int32 tensor, got {t.dtype.name if t is not None else 'none'}")
    if int(np.prod(t.shape, dtype=np.int64)) != 1:
        raise node.fail(f"{what} must hold one element, got shape {list(t.shape)}")
