"""Fold an explicit PAD into the convolution it feeds, so the padded tensor never exists.

PyTorch exports and Keras' MobileNetV2 pad explicitly, then convolve with VALID padding. When the PAD only
pads height and width with the input's zero point (0.0 for float, finite weights), the convolution computes
identical bytes reading the unpadded input with that padding: TFLM's convolutions skip taps outside the
input, which contributes exactly what multiplying a zero-point pixel does. If the amounts are what SAME
padding gives, the folded model is plain TFLite (``write_back=True`` folds only those); otherwise the
convolution keeps micronn-internal ``explicit_padding``, which micronn's kernels honour but .tflite cannot
hold. Pooling is never folded: max pooling ignores padded cells and average pooling does not count them.
"""

from __future__ import annotations

import copy

import numpy as np

from micronn.ir import Model, Padding

CONVS = ("CONV_2D", "DEPTHWISE_CONV_2D")


def _same_pads(in_size: int, out_size: int, stride: int, filt: int, dilation: int) -> tuple[int, int]:
    effective = (filt - 1) * dilation + 1
    total = max((out_size - 1) * stride + effective - in_size, 0)
    return total // 2, total - total // 2


def fold_pads(model: Model, write_back: bool = False) -> tuple[Model, list[int]]:
    """A copy of ``model`` with every foldable PAD removed; returns it and the removed operators' indices."""
    sg = model.main
    consumers = sg.consumers()
    folded: dict[int, tuple[int, tuple[int, int] | None]] = {}  # PAD op -> (conv op, explicit (top, left))
    for op in sg.operators:
        if op.op not in ("PAD", "PADV2") or len(op.outputs) != 1 or len(op.inputs) < 2 or min(op.inputs[:2]) < 0:
            continue  # malformed PADs stay, for their kernel to refuse
        x, y, p = sg.tensors[op.inputs[0]], sg.tensors[op.outputs[0]], sg.tensors[op.inputs[1]]
        users = consumers.get(y.index, [])
        if len(users) != 1 or y.index in sg.outputs or p.data is None or p.data.shape != (4, 2) or len(x.shape) != 4:
            continue
        conv = sg.operators[users[0]]
        pads = p.data.astype(np.int64)
        if (pads < 0).any() or tuple(y.shape) != tuple(int(d) for d in np.add(x.shape, pads.sum(axis=1))):
            continue  # only a PAD that does exactly what its output shape says folds
        if (conv.op not in CONVS or conv.custom or len(conv.inputs) < 2 or conv.inputs[0] != y.index
                or conv.inputs[1] < 0 or getattr(conv.options, "padding", None) != Padding.VALID
                or len(sg.tensors[conv.inputs[1]].shape) != 4 or len(conv.outputs) != 1
                or len(sg.tensors[conv.outputs[0]].shape) != 4):
            continue
        if pads[0].any() or pads[3].any() or x.quant != y.quant or x.dtype != y.dtype:
            continue
        if len(op.inputs) > 2 and op.inputs[2] >= 0:  # PADV2: the value must be the zero point
            v = sg.tensors[op.inputs[2]]
            if v.data is None or int(np.asarray(v.data).reshape(-1)[0]) != x.zero_point:
                continue
        w = sg.tensors[conv.inputs[1]]
        if x.dtype == np.float32 and (w.data is None or not np.isfinite(w.data).all()):
            continue  # 0 * inf is NaN where a skipped tap contributes nothing
        out = sg.tensors[conv.outputs[0]]
        o = conv.options
        want = (_same_pads(x.shape[1], out.shape[1], o.stride_h, w.shape[1], o.dilation_h_factor),
                _same_pads(x.shape[2], out.shape[2], o.stride_w, w.shape[2], o.dilation_w_factor))
        # SAME derives its padding from ceil(in / stride) output rows: it equals the PAD only if the output has them
        same_size = out.shape[1:3] == (-(-x.shape[1] // o.stride_h), -(-x.shape[2] // o.stride_w))
        if tuple(map(tuple, pads[1:3].tolist())) == want and same_size:
            folded[op.index] = conv.index, None
        elif not write_back:
            folded[op.index] = conv.index, (int(pads[1, 0]), int(pads[2, 0]))
    if not folded:
        return model, []
    into = {conv: (pad, explicit) for pad, (conv, explicit) in folded.items()}
    ops = []
    for op in sg.operators:
        if op.index in folded:
            continue
        new = copy.copy(op)
        if op.index in into:
            pad, explicit = into[op.index]
            new.inputs = [sg.operators[pad].inputs[0]] + list(op.inputs[1:])
            if explicit is None:
                new.options = type(op.options)(**{**vars(op.options), "padding": Padding.SAME})
            new.explicit_padding = explicit
        new.index = len(ops)
        ops.append(new)
    main = copy.copy(sg)
    main.operators = ops
    out_model = copy.copy(model)
    out_model.subgraphs = [main] + model.subgraphs[1:]
    out_model.validate()
    return out_model, sorted(folded)
