"""Builders shared by the control-flow and resource-variable tests: small subgraphs over named tensors."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from micronn import Interpreter
from micronn.testing import Graph, Op, T, assert_same_as_tflm, tflm_arena

Q8 = (0.05, -3)  # scale, zero point of the int8 activations


@dataclass
class Sub:
    """A subgraph under construction: named tensors and operators, with helpers for the ops the tests use."""

    tensors: dict[str, T] = field(default_factory=dict)
    ops: list[Op] = field(default_factory=list)

    def t(self, name: str, spec: T) -> str:
        self.tensors[name] = spec
        return name

    def const(self, data: Any, dtype: str, **kw: Any) -> str:
        return self.t(f"const{len(self.tensors)}", T(np.shape(data), dtype, data=data, **kw))

    def op(self, op: str, ins: list[str | None], outs: list[str], **options: Any) -> None:
        self.ops.append(Op(op, ins, outs, options or None))

    def slice(self, src: str, dst: str, begin: list[int], end: list[int]) -> None:
        n = len(begin)
        self.op("STRIDED_SLICE", [src, self.const(begin, "int32"), self.const(end, "int32"),
                                  self.const([1] * n, "int32")], [dst])

    def rotate(self, src: str, dst: str, spec: T, k: int = 1) -> None:
        """dst = src rolled left by ``k`` along the last axis of a [1, n] tensor."""
        n = spec.shape[-1]
        head, tail = self.t(f"{dst}_head", T((1, k), spec.dtype, spec.scale, spec.zero_point)), self.t(
            f"{dst}_tail", T((1, n - k), spec.dtype, spec.scale, spec.zero_point))
        self.slice(src, head, [0, 0], [1, k])
        self.slice(src, tail, [0, k], [1, n])
        self.op("CONCATENATION", [tail, head], [dst], axis=1)

    def fc(self, src: str, dst: str, n: int, dtype: str, seed: int) -> None:
        """dst = fully connected [1, n] -> [1, n] with fixed random weights (int8 or float32)."""
        rng = np.random.default_rng(seed)
        if dtype == "int8":
            w = self.const(rng.integers(-127, 128, (n, n)), "int8", scale=0.01)
            b = self.const(rng.integers(-500, 500, n), "int32", scale=Q8[0] * 0.01)
        else:
            w = self.const(rng.uniform(-0.5, 0.5, (n, n)).astype(np.float32), "float32")
            b = self.const(rng.uniform(-0.1, 0.1, n).astype(np.float32), "float32")
        self.op("FULLY_CONNECTED", [src, w, b], [dst])

    def graph(self, inputs: list[str], outputs: list[str]) -> Graph:
        return Graph(dict(self.tensors), list(self.ops), inputs, outputs)


def act(dtype: str, shape: tuple[int, ...] = (1, 8)) -> T:
    return T(shape, dtype, *Q8) if dtype == "int8" else T(shape, dtype)


def check(model: bytes, runs: int = 3, seed: int = 0) -> None:
    """Byte-identical outputs over several invokes of one interpreter, and TFLM's exact head."""
    assert_same_as_tflm(model, runs=runs, seed=seed)
    assert Interpreter.from_bytes(model, planner="tflm").head == tflm_arena(model)["head"]
