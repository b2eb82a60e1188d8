"""The HTML report of ``micronn optimize --report``: the peak after each step (the paper's Figure 11), the arena
plans before and after (``micronn.planners.plot``) and, if given, the Table-5-style latency breakdown."""

from __future__ import annotations

import html
import tempfile
from pathlib import Path
from typing import Any

from micronn.errors import writing
from micronn.interpreter import Interpreter
from micronn.ir import Model
from micronn.planners.plot import plot_plan
from micronn.tinyseg.optimize import Result


def _plan_svg(model: Model, title: str, **kw: Any) -> str:
    it = Interpreter(model, **kw)
    report = it.arena_report()
    report["planner"] = title
    with tempfile.TemporaryDirectory() as d:
        return plot_plan(report, Path(d) / "plan.svg").read_text()


def _table(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return ""
    head = "".join(f"<th>{html.escape(str(k))}</th>" for k in rows[0])
    body = "".join("<tr>" + "".join(f"<td>{html.escape(f'{v:,}' if isinstance(v, int) else str(v))}</td>"
                                    for v in r.values()) + "</tr>" for r in rows)
    return f"<table border=1 cellspacing=0 cellpadding=3><tr>{head}</tr>{body}</table>"


def write_report(path: str | Path, original: Model, result: Result, latency: list[dict[str, Any]] | None = None,
                 verified: bool | None = None) -> Path:
    path = Path(path)
    before, after = result.before, result.after
    bar = max(s.total for s in result.steps)
    figure = "".join(
        f"<div style='font:12px monospace'>{html.escape(s.name):<40} "
        f"<span style='display:inline-block;background:#4a7;height:10px;width:{400 * s.total // bar}px'></span> "
        f"{s.total:,} B ({s.head:,} + {s.tail:,})</div>" for s in result.steps)
    parts = [
        "<!doctype html><meta charset='utf-8'><title>micronn optimize</title><body style='font-family:sans-serif'>",
        f"<h1>TinySeg optimization</h1><p>total arena {before.total:,} B &rarr; {after.total:,} B "
        f"(&minus;{100 * (1 - after.total / before.total):.1f}%), head + persistent tail as TFLM measures it"
        + ("" if verified is None else f"; outputs byte-identical on random inputs: <b>{verified}</b>") + "</p>",
        "<h2>Peak after each step</h2>", figure,
        _table([{k: v for k, v in s.as_dict().items()} for s in result.steps]),
        "<h2>Arena plan before (TFLM's planner)</h2>", _plan_svg(original, "TFLM", planner="tflm"),
        "<h2>Arena plan after</h2>", _plan_svg(result.model, "micronn + TinySeg"),
    ]
    if latency:
        parts += ["<h2>Latency (ms, modeled STM32H7 at 480 MHz)</h2>", _table(latency)]
    with writing(path):
        path.write_text("".join(parts) + "</body>")
    return path
