"""Cold range analysis (TinySeg, Algorithm 2): for each tensor, the longest stretch of operators that never touch it.

A tensor that is written early and read again much later (a U-Net skip connection) sits idle in the arena in
between; spilling it to storage over that stretch frees its bytes for everything that runs meanwhile.

The paper's pseudo-code must measure the current idle interval from the tensor's *last use*; measuring it from the
end of the previous longest range (as an implementation slip can) picks a range that is not idle at all when a
tensor is used several times (def 0, uses 4, 6, 9: the answer is 0..4, not 6..9 measured as 9 - 4).
"""

from __future__ import annotations

from dataclasses import dataclass

from micronn.ir import Model, Subgraph


@dataclass(frozen=True)
class ColdRange:
    """Tensor ``tensor`` is used by operator ``start`` (or defined there; -1 for a subgraph input) and next by
    operator ``end``; no operator strictly between touches it. ``last`` is its last use."""

    tensor: int
    start: int
    end: int
    last: int
    nbytes: int

    @property
    def length(self) -> int:
        return self.end - self.start

    def covers(self, op: int) -> bool:
        """True if the tensor is idle while operator ``op`` runs."""
        return self.start < op < self.end


def cold_ranges(graph: Model | Subgraph) -> list[ColdRange]:
    """The longest cold range of every activation tensor (constants and variables are not the arena's to spill),
    in tensor order. On a tie the earliest range wins."""
    sg = graph.main if isinstance(graph, Model) else graph
    state: dict[int, list[int]] = {t: [-1, -1, -1] for t in sg.inputs}  # tensor -> [start, end, last]
    for op in sg.operators:
        for t in op.outputs:
            state[t] = [op.index] * 3
        for t in dict.fromkeys(i for i in op.inputs if i >= 0):  # an op reading a tensor twice uses it once
            if t not in state:
                continue  # a constant or variable
            cr = state[t]
            if op.index - cr[2] > cr[1] - cr[0]:  # idle since the last use, not since the end of the last range
                cr[0], cr[1] = cr[2], op.index
            cr[2] = op.index
    out = []
    for t, (start, end, last) in sorted(state.items()):
        tensor = sg.tensors[t]
        if not tensor.is_constant and not tensor.is_variable:
            out.append(ColdRange(t, start, end, last, tensor.nbytes))
    return out
