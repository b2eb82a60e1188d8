"""``micronn eval``: a classifier over a data set, as TFLM would score it; accuracy, confusion matrix, per-class
precision and recall, and where it disagrees with the float model it was quantized from."""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import os
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from micronn import progress as _progress
from micronn.cluster import ray_session
from micronn.errors import MicronnError
from micronn.ir import Model, Tensor
from micronn.simulate.batch import DEFAULT_BATCH, map_chunks
from micronn.simulate.data import chunks, class_indices, load_data, read_labels, to_input
from micronn.tflite.reader import Source, read


@dataclasses.dataclass
class Evaluation:
    """What :func:`evaluate` found. ``scores`` (N x classes, the model's raw output) and ``predictions`` are kept
    for further analysis; ``to_dict()`` holds everything else."""

    model: str
    samples: int
    classes: list[str]
    predictions: np.ndarray  # top-1 class per sample (the first of equal scores, as argmax)
    scores: np.ndarray
    labels: np.ndarray | None = None
    top_k: dict[int, float] = dataclasses.field(default_factory=dict)  # k -> accuracy (needs labels)
    confusion: np.ndarray | None = None  # rows: true class, columns: predicted class
    precision: list[float | None] | None = None  # per class; None where nothing was predicted as it
    recall: list[float | None] | None = None  # per class; None where no sample has it
    float_model: str | None = None
    float_predictions: np.ndarray | None = None
    float_top_k: dict[int, float] | None = None
    disagreements: list[int] | None = None  # samples whose top-1 class differs from the float model's
    seconds: float = 0.0
    ray: bool = False
    names: list[str] | None = None  # each sample's file, for folders

    @property
    def accuracy(self) -> float | None:
        """Top-1 accuracy (None without labels)."""
        return self.top_k.get(1)

    @property
    def agreement(self) -> float | None:
        """Share of samples where micronn's top-1 class is the float model's (None without a float model)."""
        if self.disagreements is None:
            return None
        return 1 - len(self.disagreements) / self.samples if self.samples else 1.0

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON types: counts, accuracies, the confusion matrix, per-class figures, disagreeing samples."""
        out: dict[str, Any] = {
            "model": self.model, "samples": self.samples, "classes": self.classes, "seconds": self.seconds,
            "samples_per_second": self.samples / self.seconds if self.seconds else None, "ray": self.ray,
            "predicted_counts": np.bincount(self.predictions, minlength=len(self.classes)).tolist(),
        }
        if self.labels is not None:
            out.update({
                "top_k": {str(k): v for k, v in self.top_k.items()}, "accuracy": self.accuracy,
                "label_counts": np.bincount(self.labels, minlength=len(self.classes)).tolist(),
                "confusion": self.confusion.tolist() if self.confusion is not None else None,
                "precision": self.precision, "recall": self.recall,
            })
        if self.float_model is not None:
            out["float"] = {"model": self.float_model, "agreement": self.agreement,
                            "disagreements": self.disagreements,
                            "top_k": {str(k): v for k, v in (self.float_top_k or {}).items()} or None}
        return out

    def __str__(self) -> str:
        lines = [f"{self.model}: {self.samples:,} samples, {len(self.classes)} classes, {self.seconds:.1f} s"
                 + (f" ({self.samples / self.seconds:,.0f} samples/s" + (", Ray" if self.ray else "") + ")"
                    if self.seconds else "")]
        if self.labels is not None:
            lines.append("accuracy: " + ", ".join(f"top-{k} {v:.2%}" for k, v in self.top_k.items()))
            width = max(len(c) for c in self.classes)
            lines.append(f"{'class':<{width}}  {'samples':>8}  {'precision':>9}  {'recall':>7}")
            counts = np.bincount(self.labels, minlength=len(self.classes))
            for c, n, p, r in zip(self.classes, counts, self.precision or [], self.recall or []):
                lines.append(f"{c:<{width}}  {n:>8,}  {_pct(p):>9}  {_pct(r):>7}")
            lines.append("confusion (rows: true, columns: predicted):")
            lines.extend("  " + " ".join(f"{v:>6}" for v in row) for row in self.confusion.tolist())
        else:
            counts = np.bincount(self.predictions, minlength=len(self.classes))
            lines.append("no labels; predicted: " + ", ".join(f"{c} {n:,}" for c, n in zip(self.classes, counts)))
        if self.float_model is not None:
            d = self.disagreements or []
            lines.append(f"float model {self.float_model}: top-1 agrees on {self.agreement:.2%}; "
                         f"{len(d):,} disagreement(s)" + (f": samples {', '.join(map(str, d[:20]))}"
                                                         + (" ..." if len(d) > 20 else "") if d else ""))
            if self.float_top_k:
                lines.append("float accuracy: " + ", ".join(f"top-{k} {v:.2%}" for k, v in self.float_top_k.items()))
        return "\n".join(lines)


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.2%}"


def _name(model: Any) -> str:
    return os.path.basename(os.fspath(model)) if isinstance(model, (str, os.PathLike)) else \
        "model" if not isinstance(model, Model) else (model.description or "model")


def evaluate(model: Model | Source, data: Any, labels: Any = None, *, float_model: Model | Source | None = None,
             top_k: tuple[int, ...] | list[int] = (1, 5), batch: int = DEFAULT_BATCH, ray: Any = None,
             progress: bool = True, classes: list[str] | None = None, output: int = 0, backend: str = "auto",
             workers: int | None = None) -> Evaluation:
    """Score every sample of ``data`` with ``model`` and compare against ``labels`` and ``float_model``.

    ``data``: a path (.npy, .npz, a folder of images, .wav or .npy files; see ``micronn.simulate.data``), a numpy
    array stacked along axis 0, a tuple of them (one per input) or any iterable of samples. ``labels``: class
    indices or names (array, list, .npy, .txt, .csv, inline ``"0,1,1"``); without them, the npz's ``y`` or the
    class folders. ``classes``: class names in output order. The prediction is the top-1 index of output
    ``output``, flattened (the first of equal scores). ``top_k``: the accuracies to report (k up to the number of
    classes). ``batch`` samples are read, converted and run at a time; ``ray`` spreads the chunks over Ray
    (``micronn.cluster.ray_session``). Outputs are those of one TFLM invoke per sample, from the initial
    state, whatever the ``backend`` (``"auto"``: native C where the model compiles for the host, else the numpy
    reference; see ``micronn.simulate.batch.Engine``) and ``workers`` (threads for native chunks; default this
    process's CPUs)."""
    t0 = time.perf_counter()
    m = model if isinstance(model, Model) else read(model)
    main_in = [m.main.tensors[t] for t in m.main.inputs]
    out_t = _output(m, output)
    ds = load_data(data, main_in)
    fm = None
    if float_model is not None:
        fm = float_model if isinstance(float_model, Model) else read(float_model)
        if len(fm.main.inputs) != len(main_in):
            raise MicronnError(f"the float model has {len(fm.main.inputs)} input(s), the model {len(main_in)}")
        f_out = _output(fm, output)
        if int(np.prod(f_out.shape)) != int(np.prod(out_t.shape)):
            raise MicronnError(f"the float model's output {output} is {f_out.spec}, the model's {out_t.spec}: they "
                               "do not score the same classes")
    n_classes = int(np.prod(out_t.shape))
    raw = labels if labels is not None else ds.raw_labels
    label_idx, names = (None, list(classes) if classes is not None else None)
    if raw is not None or ds.labels is not None:
        source = read_labels(raw, ds.names) if raw is not None else ds.labels
        label_idx, names = class_indices(source, classes, n_classes,
                                         "class folders" if labels is None and ds.raw_labels else "labels")
    if names is None:
        names = [str(i) for i in range(n_classes)]
    elif len(names) != n_classes:
        raise MicronnError(f"{len(names)} class names given, but the model scores {n_classes} classes")
    if label_idx is not None and ds.count is not None and len(label_idx) != ds.count:
        raise MicronnError(f"{len(label_idx):,} labels for {ds.count:,} samples")
    if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
        raise MicronnError(f"batch must be a positive number of samples, got {batch!r}")
    ks = sorted({int(k) for k in top_k if 1 <= int(k) <= n_classes} | {1})

    session = ray_session(ray)
    src_main = model if session is not None and not isinstance(model, Model) else m
    src_float = (float_model if session is not None and not isinstance(float_model, Model) else fm)
    runs = 2 if fm is not None else 1
    scores: list[np.ndarray] = []
    f_scores: list[np.ndarray] = []
    with contextlib.ExitStack() as stack:
        bar = stack.enter_context(_progress.bar("eval", ds.count)) if progress else None
        raw_chunks = chunks(ds.samples, main_in, batch)
        if fm is None:
            feeds: Any = [_converted(raw_chunks, main_in, None)]
        else:
            a, b = itertools.tee(raw_chunks)
            feeds = [_converted(a, main_in, None),
                     _converted(b, [fm.main.tensors[t] for t in fm.main.inputs], main_in)]
        gens = [map_chunks(src, feed, ray=ray if session is not None else False,
                           on_chunk=(lambda n: bar.update(n / runs)) if bar is not None else None,
                           backend=backend, workers=workers)
                for src, feed in zip((src_main, src_float), feeds)]
        for outs in zip(*gens):
            scores.append(outs[0][output].reshape(len(outs[0][output]), -1))
            if fm is not None:
                f_scores.append(outs[1][output].reshape(len(outs[1][output]), -1))
    s = np.concatenate(scores) if scores else np.zeros((0, n_classes), out_t.dtype)
    n = len(s)
    if label_idx is not None and len(label_idx) != n:
        raise MicronnError(f"{len(label_idx):,} labels for {n:,} samples")
    ranked = _ranked(s)
    ev = Evaluation(model=_name(model), samples=n, classes=names, predictions=ranked[:, 0].copy(), scores=s,
                    labels=label_idx, ray=session is not None, names=ds.names)
    if label_idx is not None:
        ev.top_k = _top_k(ranked, label_idx, ks)
        c = len(names)
        ev.confusion = np.bincount(label_idx * c + ev.predictions, minlength=c * c).reshape(c, c)
        tp = np.diag(ev.confusion)
        ev.precision = [float(t / p) if p else None for t, p in zip(tp, ev.confusion.sum(axis=0))]
        ev.recall = [float(t / r) if r else None for t, r in zip(tp, ev.confusion.sum(axis=1))]
    if fm is not None:
        fs = np.concatenate(f_scores) if f_scores else np.zeros((0, n_classes), np.float32)
        f_ranked = _ranked(fs)
        ev.float_model = _name(float_model)
        ev.float_predictions = f_ranked[:, 0].copy()
        ev.disagreements = np.flatnonzero(ev.float_predictions != ev.predictions).tolist()
        if label_idx is not None:
            ev.float_top_k = _top_k(f_ranked, label_idx, ks)
    ev.seconds = time.perf_counter() - t0
    return ev


def _output(m: Model, output: int) -> Tensor:
    if isinstance(output, bool) or not isinstance(output, (int, np.integer)) or not 0 <= output < len(m.main.outputs):
        raise MicronnError(f"output {output!r} is not one of the model's {len(m.main.outputs)} output(s)")
    return m.main.tensors[m.main.outputs[output]]


def _converted(raw: Iterator[list[np.ndarray]], tensors: list[Tensor], ref: list[Tensor] | None
               ) -> Iterator[list[np.ndarray]]:
    first = 0
    for chunk in raw:
        yield [np.ascontiguousarray(to_input(x, t, r, first))
               for x, t, r in zip(chunk, tensors, ref or [None] * len(tensors))]
        first += len(chunk[0])


def _ranked(scores: np.ndarray) -> np.ndarray:
    """Class indices by falling score; equal scores keep index order, so column 0 is ``argmax``'s choice."""
    key = scores.astype(np.float64) if scores.dtype.kind == "f" else scores.astype(np.int64)
    if key.dtype.kind == "f":
        key = np.where(np.isnan(key), -np.inf, key)  # a NaN score ranks last
    return np.argsort(-key, axis=1, kind="stable")


def _top_k(ranked: np.ndarray, labels: np.ndarray, ks: list[int]) -> dict[int, float]:
    if not len(labels):
        return {k: 0.0 for k in ks}
    hit = ranked == labels[:, None]
    return {k: float(hit[:, :k].any(axis=1).mean()) for k in ks}

