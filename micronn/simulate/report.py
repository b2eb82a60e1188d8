"""``micronn eval --report``: one self-contained HTML page (no network, no script) with the figures of an
:class:`~micronn.simulate.evaluate.Evaluation`: summary, confusion matrix and per-class precision/recall drawn by
matplotlib as inline SVG, and the samples where the float model disagrees."""

from __future__ import annotations

import html
import io
from pathlib import Path
from typing import Any

import numpy as np

from micronn.errors import MicronnError, writing
from micronn.simulate.evaluate import Evaluation

_STYLE = """body{font:13px system-ui,sans-serif;margin:16px;color:#222}h1{font-size:18px}
h2{font-size:15px;margin-top:24px}
table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ddd;padding:2px 6px;text-align:right}
th{background:#f4f4f4}figure{margin:8px 0}"""


def _figure(width: float, height: float) -> Any:
    try:
        from matplotlib.figure import Figure
    except ImportError as e:
        raise MicronnError("the eval report draws with matplotlib: pip install 'micronn[plot]'") from e
    return Figure(figsize=(width, height))


def _svg(fig: Any, element_id: str) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})  # the same data, the same page
    svg = buf.getvalue()
    svg = svg[svg.find("<svg"):]
    return svg.replace("<svg", f'<svg id="{element_id}"', 1)


def confusion_svg(ev: Evaluation) -> str:
    """The confusion matrix as a heat map, counts written in the cells (up to 20 classes)."""
    c = len(ev.classes)
    side = min(12.0, 2.5 + 0.45 * c)
    fig = _figure(side + 1.5, side)
    ax = fig.add_subplot()
    im = ax.imshow(ev.confusion, cmap="Blues")
    fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    ticks = np.arange(c)
    labels = ev.classes if c <= 40 else [str(i) for i in range(c)]
    ax.set_xticks(ticks if c <= 40 else ticks[::max(1, c // 20)])
    ax.set_yticks(ticks if c <= 40 else ticks[::max(1, c // 20)])
    if c <= 40:
        ax.set_xticklabels(labels, rotation=45, ha="right")
        ax.set_yticklabels(labels)
    ax.set_xlabel("predicted")
    ax.set_ylabel("true")
    if c <= 20:
        top = ev.confusion.max(initial=0) or 1
        for (i, j), v in np.ndenumerate(ev.confusion):
            ax.text(j, i, f"{v:,}", ha="center", va="center", fontsize=8, color="white" if v > top / 2 else "black")
    ax.set_title("confusion matrix")
    return _svg(fig, "confusion")


def per_class_svg(ev: Evaluation) -> str:
    """Precision and recall per class, side by side (a class with no prediction or no sample has no bar)."""
    c = len(ev.classes)
    fig = _figure(min(14.0, 3 + 0.5 * c), 3.5)
    ax = fig.add_subplot()
    x = np.arange(c)
    prec = [np.nan if v is None else v for v in ev.precision or []]
    rec = [np.nan if v is None else v for v in ev.recall or []]
    ax.bar(x - 0.2, prec, 0.4, label="precision", color="#3367d6")
    ax.bar(x + 0.2, rec, 0.4, label="recall", color="#f4b400")
    ax.set_xticks(x)
    ax.set_xticklabels(ev.classes if c <= 40 else [str(i) for i in x], rotation=45 if c > 6 else 0, ha="right"
                       if c > 6 else "center")
    ax.set_ylim(0, 1.05)
    ax.legend(loc="lower right")
    ax.set_title("per-class precision and recall")
    return _svg(fig, "per-class")


def predicted_svg(ev: Evaluation) -> str:
    """How many samples went to each class (the only picture without labels)."""
    counts = np.bincount(ev.predictions, minlength=len(ev.classes))
    fig = _figure(min(14.0, 3 + 0.5 * len(counts)), 3.0)
    ax = fig.add_subplot()
    ax.bar(np.arange(len(counts)), counts, color="#3367d6")
    ax.set_xticks(np.arange(len(counts)))
    ax.set_xticklabels(ev.classes if len(counts) <= 40 else [str(i) for i in range(len(counts))])
    ax.set_title("predicted classes")
    return _svg(fig, "predicted")


def eval_html(ev: Evaluation) -> str:
    """The report page as a string."""
    d = ev.to_dict()
    rows = [("samples", f"{ev.samples:,}"), ("classes", f"{len(ev.classes)}"),
            ("time", f"{ev.seconds:.2f} s" + (" on Ray" if ev.ray else ""))]
    rows += [(f"top-{k} accuracy", f"{v:.2%}") for k, v in ev.top_k.items()]
    if ev.float_model is not None:
        rows.append((f"top-1 agreement with {ev.float_model}", f"{ev.agreement:.2%}"))
        rows += [(f"float model top-{k} accuracy", f"{v:.2%}") for k, v in (ev.float_top_k or {}).items()]
    summary = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in rows)
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>micronn eval: {html.escape(ev.model)}</title>"
             f"<style>{_STYLE}</style></head><body><h1>micronn eval: {html.escape(ev.model)}</h1>",
             f"<table id='summary'>{summary}</table>"]
    if ev.labels is not None:
        per_class = "".join(
            f"<tr><td>{html.escape(c)}</td><td>{n:,}</td><td>{_pct(p)}</td><td>{_pct(r)}</td></tr>"
            for c, n, p, r in zip(ev.classes, d["label_counts"], ev.precision or [], ev.recall or []))
        parts += ["<h2>Confusion matrix</h2><figure>", confusion_svg(ev), "</figure>",
                  "<h2>Per class</h2><figure>", per_class_svg(ev), "</figure>",
                  "<table id='classes'><tr><th>class</th><th>samples</th><th>precision</th><th>recall</th></tr>"
                  f"{per_class}</table>"]
    else:
        parts += ["<h2>Predictions</h2><p>No labels: only the predicted classes are counted.</p><figure>",
                  predicted_svg(ev), "</figure>"]
    if ev.disagreements is not None:
        shown = ev.disagreements[:200]
        items = "".join(
            f"<tr><td>{k}</td><td>{html.escape(ev.names[k]) if ev.names else ''}</td>"
            f"<td>{html.escape(ev.classes[ev.predictions[k]])}</td>"
            f"<td>{html.escape(ev.classes[ev.float_predictions[k]])}</td>"
            f"<td>{html.escape(ev.classes[ev.labels[k]]) if ev.labels is not None else ''}</td></tr>" for k in shown)
        parts.append(f"<h2>Disagreements with {html.escape(ev.float_model or '')}</h2>"
                     f"<p>{len(ev.disagreements):,} sample(s) where micronn's top-1 class differs from the float "
                     f"model's" + (f" (the first {len(shown)} listed)" if len(shown) < len(ev.disagreements) else "")
                     + "</p><table id='disagreements'><tr><th>sample</th><th>file</th><th>micronn</th><th>float</th>"
                     f"<th>label</th></tr>{items}</table>")
    parts.append("</body></html>")
    return "".join(parts)


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.2%}"


def write_eval_report(ev: Evaluation, path: str | Path) -> Path:
    """Write :func:`eval_html` to ``path``."""
    page = eval_html(ev)
    with writing(path):
        Path(path).write_text(page, encoding="utf-8")
    return Path(path)
