"""PAD and PADV2: surround a tensor with a constant, like TFLM's reference kernel.

The pad value is PADV2's scalar third input when present, else 0, except for int8 PAD where it is
the output's zero point (the quantized 0). TFLM needs the paddings in the model (a constant tensor),
checks the output shape against them, and reads them as int32 whatever their declared type; micronn
does the same, so an int64 paddings tensor behaves exactly as it does in TFLM (almost always a
shape mismatch at prepare). TFLM's kernel walks the output once and copies the next input element
into every position outside the padding, which also defines what negative paddings do.
"""

from __future__ import annotations

import numpy as np

from micronn.kernels.base import Kernel, Node, register

MAX_DIMS = 5


def _paddings_as_tflm_reads_them(node: Node, rank: int) -> np.ndarray:
    """The (rank, 2) int32 paddings TFLM uses: the tensor's first 2 * rank int32 words."""
    t = node.inputs[1]
    if t is None or not t.is_constant:
        raise node.fail("the paddings must be a constant tensor (TFLM sizes the output from them at prepare)")
    if t.dtype not in (np.int32, np.int64):
        raise node.fail(f"paddings must be int32 (or int64), got {t.dtype.name}")
    raw = np.ascontiguousarray(node.input(1)).reshape(-1)
    if raw.size != 2 * rank:
        raise node.fail(f"paddings have {raw.size} values, expected {2 * rank} for a {rank}-D output")
    return raw.view(np.int32)[: 2 * rank].astype(np.int64).reshape(rank, 2)


@register
class Pad(Kernel):
    """TFLM PAD for float32, int8, int16 and int32."""

    op = "PAD"
    reads_input_first = True
    dtypes = frozenset({"float32", "int8", "int16", "int32"})

    def prepare(self, node: Node) -> None:
        if len(node.inputs) not in (2, 3) or len(node.outputs) != 1:
            raise node.fail("expects 2 or 3 inputs and 1 output")
        inp, out = node.inputs[0], node.outputs[0]
        value = node.inputs[2] if len(node.inputs) == 3 else None
        if inp is None:
            raise node.fail("the input is required")
        if inp.dtype != out.dtype:
            raise node.fail(f"input is {inp.dtype.name} but output is {out.dtype.name}")
        if len(inp.shape) > MAX_DIMS:
            raise node.fail(f"input has {len(inp.shape)} dimensions; TFLM pads at most {MAX_DIMS}")
        if len(inp.shape) != len(out.shape):
            raise node.fail(f"input rank {len(inp.shape)} differs from output rank {len(out.shape)}")
        if value is not None:
            if value.dtype != inp.dtype:
                raise node.fail(f"the pad value is {value.dtype.name}, the input {inp.dtype.name}")
            if int(np.prod(value.shape)) != 1:
                raise node.fail(f"the pad value must be a scalar, got shape {value.shape}")
        pads = _paddings_as_tflm_reads_them(node, len(out.shape))
        expected = tuple(int(d + a + b) for d, (a, b) in zip(inp.shape, pads))
        if expected != tuple(out.shape):
            raise node.fail(f"input {inp.shape} padded by {pads.tolist()} (read as int32, like TFLM) gives "
                            f"{expected}, but the output is {out.shape}")
        self.default = np.zeros((), out.dtype)
        if out.dtype == np.int8:
            if value is None:
                if not -128 <= out.zero_point <= 127:
                    raise node.fail(f"the output zero point {out.zero_point} is outside the int8 range")
                self.default = np.array(out.zero_point, np.int64).astype(np.int8)
            elif (value.zero_point, np.float32(value.scale)) != (out.zero_point, np.float32(out.scale)):
                raise node.fail("the int8 pad value must have the output's scale and zero point")
        self.has_value = value is not None
        # Where the input lands: a block of slices when no padding is negative, else TFLM's sequential fill.
        self.block = None
        self.mask = None
        if (pads >= 0).all():
            self.block = tuple(slice(int(a), int(a) + d) for d, (a, _) in zip(inp.shape, pads))
        else:
            inside = [(np.arange(n) >= a) & (np.arange(n) < n - b) for n, (a, b) in zip(out.shape, pads)]
            self.mask = np.ones(out.shape, bool)
            for k, m in enumerate(inside):
                self.mask &= m.reshape([-1 if j == k else 1 for j in range(len(out.shape))])
            self.count = int(self.mask.sum())

    def invoke(self, node: Node) -> None:
        out = node.output(0)
        x = np.array(node.input(0))  # read the input before writing: the planner may stream out over it
        out[...] = node.input(2).reshape(-1)[0] if self.has_value else self.default
        if self.block is not None:
            out[self.block] = x
        else:
            out[self.mask] = x.reshape(-1)[: self.count]


@register
class PadV2(Pad):
    """TFLM PADV2: the same kernel as PAD (TFLM registers one for both); the pad value is the third input."""

    op = "PADV2"
