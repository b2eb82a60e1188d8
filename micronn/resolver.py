"""Op resolvers: which kernel runs which op, like TFLM's MicroMutableOpResolver.

    resolver = OpResolver.all()                     # every kernel micronn has
    resolver = OpResolver(["CONV_2D", "SOFTMAX"])   # only these (smaller, like a device build)

A custom op from user code:

    class Double(micronn.Kernel):
        op, dtypes = "Double", frozenset({"float32"})
        def invoke(self, node):
            node.output(0)[...] = node.input(0) * 2

    resolver = OpResolver.all().add(Double)
"""

from __future__ import annotations

from collections.abc import Iterable

from micronn.errors import MicronnError
from micronn.kernels import REGISTRY, Kernel


class OpResolver:
    """A mapping from op name (builtin name or custom code) to kernel class."""

    def __init__(self, ops: Iterable[str] = ()):
        self.kernels: dict[str, type[Kernel]] = {}
        for op in ops:
            if op not in REGISTRY:
                raise MicronnError(f"micronn has no kernel for {op!r}")
            self.kernels[op] = REGISTRY[op]

    @classmethod
    def all(cls) -> OpResolver:
        """Every registered kernel (the default)."""
        r = cls()
        r.kernels = dict(REGISTRY)
        return r

    def add(self, kernel: type[Kernel], op: str | None = None) -> OpResolver:
        """Register ``kernel`` for ``op`` (default: ``kernel.op``); returns self for chaining."""
        self.kernels[op or kernel.op] = kernel
        return self

    def find(self, op: str) -> type[Kernel] | None:
        return self.kernels.get(op)

    def __contains__(self, op: str) -> bool:
        return op in self.kernels

    def __iter__(self):
        return iter(sorted(self.kernels))
