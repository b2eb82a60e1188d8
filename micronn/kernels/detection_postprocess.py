"""TFLite_Detection_PostProcess (TFLM custom op): decode SSD box predictions and keep the best with non-max suppression.

Inputs: box encodings ``[1, num_boxes, >= 4]``, class scores ``[1, num_boxes, num_classes]`` (or ``num_classes + 1``
with a background column first, which is skipped) and anchors ``[>= num_boxes, 4]``, all float32: the wheel does not
dequantize, it fails at invoke on uint8 or int8 encodings or scores and does not convert anchors of other types.
Outputs, float32: boxes ``[1, max_detections, 4]``, classes and scores ``[1, max_detections]`` and the detection
count ``[1]``. Options (a FlexBuffer map, as the converter writes them): ``max_detections``,
``max_classes_per_detection``, ``detections_per_class`` (default 100), ``use_regular_nms`` (default false),
``nms_score_threshold``, ``nms_iou_threshold``, ``num_classes`` and the four scales ``y_scale``, ``x_scale``,
``h_scale``, ``w_scale``.

What TFLM computes, established against the wheel:

* Decoding, per box, from the encoding ``(ty, tx, th, tw)`` and the anchor ``(y, x, h, w)`` (centre and size), the
  scales rounded to float32 first: the centre ``ty / y_scale * h + y`` (and its x twin) and the half size
  ``0.5 * exp(th / h_scale) * h`` (and its w twin) are each computed in double, with the C library's double ``exp``,
  and rounded to float32; the corners are then ``centre -/+ half`` in float32: ``(ymin, xmin, ymax, xmax)``. Only
  the first four numbers of an encoding are read.
* Every decoded box (whatever its scores) must have ``ymin < ymax`` and ``xmin < xmax``; a box that fails either
  comparison (NaN passes both) makes TFLM's invoke fail, and micronn raises an InvokeError.
* Single-class suppression over one score per box: the boxes scoring at least the threshold (float32
  ``>=``), sorted by decreasing score, equal scores in increasing box order (a stable sort); greedily, each box still
  active is selected and deactivates every later active box whose intersection over union with it is above the IoU
  threshold, until the limit is reached. IoU in float32: areas ``(ymax - ymin) * (xmax - xmin)``, intersection
  ``max(min(ymax) - max(ymin), 0) * max(min(xmax) - max(xmin), 0)``, IoU ``inter / (area_i + area_j - inter)``
  (a NaN never suppresses).
* Fast (class-agnostic) mode: each box's best class (the first strictly greater score wins, scanning the classes
  in order, so ties keep the lowest class and a NaN in the first class sticks) gives the box its score; one
  suppression pass over those scores, limited to ``max_detections``, gives the detections in order. TFLM writes
  only the slots it fills: the other slots of the three outputs keep whatever the arena held (micronn leaves them
  untouched too). ``max_classes_per_detection`` must be 1: above 1 the wheel reports classes and scores from
  memory it never wrote (and can crash).
* Regular (per-class) mode: for each class in order, a suppression pass over that class's scores limited to
  ``detections_per_class``; its detections are appended to the ones kept so far and the list is re-sorted by
  decreasing score (ties in list order) and cut to ``max_detections``. Every slot past the last detection is
  zeroed. ``max_classes_per_detection`` is not used.
* Classes are reported as float32 class numbers without the background column; the count as a float32.

Prepare refuses what TFLM refuses for the model itself (at prepare or at invoke), and what would make it run past
its buffers or into undefined results: outputs of another shape than the slots TFLM writes (it checks none), counts
out of range, an IoU threshold outside (0, 1] in float32, a NaN score threshold, and scales that are zero or not
finite (the decoding divides by them).
Scratch: TFLM's eleven buffers (sized by ``num_boxes``, the score count, ``max_detections`` and ``num_classes``),
requested only when the plan must be TFLM's own; micronn works in numpy temporaries.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable
from typing import Any

import numpy as np

from micronn.errors import InvokeError
from micronn.kernels._custom_options import read_options
from micronn.kernels.base import Kernel, Node, register
from micronn.tflite.reader import MAX_TENSOR_BYTES

INT32_MAX = 2**31 - 1
DEFAULT_DETECTIONS_PER_CLASS = 100  # what TFLM assumes when the option is missing
OPTION_KINDS: dict[str, type] = {
    "max_detections": int, "max_classes_per_detection": int, "detections_per_class": int, "use_regular_nms": bool,
    "nms_score_threshold": float, "nms_iou_threshold": float, "num_classes": int,
    "y_scale": float, "x_scale": float, "h_scale": float, "w_scale": float,
}
ROW_CACHE_BYTES = 1 << 26  # rows of "suppressed by" kept per invoke (one byte per box each)
OPTION_DEFAULTS: dict[str, Any] = {"detections_per_class": DEFAULT_DETECTIONS_PER_CLASS, "use_regular_nms": False}


def _load_exp() -> Callable[[float], float] | None:
    """The C library's double ``exp`` (the one TFLM calls), or None where there is none."""
    for name in ("libm.so.6", None):
        try:
            fn = ctypes.CDLL(name or ctypes.util.find_library("m")).exp
        except (OSError, AttributeError, TypeError):  # pragma: no cover - another platform's C library
            continue
        fn.restype, fn.argtypes = ctypes.c_double, [ctypes.c_double]
        return fn
    return None  # pragma: no cover


_EXP = _load_exp()


def c_exp(x: np.ndarray) -> np.ndarray:
    """Double ``exp`` of every element as the C library computes it (one call per distinct value)."""
    if _EXP is None or x.size == 0:  # pragma: no cover - no C library: numpy's exp is the best guess
        with np.errstate(over="ignore"):
            return np.exp(x)
    values, inverse = np.unique(x, return_inverse=True)  # NaNs collapse into one: exp(NaN) is NaN either way
    fn = _EXP
    results = np.fromiter((fn(v) for v in values.tolist()), dtype=np.float64, count=len(values))
    return results[inverse].reshape(x.shape)


def decode_boxes(encodings: np.ndarray, anchors: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """Corners ``(ymin, xmin, ymax, xmax)`` float32 of boxes encoded relative to centre-size anchors."""
    e = encodings.astype(np.float64)
    a = anchors.astype(np.float64)
    s = scales.astype(np.float64)
    with np.errstate(all="ignore"):
        yc = (e[:, 0] / s[0] * a[:, 2] + a[:, 0]).astype(np.float32)
        xc = (e[:, 1] / s[1] * a[:, 3] + a[:, 1]).astype(np.float32)
        half_h = (0.5 * c_exp(e[:, 2] / s[2]) * a[:, 2]).astype(np.float32)
        half_w = (0.5 * c_exp(e[:, 3] / s[3]) * a[:, 3]).astype(np.float32)
        return np.stack([yc - half_h, xc - half_w, yc + half_h, xc + half_w], axis=1)


class Suppressor:
    """Greedy single-class non-max suppression over one invoke's decoded boxes.

    Which boxes a selected box suppresses does not depend on the class (IoU is symmetric), so each selected box's
    row of ``IoU > threshold`` over all boxes is computed once per invoke and reused by every class.
    """

    def __init__(self, boxes: np.ndarray, score_threshold: np.float32, iou_threshold: np.float32):
        self.boxes, self.score_threshold, self.iou_threshold = boxes, score_threshold, iou_threshold
        with np.errstate(all="ignore"):
            self.areas = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
        self.rows: dict[int, np.ndarray] = {}

    def suppressed_by(self, k: int) -> np.ndarray:
        """Which boxes have an IoU with box ``k`` above the threshold (NaN: never)."""
        row = self.rows.get(k)
        if row is None:
            b, o = self.boxes[k], self.boxes
            with np.errstate(all="ignore"):
                height = np.maximum(np.minimum(b[2], o[:, 2]) - np.maximum(b[0], o[:, 0]), np.float32(0))
                width = np.maximum(np.minimum(b[3], o[:, 3]) - np.maximum(b[1], o[:, 1]), np.float32(0))
                inter = height * width
                row = inter / (self.areas[k] + self.areas - inter) > self.iou_threshold
            if (len(self.rows) + 1) * len(row) <= ROW_CACHE_BYTES:
                self.rows[k] = row
        return row

    def __call__(self, scores: np.ndarray, limit: int) -> np.ndarray:
        """The boxes selected over ``scores`` (at most ``limit``), best first."""
        kept = np.flatnonzero(scores >= self.score_threshold)
        order = kept[np.argsort(-scores[kept], kind="stable")]  # ties in box order
        active = np.ones(len(order), dtype=bool)
        selected: list[int] = []
        i = 0
        while i < len(order) and len(selected) < limit:
            selected.append(i)
            later = active[i + 1:]
            later &= ~self.suppressed_by(int(order[i]))[order[i + 1:]]
            following = np.flatnonzero(later)
            if following.size == 0:
                break
            i += 1 + int(following[0])
        return order[np.asarray(selected, dtype=np.int64)]


@register
class DetectionPostProcess(Kernel):
    op = "TFLite_Detection_PostProcess"
    dtypes = frozenset({"float32"})

    def prepare(self, node: Node) -> None:
        if len(node.inputs) != 3 or any(t is None for t in node.inputs) or len(node.outputs) != 4:
            raise node.fail("takes three inputs (box encodings, class predictions, anchors) and gives four outputs "
                            "(boxes, classes, scores, number of detections)")
        enc, cls, anc = node.inputs
        for what, t in [("box encodings", enc), ("class predictions", cls), ("anchors", anc),
                        *[(f"output {i}", t) for i, t in enumerate(node.outputs)]]:
            if t.dtype != np.float32:
                raise node.fail(f"{what} must be float32, got {t.dtype.name} (TFLM's kernel computes in float only)")
        o = read_options(node, OPTION_KINDS, OPTION_DEFAULTS)
        for name in ("max_detections", "max_classes_per_detection", "detections_per_class", "num_classes"):
            if not -INT32_MAX - 1 <= o[name] <= INT32_MAX:
                raise node.fail(f"{name} {o[name]} does not fit TFLM's int32")
        self.regular = bool(o["use_regular_nms"])
        self.max_detections, self.per_class = o["max_detections"], o["detections_per_class"]
        nc = self.num_classes = o["num_classes"]
        if self.max_detections < 1:
            raise node.fail(f"max_detections must be at least 1, got {self.max_detections}")
        if nc < 1:
            raise node.fail(f"num_classes must be at least 1, got {nc}")
        if self.regular and self.per_class < 1:
            raise node.fail(f"detections_per_class must be at least 1 with regular NMS, got {self.per_class}")
        if not self.regular and o["max_classes_per_detection"] != 1:
            raise node.fail(f"max_classes_per_detection must be 1 with fast NMS, got {o['max_classes_per_detection']} "
                            "(TFLM rejects 0 and, above 1, reports classes and scores from memory it never wrote)")
        with np.errstate(over="ignore", invalid="ignore"):  # as C rounds the options' doubles to float
            self.score_threshold = np.float32(o["nms_score_threshold"])
            self.iou_threshold = np.float32(o["nms_iou_threshold"])
            self.scales = np.array([o["y_scale"], o["x_scale"], o["h_scale"], o["w_scale"]], dtype=np.float32)
        if np.isnan(self.score_threshold):
            raise node.fail("nms_score_threshold is NaN: no score would ever reach it")
        if not np.float32(0) < self.iou_threshold <= np.float32(1):
            raise node.fail(f"nms_iou_threshold {o['nms_iou_threshold']} must lie in (0, 1] as a float32 (TFLM fails "
                            "otherwise)")
        if not np.all(np.isfinite(self.scales)) or np.any(self.scales == 0):
            raise node.fail(f"the scales (y, x, h, w) {self.scales.tolist()} must be finite and nonzero as float32 "
                            "(the decoding divides by them)")

        if len(enc.shape) != 3 or enc.shape[0] != 1 or enc.shape[2] < 4:
            raise node.fail(f"box encodings must be [1, num_boxes, >= 4], got {list(enc.shape)}")
        nb = self.num_boxes = int(enc.shape[1])
        self.encoding_size = int(enc.shape[2])
        if len(cls.shape) != 3 or cls.shape[0] != 1 or cls.shape[1] != nb:
            raise node.fail(f"class predictions must be [1, {nb}, classes], got {list(cls.shape)}")
        ncb = int(cls.shape[2])
        if ncb - nc not in (0, 1):
            raise node.fail(f"class predictions hold {ncb} scores per box but num_classes is {nc}: there must be "
                            f"{nc}, or {nc + 1} with a background column first")
        self.label_offset = ncb - nc
        if len(anc.shape) != 2 or anc.shape[1] != 4 or anc.shape[0] < nb:
            raise node.fail(f"anchors must be [>= {nb}, 4] (y, x, h, w of each box), got {list(anc.shape)}")
        md = self.max_detections
        for i, (t, shape) in enumerate(zip(node.outputs, [(1, md, 4), (1, md), (1, md), (1,)], strict=True)):
            if tuple(t.shape) != shape:
                raise node.fail(f"output {i} has shape {list(t.shape)}, expected {list(shape)} (TFLM does not resize "
                                f"its outputs: it writes max_detections = {md} slots and one count)")
        sizes = [nb, 16 * nb, 4 * nb * ncb, 4 * nb, 4 * nb, 4 * nb * md, 4 * nb * md, 4 * nb, 4 * nb * md,
                 4 * nb * max(md, nc), 4 * nb * min(nb, md)]  # TFLM's scratch buffers, in its order
        if sum(sizes) > MAX_TENSOR_BYTES:
            raise node.fail(f"TFLM's scratch buffers would take {sum(sizes)} bytes ({nb} boxes, max_detections {md}, "
                            f"num_classes {nc}), beyond any microcontroller")
        if not node.compact_scratch:
            for n in sizes:
                node.request_scratch(n)

    def invoke(self, node: Node) -> None:
        nb = self.num_boxes
        encodings = node.input(0).reshape(nb, self.encoding_size)[:, :4]
        boxes = decode_boxes(encodings, node.input(2).reshape(-1, 4)[:nb], self.scales)
        with np.errstate(invalid="ignore"):
            bad = np.flatnonzero((boxes[:, 0] >= boxes[:, 2]) | (boxes[:, 1] >= boxes[:, 3]))
        if bad.size:
            k = int(bad[0])
            raise InvokeError(f"operator {node.index} ({node.op.op}): decoded box {k} {boxes[k].tolist()} is empty "
                              "or inverted (TFLM fails unless ymin < ymax and xmin < xmax for every box)")
        scores = node.input(1).reshape(nb, self.label_offset + self.num_classes)[:, self.label_offset:]
        suppress = Suppressor(boxes, self.score_threshold, self.iou_threshold)
        if self.regular:
            chosen, classes, found = self.per_class_detections(suppress, scores)
        else:
            classes, best = best_classes(scores)
            chosen = suppress(best, self.max_detections)
            classes, found = classes[chosen], best[chosen]
        n = len(chosen)
        out_boxes = node.output(0).reshape(-1, 4)
        out_classes, out_scores = node.output(1).reshape(-1), node.output(2).reshape(-1)
        out_boxes[:n], out_classes[:n], out_scores[:n] = boxes[chosen], classes, found
        if self.regular:  # fast NMS leaves the unused slots as they were
            out_boxes[n:], out_classes[n:], out_scores[n:] = 0, 0, 0
        node.output(3).reshape(-1)[0] = n

    def per_class_detections(self, suppress: Suppressor,
                             scores: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Regular NMS: (boxes, classes, scores) of the detections, best first.

        TFLM appends each class's selection to the list kept so far, re-sorts it stably and cuts it to
        max_detections: the same as one stable sort of all classes' selections, in class order, cut once.
        """
        passing = scores >= self.score_threshold
        counts = np.count_nonzero(passing, axis=0)
        lone = np.flatnonzero(counts == 1)  # a class with one candidate selects it
        boxes = [passing[:, lone].argmax(axis=0) if lone.size else lone]
        classes, ranks = [lone], [np.zeros(len(lone), dtype=np.int64)]
        for c in np.flatnonzero(counts > 1).tolist():
            chosen = suppress(np.ascontiguousarray(scores[:, c]), self.per_class)
            boxes.append(chosen)
            classes.append(np.full(len(chosen), c))
            ranks.append(np.arange(len(chosen)))
        box, cls, rank = (np.concatenate(x).astype(np.int64) for x in (boxes, classes, ranks))
        listed = np.lexsort((rank, cls))  # class by class, each in its selection order
        found = scores[box[listed], cls[listed]]
        best = listed[np.argsort(-found, kind="stable")[:self.max_detections]]
        return box[best], cls[best].astype(np.float32), scores[box[best], cls[best]]


def best_classes(scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per box, the class TFLM's scan picks (a later class replaces only with a strictly greater score) and its score.

    Scanning that way, a NaN in the first class is never replaced and a later NaN never wins: the first maximum of
    the scores with NaNs read as -inf, unless the first score is NaN.
    """
    if scores.shape[0] == 0:
        return np.zeros(0, dtype=np.float32), np.zeros(0, dtype=np.float32)
    which = np.where(np.isnan(scores), -np.inf, scores).argmax(axis=1)
    which[np.isnan(scores[:, 0])] = 0
    return which.astype(np.float32), scores[np.arange(len(scores)), which]
