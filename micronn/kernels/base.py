"""The kernel contract: what a kernel sees of its operator (a Node) and what it must implement.

A kernel is a small class registered under an op name. The interpreter makes one instance
per operator, calls ``prepare`` once inside ``allocate_tensors()`` (validate shapes and types,
precompute quantization parameters, request scratch, store persistent data) and ``invoke``
at every inference, over numpy views into the arena.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from micronn.errors import PrepareError
from micronn.ir import Operator, Tensor


class Node:
    """One operator as a kernel sees it. Implemented by the interpreter.

    ``inputs``/``outputs`` are IR tensors (``None`` for an omitted optional input).
    ``input(i)``/``output(i)`` are numpy views into the arena (or the model's constant
    data), valid in ``invoke`` and, for constant inputs, already in ``prepare``.
    """

    op: Operator
    inputs: list[Tensor | None]
    outputs: list[Tensor]
    index: int

    @property
    def options(self) -> Any:
        return self.op.options

    def input(self, i: int) -> np.ndarray:  # pragma: no cover - implemented by the interpreter
        raise NotImplementedError

    def output(self, i: int) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def request_scratch(self, nbytes: int) -> int:  # pragma: no cover
        """Prepare only: ask for a non-persistent buffer alive during this op; returns its id."""
        raise NotImplementedError

    def scratch(self, idx: int, dtype: Any = np.uint8,
                shape: tuple[int, ...] | None = None) -> np.ndarray:  # pragma: no cover
        """Invoke only: the scratch buffer ``idx`` as a view of ``dtype`` (and ``shape``)."""
        raise NotImplementedError

    def persistent(self, array: np.ndarray, constant: bool = False) -> np.ndarray:  # pragma: no cover
        """Prepare only: copy ``array`` into the arena's persistent tail; returns the view to keep.

        ``constant``: the kernel never writes the array (it is computed from the model's constants), so an
        identical array another operator already keeps may be handed out instead (a read-only view)."""
        raise NotImplementedError

    @property
    def compact_scratch(self) -> bool:
        """True when the kernel may request less scratch than TFLM's reference kernel (same output bytes);
        False when the plan must reproduce TFLM's arena exactly."""
        return False

    def fail(self, msg: str) -> PrepareError:
        """An error naming this operator, for kernels to raise from prepare."""
        return PrepareError(f"operator {self.index} ({self.op.op}): {msg}")


class Kernel:
    """Base class of kernels. Subclasses set ``op`` and ``dtypes`` and override prepare/invoke."""

    op: ClassVar[str]
    dtypes: ClassVar[frozenset[str]] = frozenset()
    # True when invoke reads all of its inputs before writing any output, so the memory planner may place
    # the output over a dying input (alias, in place, or streamed over it). Opt in per kernel.
    reads_input_first: ClassVar[bool] = False
    # False for micronn's own custom ops (TinySeg's Spill, Fetch, FetchConv2D), which TFLM does not have: the
    # conformance count leaves them out.
    in_tflm: ClassVar[bool] = True

    def dtype_key(self, node: Node) -> str:
        """The type this operator computes in, checked against ``dtypes`` (first input by default)."""
        t = node.inputs[0] if node.inputs and node.inputs[0] is not None else next(iter(node.outputs), None)
        return t.dtype.name if t is not None else "none"

    def prepare(self, node: Node) -> None:
        pass

    def invoke(self, node: Node) -> None:  # pragma: no cover
        raise NotImplementedError

    def reset(self, node: Node) -> None:
        """Called by ``Interpreter.reset()`` after allocation, as TFLM calls each kernel's reset: kernels that keep
        state between invokes in persistent memory (the signal library's filters and delays) restore it here."""


REGISTRY: dict[str, type[Kernel]] = {}


def register(cls: type[Kernel]) -> type[Kernel]:
    """Class decorator: make ``cls`` the reference kernel for ``cls.op``."""
    REGISTRY[cls.op] = cls
    return cls
