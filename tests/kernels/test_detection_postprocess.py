"""TFLite_Detection_PostProcess against the TFLM wheel, byte for byte: box decoding, fast and regular NMS, ties,
thresholds, IoU edge cases, unused slots, TFLM's arena, and the models micronn refuses."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import InvokeError, PrepareError, UnsupportedError
from micronn.kernels._custom_options import custom_options
from micronn.kernels.detection_postprocess import decode_boxes
from micronn.testing import (
    T,
    TflmError,
    assert_identical,
    assert_same_as_tflm,
    op_model,
    random_inputs,
    run_micronn,
    run_tflm,
    tflm_arena,
)

OP = "TFLite_Detection_PostProcess"
F32 = np.float32


def options(**kw: Any) -> dict[str, Any]:
    o = dict(max_detections=5, max_classes_per_detection=1, detections_per_class=100, use_regular_nms=False,
             nms_score_threshold=0.3, nms_iou_threshold=0.5, num_classes=3, y_scale=10.0, x_scale=10.0, h_scale=5.0,
             w_scale=5.0)
    o.update(kw)
    return {k: v for k, v in o.items() if v is not None}  # None: leave the option out


def dp_model(anchors: np.ndarray | None, num_boxes: int, num_scores: int, opts: dict[str, Any], *,
             encoding_size: int = 4, slots: int | None = None, types: tuple[str, str, str] = ("float32",) * 3,
             outputs: list[T] | None = None, raw_options: bytes | None = None) -> bytes:
    """A one-operator model; ``anchors`` None makes them a model input (after the encodings and scores)."""
    s = opts.get("max_detections", 5) if slots is None else slots
    anchor_shape = (num_boxes, 4) if anchors is None else anchors.shape
    ins = [T((1, num_boxes, encoding_size), types[0]), T((1, num_boxes, num_scores), types[1]),
           T(anchor_shape, types[2], data=anchors)]
    outs = outputs or [T((1, s, 4), "float32"), T((1, s), "float32"), T((1, s), "float32"), T((1,), "float32")]
    return op_model(OP, ins, outs, custom_options=raw_options if raw_options is not None else custom_options(**opts))


def random_anchors(rng: np.random.Generator, n: int, coarse: bool = False) -> np.ndarray:
    a = np.stack([rng.random(n), rng.random(n), rng.random(n) * 0.5 + 0.05, rng.random(n) * 0.5 + 0.05], axis=1)
    if coarse:  # few distinct anchors: many identical or heavily overlapping boxes
        a = np.round(a * 4) / 4
        a[:, 2:] = np.maximum(a[:, 2:], 0.25)
    return a.astype(F32)


def grid_anchors(n: int, size: float = 0.5) -> np.ndarray:
    """Disjoint boxes (2 apart along y): nothing suppresses anything."""
    a = np.zeros((n, 4), F32)
    a[:, 0], a[:, 1], a[:, 2:] = np.arange(n) * 2.0, 1.0, size
    return a


def check(model: bytes, inputs: list[np.ndarray], regular: bool) -> list[np.ndarray]:
    """micronn's outputs are TFLM's: all of them with regular NMS, the count and the filled slots with fast NMS
    (TFLM leaves the other slots as they were). Returns TFLM's outputs."""
    expected, actual = run_tflm(model, inputs), run_micronn(model, inputs)
    n = int(expected[3][0])
    assert_identical(actual[3], expected[3], "number of detections")
    for i, what in enumerate(["boxes", "classes", "scores"]):
        e, a = (expected[i], actual[i]) if regular else (expected[i][0, :n], actual[i][0, :n])
        assert_identical(a, e, what)
    return expected


def scores_input(rng: np.random.Generator, n: int, columns: int, levels: int | None = None) -> np.ndarray:
    if levels is None:
        return rng.random((1, n, columns)).astype(F32)
    return rng.choice(np.linspace(0.1, 0.9, levels).astype(F32), (1, n, columns))


# ---- matches TFLM ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("regular", [False, True], ids=["fast", "regular"])
@pytest.mark.parametrize("background", [1, 0], ids=["background", "no-background"])
@pytest.mark.parametrize("seed", [0, 1])
def test_random_matches_tflm(regular: bool, background: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    nb, nc = 40, 4
    opts = options(use_regular_nms=regular, num_classes=nc, max_detections=8, detections_per_class=4,
                   nms_score_threshold=0.2, nms_iou_threshold=0.4)
    model = dp_model(random_anchors(rng, nb), nb, nc + background, opts)
    for _ in range(2):
        enc = (rng.standard_normal((1, nb, 4)) * 2).astype(F32)
        check(model, [enc, scores_input(rng, nb, nc + background)], regular)


@pytest.mark.parametrize("regular", [False, True], ids=["fast", "regular"])
@pytest.mark.parametrize("seed", range(4))
def test_tied_scores(regular: bool, seed: int) -> None:
    """Equal scores keep box order (a stable sort) within a class and class order across classes (regular NMS);
    the best class of a box is the first of its equal maxima. Few distinct anchors make overlaps common."""
    rng = np.random.default_rng(10 + seed)
    nb, nc = 37, 5
    opts = options(use_regular_nms=regular, num_classes=nc, max_detections=int(rng.integers(3, 12)),
                   detections_per_class=int(rng.integers(1, 9)), nms_score_threshold=0.1,
                   nms_iou_threshold=float(rng.choice([0.3, 0.5, 1.0])), y_scale=1.0, x_scale=1.0)
    model = dp_model(random_anchors(rng, nb, coarse=True), nb, nc + 1, opts)
    enc = (rng.standard_normal((1, nb, 4)) * rng.choice([0.0, 0.3])).astype(F32)
    check(model, [enc, scores_input(rng, nb, nc + 1, levels=int(rng.integers(1, 4)))], regular)


@pytest.mark.parametrize("regular", [False, True], ids=["fast", "regular"])
def test_tie_order_is_box_order(regular: bool) -> None:
    nb = 24
    scores = np.zeros((1, nb, 2), F32)
    scores[0, :, 1] = np.where(np.arange(nb) % 3 == 0, 0.5, 0.7)
    model = dp_model(grid_anchors(nb), nb, 2, options(use_regular_nms=regular, num_classes=1, max_detections=nb,
                                                       y_scale=1.0, x_scale=1.0, h_scale=1.0, w_scale=1.0))
    out = check(model, [np.zeros((1, nb, 4), F32), scores], regular)
    order = np.round((out[0][0, :, 0] + 0.25) / 2).astype(int)  # grid boxes: ymin = 2 * index - 0.25
    assert order.tolist() == [i for i in range(nb) if i % 3] + [i for i in range(nb) if i % 3 == 0]


@pytest.mark.parametrize("regular", [False, True], ids=["fast", "regular"])
def test_decoding_bit_exact(regular: bool) -> None:
    """Every box is output (IoU threshold 1, distinct scores): the decoded corners, in double then float32, with
    scales that are not float32 numbers (rounded first) and encodings from tiny to exp-overflowing."""
    rng = np.random.default_rng(3)
    nb = 200
    enc = (rng.standard_normal((1, nb, 4)) * 3).astype(F32)
    enc[0, :8, 2:] = [[-20, -900], [950, 15], [1e-30, -1e-30], [0, 0], [50, 50], [-18, 0], [3, -4], [0.5, 0.25]]
    scores = np.zeros((1, nb, 2), F32)
    scores[0, :, 1] = rng.permutation(np.linspace(0.05, 0.95, nb)).astype(F32)
    anchors = random_anchors(rng, nb)
    anchors[:3] = [[1e3, -1e3, 1e2, 1e4], [0, 0, 1e-20, 1e20], [-3, 7, 2, 0.5]]
    opts = options(use_regular_nms=regular, num_classes=1, max_detections=nb, detections_per_class=nb,
                   nms_iou_threshold=1.0, nms_score_threshold=0.0, y_scale=10.1, x_scale=9.7, h_scale=5.3,
                   w_scale=-4.9)
    out = check(dp_model(anchors, nb, 2, opts), [enc, scores], regular)
    assert out[3][0] == nb


@pytest.mark.parametrize("regular", [False, True], ids=["fast", "regular"])
@pytest.mark.parametrize("threshold,expected", [(0.7, 3), (float(F32(0.7)), 3), (0.70000001, 3), (0.70000004, 1),
                                                (0.9, 1), (0.95, 0), (0.1, 5), (-np.inf, 6), (np.inf, 0)])
def test_score_threshold(regular: bool, threshold: float, expected: int) -> None:
    """``score >= threshold`` in float32 (the double option rounds to float first): none, one or many pass."""
    scores = np.zeros((1, 6, 2), F32)
    scores[0, :, 1] = [0.7, 0.3, 0.9, -np.inf, 0.7, 0.5]
    model = dp_model(grid_anchors(6), 6, 2, options(use_regular_nms=regular, num_classes=1, max_detections=6,
                                                     nms_score_threshold=threshold))
    out = check(model, [np.zeros((1, 6, 4), F32), scores], regular)
    assert out[3][0] == expected


@pytest.mark.parametrize("regular", [False, True], ids=["fast", "regular"])
def test_special_scores(regular: bool) -> None:
    """NaN never passes the threshold; a NaN first class sticks as a box's best (fast NMS); inf and -0.0 sort."""
    rng = np.random.default_rng(4)
    nb, nc = 30, 4
    values = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, 0.7, 1.0], F32)
    model = dp_model(random_anchors(rng, nb), nb, nc, options(use_regular_nms=regular, num_classes=nc,
                                                               max_detections=10, detections_per_class=5,
                                                               nms_score_threshold=-1.0))
    for _ in range(3):
        check(model, [rng.standard_normal((1, nb, 4)).astype(F32), rng.choice(values, (1, nb, nc))], regular)


def test_best_class_of_a_box() -> None:
    """Fast NMS: a box's class is its first strictly greatest score; a NaN in the first class is never replaced."""
    scores = np.array([[[0.1, 0.5, 0.5, 0.2], [0.1, np.nan, 0.9, 0.9], [0.1, 0.3, np.nan, 0.4],
                        [0.1, 0.6, 0.6, 0.6]]], F32)
    model = dp_model(grid_anchors(4), 4, 4, options(max_detections=4, nms_score_threshold=0.0))
    out = check(model, [np.zeros((1, 4, 4), F32), scores], False)
    assert out[3][0] == 3 and out[1][0, :3].tolist() == [0, 0, 2]  # boxes 3 (0.6), 0 (0.5), 2 (0.4); box 1 NaN


@pytest.mark.parametrize("regular", [False, True], ids=["fast", "regular"])
def test_iou_edge_cases(regular: bool) -> None:
    """IoU exactly at the threshold does not suppress (``>``); identical boxes at threshold 1 do not either; boxes
    whose area underflows to 0 (IoU 0 or 0/0) and infinite boxes (exp overflow: inf/inf) never suppress; NaN boxes
    neither; disjoint boxes have IoU 0."""
    anchors = np.array([
        [0.5, 0.5, 1.0, 1.0], [0.5, 0.25, 1.0, 0.5],  # IoU exactly 0.5
        [1e-25, 1e-25, 1e-25, 1e-25], [1e-25, 1e-25, 1e-25, 1e-25],  # areas underflow to 0: IoU 0/0 (0 with box 0)
        [9.0, 9.0, 1.0, 1.0], [9.0, 9.0, 1.0, 1.0],  # identical (IoU 1)
        [20.0, 20.0, 1.0, 1.0], [20.0, 20.0, 1.0, 1.0],  # encodings make them infinite or NaN
        [30.0, 30.0, 1.0, 1.0], [30.5, 30.0, 1.0, 1.0],  # IoU 1/3
    ], F32)
    nb = len(anchors)
    enc = np.zeros((1, nb, 4), F32)
    enc[0, 6] = [0, 0, 400, 400]  # half sizes overflow to inf
    enc[0, 7] = [np.nan, 0, 0, 0]
    scores = np.zeros((1, nb, 2), F32)
    scores[0, :, 1] = np.linspace(0.9, 0.5, nb)
    for iou in (0.5, 1.0, 0.3, float(np.nextafter(F32(0.5), F32(0)))):
        model = dp_model(anchors, nb, 2, options(use_regular_nms=regular, num_classes=1, max_detections=nb,
                                                 nms_score_threshold=0.0, nms_iou_threshold=iou, y_scale=1.0,
                                                 x_scale=1.0, h_scale=1.0, w_scale=1.0))
        check(model, [enc, scores], regular)


@pytest.mark.parametrize("regular", [False, True], ids=["fast", "regular"])
def test_iou_at_the_threshold(regular: bool) -> None:
    """Random overlapping pairs with the IoU threshold at their float32 IoU (kept) and one float below (suppressed):
    the IoU's float32 arithmetic and order of operations decide, and micronn decides as TFLM does."""
    rng = np.random.default_rng(11)
    tried = 0
    for _ in range(8):
        anchors = (rng.random((2, 4)) + 0.1).astype(F32)
        anchors[1, :2] = anchors[0, :2] + (rng.random(2).astype(F32) - F32(0.5)) * F32(0.3)
        boxes = decode_boxes(np.zeros((2, 4), F32), anchors, np.ones(4, F32))
        (y0, x0, y1, x1), (v0, u0, v1, u1) = boxes
        area0, area1 = (y1 - y0) * (x1 - x0), (v1 - v0) * (u1 - u0)
        inter = max(min(y1, v1) - max(y0, v0), F32(0)) * max(min(x1, u1) - max(x0, u0), F32(0))
        iou = inter / (area0 + area1 - inter)
        if not 0 < iou <= 1 or np.nextafter(iou, F32(0)) <= 0:
            continue
        counts = []
        for threshold in (iou, np.nextafter(iou, F32(0))):
            model = dp_model(anchors, 2, 2, options(use_regular_nms=regular, num_classes=1, max_detections=2,
                                                    nms_score_threshold=0.0, nms_iou_threshold=float(threshold),
                                                    y_scale=1.0, x_scale=1.0, h_scale=1.0, w_scale=1.0))
            counts.append(int(check(model, [np.zeros((1, 2, 4), F32), np.array([[[0, 0.9], [0, 0.8]]], F32)],
                                    regular)[3][0]))
        assert counts == [2, 1]
        tried += 1
    assert tried >= 6


@pytest.mark.parametrize("regular", [False, True], ids=["fast", "regular"])
@pytest.mark.parametrize("nb", [0, 1])
def test_no_or_one_box(regular: bool, nb: int) -> None:
    model = dp_model(grid_anchors(nb), nb, 3, options(use_regular_nms=regular, num_classes=2))
    out = check(model, [np.zeros((1, nb, 4), F32), np.full((1, nb, 3), 0.8, F32)], regular)
    assert out[3][0] == nb * (2 if regular else 1)  # regular NMS: the box once per class


def test_regular_zeroes_unused_slots() -> None:
    scores = np.zeros((1, 6, 3), F32)
    scores[0, 1, 2], scores[0, 4, 1] = 0.8, 0.6
    model = dp_model(grid_anchors(6), 6, 3, options(use_regular_nms=True, num_classes=2, max_detections=5))
    out = assert_same_as_tflm(model, [np.zeros((1, 6, 4), F32), scores])[0]
    assert out[3][0] == 2 and not out[0][0, 2:].any() and not out[2][0, 2:].any()


def test_fast_leaves_unused_slots() -> None:
    """Fast NMS writes only the slots it fills: after a run with fewer detections, TFLM's and micronn's other slots
    still hold the previous run's."""
    from tflite_micro.python.tflite_micro import runtime

    model = dp_model(grid_anchors(6), 6, 3, options(num_classes=2, max_detections=4))
    many, few = np.full((1, 6, 3), 0.9, F32), np.zeros((1, 6, 3), F32)
    few[0, 5, 1] = 0.5
    tflm = runtime.Interpreter.from_bytes(model, arena_size=1 << 20)
    mine = Interpreter(model)
    for scores in (many, few):
        for i, x in enumerate([np.zeros((1, 6, 4), F32), scores]):
            tflm.set_input(x, i)
            mine.set_input(x, i)
        tflm.invoke()
        mine.invoke()
        for i in range(4):
            assert_identical(mine.get_output(i), tflm.get_output(i), f"output {i}")
    assert mine.get_output(3)[0] == 1 and mine.get_output(2)[0, 1] == F32(0.9)


@pytest.mark.parametrize("per_class,default", [(2, False), (None, True), (1, False)])
def test_detections_per_class(per_class: int | None, default: bool) -> None:
    """Regular NMS keeps at most detections_per_class boxes of each class (100 when the option is missing)."""
    nb = 120 if default else 12
    scores = np.full((1, nb, 3), 0.5, F32)
    model = dp_model(grid_anchors(nb), nb, 3, options(use_regular_nms=True, num_classes=2, max_detections=nb,
                                                       detections_per_class=per_class))
    out = check(model, [np.zeros((1, nb, 4), F32), scores], True)
    assert out[3][0] == min(nb, 2 * (100 if default else per_class))


@pytest.mark.parametrize("max_classes", [0, 1, 3])
def test_regular_ignores_max_classes_per_detection(max_classes: int) -> None:
    rng = np.random.default_rng(6)
    model = dp_model(random_anchors(rng, 20), 20, 4, options(use_regular_nms=True,
                                                              max_classes_per_detection=max_classes))
    check(model, [rng.standard_normal((1, 20, 4)).astype(F32), scores_input(rng, 20, 4)], True)


@pytest.mark.parametrize("regular", [False, True], ids=["fast", "regular"])
def test_wide_encodings_extra_anchors_and_anchor_input(regular: bool) -> None:
    """Only the first 4 numbers of an encoding count; anchors may have more rows than boxes, or be a model input."""
    rng = np.random.default_rng(7)
    nb = 16
    anchors = random_anchors(rng, nb + 5)
    opts = options(use_regular_nms=regular)
    enc = rng.standard_normal((1, nb, 7)).astype(F32)
    check(dp_model(anchors, nb, 4, opts, encoding_size=7), [enc, scores_input(rng, nb, 4)], regular)
    check(dp_model(None, nb, 4, opts), [enc[:, :, :4].copy(), scores_input(rng, nb, 4), anchors[:nb]], regular)


def test_realistic_ssd_size() -> None:
    """An SSD-MobileNet-like head: 1917 boxes, 90 classes plus background, threshold 1e-8."""
    rng = np.random.default_rng(8)
    nb, nc = 1917, 90
    enc = rng.standard_normal((1, nb, 4)).astype(F32)
    scores = (1 / (1 + np.exp(-3 * rng.standard_normal((1, nb, nc + 1))))).astype(F32)
    for regular in (False, True):
        opts = options(use_regular_nms=regular, num_classes=nc, max_detections=10, nms_score_threshold=1e-8,
                       nms_iou_threshold=0.6)
        check(dp_model(random_anchors(rng, nb), nb, nc + 1, opts), [enc, scores], regular)


@pytest.mark.parametrize("h", [-0.5, 0.0, -0.0, 1e-45])
def test_empty_or_inverted_box_fails_at_invoke(h: float) -> None:
    """Any decoded box without ymin < ymax (here its anchor height), whatever its scores, fails TFLM's invoke."""
    anchors = grid_anchors(4)
    anchors[2, 2] = h
    model = dp_model(anchors, 4, 2, options(num_classes=1))
    inputs = [np.zeros((1, 4, 4), F32), np.zeros((1, 4, 2), F32)]
    with pytest.raises(TflmError, match="ValidateBoxes"):
        run_tflm(model, inputs)
    with pytest.raises(InvokeError, match="decoded box 2"):
        run_micronn(model, inputs)


@pytest.mark.parametrize("regular", [False, True], ids=["fast", "regular"])
def test_head_equals_tflm(regular: bool) -> None:
    """TFLM's eleven scratch buffers, requested when the plan must be TFLM's."""
    model = dp_model(random_anchors(np.random.default_rng(9), 17), 17, 6,
                     options(use_regular_nms=regular, num_classes=5, max_detections=7))
    it = Interpreter(model, planner="tflm")
    it.allocate_tensors()
    assert it.head == tflm_arena(model)["head"]


# ---- refused -----------------------------------------------------------------------------------------------------


def _bad_models() -> dict[str, bytes]:
    a6 = grid_anchors(6)
    o = options()
    f = "float32"
    return {
        "two inputs": op_model(OP, [T((1, 6, 4), f), T((1, 6, 4), f)],
                               [T((1, 5, 4), f), T((1, 5), f), T((1, 5), f), T((1,), f)],
                               custom_options=custom_options(**o)),
        "three outputs": dp_model(a6, 6, 4, o, outputs=[T((1, 5, 4), f), T((1, 5), f), T((1, 5), f)]),
        "int8 anchors": dp_model(np.zeros((6, 4), np.int8), 6, 4, o, types=(f, f, "int8")),
        "uint8 scores": dp_model(a6, 6, 4, o, types=(f, "uint8", f)),
        "int32 count": dp_model(a6, 6, 4, o, outputs=[T((1, 5, 4), f), T((1, 5), f), T((1, 5), f), T((1,), "int32")]),
        "encodings of 3": dp_model(a6, 6, 4, o, encoding_size=3),
        "batch of 2": op_model(OP, [T((2, 6, 4), f), T((2, 6, 4), f), T((6, 4), f, data=a6)],
                               [T((1, 5, 4), f), T((1, 5), f), T((1, 5), f), T((1,), f)],
                               custom_options=custom_options(**o)),
        "scores for other boxes": op_model(OP, [T((1, 6, 4), f), T((1, 7, 4), f), T((6, 4), f, data=a6)],
                                           [T((1, 5, 4), f), T((1, 5), f), T((1, 5), f), T((1,), f)],
                                           custom_options=custom_options(**o)),
        "two background columns": dp_model(a6, 6, 5, o),
        "too few classes": dp_model(a6, 6, 2, o),
        "fewer anchors": dp_model(grid_anchors(5), 6, 4, o),
        "anchors of 5": dp_model(np.zeros((6, 5), F32), 6, 4, o),
        "max_detections 0": dp_model(a6, 6, 4, options(max_detections=0), slots=1),
        "max_detections past int32": dp_model(a6, 6, 4, options(max_detections=2**32 + 5), slots=5),
        "num_classes 0": dp_model(a6, 6, 1, options(num_classes=0)),
        "fast, 2 classes per detection": dp_model(a6, 6, 4, options(max_classes_per_detection=2), slots=5),
        "fast, 0 classes per detection": dp_model(a6, 6, 4, options(max_classes_per_detection=0)),
        "regular, 0 per class": dp_model(a6, 6, 4, options(use_regular_nms=True, detections_per_class=0)),
        "IoU threshold 0": dp_model(a6, 6, 4, options(nms_iou_threshold=0.0)),
        "IoU threshold 1e-50 (0 as float)": dp_model(a6, 6, 4, options(nms_iou_threshold=1e-50)),
        "IoU threshold 1.5": dp_model(a6, 6, 4, options(nms_iou_threshold=1.5)),
        "IoU threshold NaN": dp_model(a6, 6, 4, options(nms_iou_threshold=float("nan"))),
        "score threshold NaN": dp_model(a6, 6, 4, options(nms_score_threshold=float("nan"))),
        "y_scale 0": dp_model(a6, 6, 4, options(y_scale=0.0)),
        "h_scale inf": dp_model(a6, 6, 4, options(h_scale=float("inf"))),
        "w_scale NaN": dp_model(a6, 6, 4, options(w_scale=float("nan"))),
        "more slots than max_detections": dp_model(a6, 6, 4, options(use_regular_nms=True,
                                                                     max_classes_per_detection=2), slots=10),
        "fewer slots than max_detections": dp_model(a6, 6, 4, o, slots=4),
        "count of 2": dp_model(a6, 6, 4, o, outputs=[T((1, 5, 4), f), T((1, 5), f), T((1, 5), f), T((2,), f)]),
        "num_classes missing": dp_model(a6, 6, 4, options(num_classes=None)),
        "max_detections a float": dp_model(a6, 6, 4, options(max_detections=5.0)),
        "options not a FlexBuffer": dp_model(a6, 6, 4, o, raw_options=b"\x01\x02\x03"),
        "huge scratch": dp_model(None, 3000, 4, options(max_detections=100_000)),
    }


BAD = _bad_models()


@pytest.mark.parametrize("name", list(BAD))
def test_rejects_bad_models(name: str) -> None:
    with pytest.raises(PrepareError):
        Interpreter(BAD[name]).allocate_tensors()


@pytest.mark.parametrize("name", ["three outputs", "uint8 scores", "encodings of 3", "batch of 2",
                                  "scores for other boxes", "two background columns", "too few classes",
                                  "fast, 0 classes per detection", "regular, 0 per class", "IoU threshold 0",
                                  "IoU threshold 1e-50 (0 as float)", "IoU threshold 1.5", "IoU threshold NaN"])
def test_tflm_rejects_them_too(name: str) -> None:
    with pytest.raises(TflmError, match="detection_postprocess|failed to invoke"):
        run_tflm(BAD[name], random_inputs(BAD[name]))


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_quantized_encodings_unsupported(dtype: str) -> None:
    """The wheel fails at invoke on quantized box encodings (it does not dequantize): micronn has no kernel."""
    model = dp_model(grid_anchors(6), 6, 4, options(), types=(dtype, "float32", "float32"))
    with pytest.raises(TflmError):
        run_tflm(model, [np.zeros((1, 6, 4), dtype), np.zeros((1, 6, 4), F32)])
    with pytest.raises(UnsupportedError):
        Interpreter(model)
