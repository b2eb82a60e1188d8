"""Fetch (TinySeg custom op): bring spilled tensors back from storage, concatenated with tensors still in the arena.

Inputs: the tensors to concatenate with (any number, none for a plain fetch). Output: the concatenation, with the
spilled parts in their places. Custom options (a FlexBuffer map):

- ``victims`` (list of int): the storage ids (the ``id`` of their Spill) of the spilled parts;
- ``positions`` (list of int): where each spilled part goes among all parts of the concatenation, in order;
- ``sizes`` (list of int): each spilled part's extent along ``axis`` (its other dimensions are the output's);
- ``axis`` (int, default -1): the concatenation axis, negative counting from the end;
- ``drop`` (int, default 1): 1 to tell the storage the spilled bytes are no longer needed once read (flash may
  then erase their blocks, asynchronously if it can).

A plain fetch of one spilled tensor is ``victims=[id], positions=[0], sizes=[extent], axis=0`` with no inputs. Fusing
a fetch with the CONCATENATION that reads it (TinySeg's fused fetching) is the same op with the concatenation's
other inputs, so the restored tensor never exists on its own. As for CONCATENATION, int8 inputs must share the
output's scale and zero point (TFLM does not requantize); spilled parts are raw bytes of such tensors.

Spilled parts are read straight into the output where they are contiguous there; otherwise (a channel
concatenation) one line of the output (the dimension before ``axis``) at a time through a small arena scratch
buffer, so no buffer the size of a spilled tensor is ever needed.
"""

from __future__ import annotations

import numpy as np

from micronn.ir import Tensor
from micronn.kernels._custom_options import read_options
from micronn.kernels.base import Kernel, Node, register
from micronn.kernels.concatenation import _qparams


class Parts:
    """A concatenation whose parts are arena tensors (``ram``) or spilled tensors, validated against ``shape``."""

    def __init__(self, node: Node, ram: list[Tensor], shape: tuple[int, ...], opts: dict) -> None:
        victims, positions, sizes, axis = opts["victims"], opts["positions"], opts["sizes"], opts["axis"]
        rank = len(shape)
        self.axis = axis + rank if axis < 0 else axis
        if not 0 <= self.axis < rank:
            raise node.fail(f"axis {axis} is out of range for a {rank}-D output")
        if not victims or len(positions) != len(victims) or len(sizes) != len(victims):
            raise node.fail(f"needs as many positions and sizes as victims, got {len(victims)} victims, "
                            f"{len(positions)} positions, {len(sizes)} sizes")
        n = len(ram) + len(victims)
        if sorted(positions) != sorted(set(positions)) or not all(0 <= p < n for p in positions):
            raise node.fail(f"positions {positions} are not distinct places among {n} parts")
        if any(v < 0 for v in victims) or any(s < 1 for s in sizes) or len(set(victims)) != len(victims):
            raise node.fail(f"victim ids must be distinct and >= 0, sizes >= 1; got {victims} and {sizes}")
        spilled = dict(zip(positions, zip(victims, sizes)))
        ram_iter = iter(range(len(ram)))
        self.order: list[tuple[str, int, int]] = []  # ("ram", input index, extent) or ("victim", id, extent)
        for p in range(n):
            if p in spilled:
                self.order.append(("victim", *spilled[p]))
                continue
            i = next(ram_iter)
            t = ram[i]
            if len(t.shape) != rank or any(d != o for k, (d, o) in enumerate(zip(t.shape, shape)) if k != self.axis):
                raise node.fail(f"input {i} shape {t.shape} does not fit output {shape} along axis {self.axis}")
            self.order.append(("ram", i, t.shape[self.axis]))
        if sum(e for _, _, e in self.order) != shape[self.axis]:
            raise node.fail(f"parts add up to {sum(e for _, _, e in self.order)} along axis {self.axis}, "
                            f"the output has {shape[self.axis]}")
        self.shape = shape
        self.outer = int(np.prod(shape[:self.axis], dtype=np.int64))
        self.inner = int(np.prod(shape[self.axis + 1:], dtype=np.int64))
        self.line = shape[self.axis - 1] if self.axis > 0 and self.outer > 1 else self.outer  # outer rows per read

    def spilled_bytes(self, itemsize: int) -> int:
        return sum(e for kind, _, e in self.order if kind == "victim") * self.outer * self.inner * itemsize

    def line_bytes(self, itemsize: int) -> int:
        """Scratch one line of the widest spilled part needs (0 when every part lands contiguously)."""
        if self.outer == 1:
            return 0
        return max(e for kind, _, e in self.order if kind == "victim") * self.line * self.inner * itemsize


@register
class Fetch(Kernel):
    op = "Fetch"
    in_tflm = False

    def prepare(self, node: Node) -> None:
        if len(node.outputs) != 1 or any(t is None for t in node.inputs):
            raise node.fail("needs exactly one output and no omitted inputs")
        out = node.outputs[0]
        opts = read_options(node, {"victims": list, "positions": list, "sizes": list, "axis": int, "drop": int},
                            {"axis": -1, "drop": 1})
        self.parts = Parts(node, list(node.inputs), out.shape, opts)
        self.drop = bool(opts["drop"])
        for i, t in enumerate(node.inputs):
            if t.dtype != out.dtype:
                raise node.fail(f"input {i} is {t.dtype.name} but the output is {out.dtype.name}")
            if out.dtype == np.int8 and _qparams(t) != _qparams(out):
                raise node.fail(f"int8 input {i} has scale/zero point {_qparams(t)}, the output {_qparams(out)}; "
                                "like CONCATENATION, Fetch does not requantize")
        need = self.parts.line_bytes(out.dtype.itemsize)
        self.scratch = node.request_scratch(need) if need else None

    def invoke(self, node: Node) -> None:
        out = node.output(0)
        p = self.parts
        rows = out.reshape(p.outer, -1)  # each outer index holds every part's block in order
        col = 0
        for kind, key, extent in p.order:
            width = extent * p.inner
            if kind == "ram":
                rows[:, col:col + width] = node.input(key).reshape(p.outer, width)
            elif p.outer == 1:
                node.storage.get(key, 0, rows[0, col:col + width].view(np.uint8))
            else:
                buf = node.scratch(self.scratch, out.dtype)[:p.line * width].reshape(p.line, width)
                step = p.line * width * out.dtype.itemsize
                for j, r in enumerate(range(0, p.outer, p.line)):
                    node.storage.get(key, j * step, buf.view(np.uint8).reshape(-1))
                    rows[r:r + p.line, col:col + width] = buf
            if kind == "victim" and self.drop:
                node.storage.drop(key)
            col += width
