"""``micronn analyze --html``: one self-contained page (no network) with the graph drawn as a DAG (click an operator
for its tensors, options and quantization), the sortable per-layer table, the memory plan and a per-op cost chart.

The graph's layout is Sugiyama's layered drawing computed by ``grandalf``; the page's script only shows details and
sorts the table.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from micronn.analyze.layers import COLUMNS, Analysis
from micronn.errors import MicronnError, writing

NODE_H, CHAR_W, GAP = 34, 7.2, 60


def _layout(analysis: Analysis) -> tuple[dict[Any, tuple[float, float, float]], list[tuple[dict, list]], float, float]:
    """Node centres and widths, edge polylines, and the drawing's size."""
    try:
        from grandalf.graphs import Edge, Graph, Vertex
        from grandalf.layouts import SugiyamaLayout
    except ImportError as e:
        raise MicronnError("the HTML report draws the graph with grandalf: pip install 'micronn[report]'") from e

    class Box:
        def __init__(self, w: float, h: float) -> None:
            self.w, self.h, self.xy = w, h, (0.0, 0.0)

    class Path:
        def __init__(self) -> None:
            self.pts: list[tuple[float, float]] = []

        def setpath(self, pts: list[tuple[float, float]]) -> None:
            self.pts = pts

    names = {"input": "inputs", "output": "outputs", **{r["index"]: f"{r['index']} {r['op']}" for r in analysis.rows}}
    vertices = {k: Vertex(k) for k in names}
    for k, v in vertices.items():
        v.view = Box(max(90.0, CHAR_W * len(names[k]) + 16), NODE_H)
    edges = []
    for e in analysis.edges:
        edge = Edge(vertices[e["from"]], vertices[e["to"]])
        edge.view = Path()
        edges.append((e, edge))
    graph = Graph(list(vertices.values()), [edge for _, edge in edges])
    x0, height = 0.0, 0.0
    for component in graph.C:  # lay each connected piece out, side by side
        sug = SugiyamaLayout(component)
        sug.init_all()
        sug.draw()
        vs = list(component.sV)
        left = min(v.view.xy[0] - v.view.w / 2 for v in vs)
        right = max(v.view.xy[0] + v.view.w / 2 for v in vs)
        top = min(v.view.xy[1] - v.view.h / 2 for v in vs)
        dx, dy = x0 - left + GAP / 2, GAP / 2 - top
        for v in vs:
            v.view.xy = (v.view.xy[0] + dx, v.view.xy[1] + dy)
            height = max(height, v.view.xy[1] + v.view.h / 2 + GAP / 2)
        for _, edge in edges:
            if edge.v[0] in vs:
                edge.view.pts = [(x + dx, y + dy) for x, y in edge.view.pts]
        x0 += right - left + GAP
    nodes = {k: (*v.view.xy, v.view.w) for k, v in vertices.items()}
    return nodes, [(e, edge.view.pts) for e, edge in edges], x0, height


def _graph_svg(analysis: Analysis) -> str:
    nodes, edges, width, height = _layout(analysis)
    parts = [f'<svg id="graph" xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
             f'viewBox="0 0 {width:.0f} {height:.0f}"><defs><marker id="arrow" viewBox="0 0 10 10" refX="10" '
             'refY="5" markerWidth="6" markerHeight="6" orient="auto"><path d="M0,0 L10,5 L0,10 z"/></marker></defs>']
    for e, pts in edges:
        if len(pts) < 2:
            continue
        (x1, y1), (x2, y2) = pts[0], pts[-1]
        pts = [(x1, y1 + NODE_H / 2), *pts[1:-1], (x2, y2 - NODE_H / 2)]
        d = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
        mx, my = pts[len(pts) // 2] if len(pts) > 2 else ((x1 + x2) / 2, (y1 + y2) / 2)
        parts.append(f'<polyline class="edge" points="{d}" marker-end="url(#arrow)"/>'
                     f'<text class="shape" x="{mx + 4:.1f}" y="{my:.1f}">{html.escape(e["label"])}</text>')
    for key, (x, y, w) in nodes.items():
        label = "inputs" if key == "input" else "outputs" if key == "output" else \
            f"{key} {analysis.rows[key]['op']}"
        cls = "node op" if isinstance(key, int) else "node io"
        data = f' data-op="{key}"' if isinstance(key, int) else ""
        parts.append(f'<g class="{cls}"{data} transform="translate({x - w / 2:.1f},{y - NODE_H / 2:.1f})">'
                     f'<rect width="{w:.1f}" height="{NODE_H}" rx="6"/>'
                     f'<text x="{w / 2:.1f}" y="{NODE_H / 2 + 4}">{html.escape(label)}</text></g>')
    parts.append("</svg>")
    return "".join(parts)


def _bars_svg(analysis: Analysis) -> str:
    key = "cycles" if any(r["cycles"] is not None for r in analysis.rows) else "macs"
    values = [float(r[key] or 0) for r in analysis.rows]
    top = max(values, default=0) or 1.0
    bar, width = 14, 560
    rows = []
    for r, v in zip(analysis.rows, values):
        y = r["index"] * (bar + 4)
        rows.append(f'<text x="0" y="{y + 11}">{r["index"]} {html.escape(r["op"][:24])}</text>'
                    f'<rect class="bar" x="210" y="{y}" width="{max(1.0, width * v / top):.1f}" height="{bar}"/>'
                    f'<text x="{215 + width * v / top:.1f}" y="{y + 11}">{v:,.0f}</text>')
    h = len(values) * (bar + 4)
    return (f'<p>{"Estimated cycles on " + str(analysis.totals["target"]) if key == "cycles" else "MACs"} per '
            f'operator</p><svg id="costs" xmlns="http://www.w3.org/2000/svg" width="{width + 320}" height="{h}">'
            + "".join(rows) + "</svg>")


def _table(analysis: Analysis) -> str:
    head = "".join(f"<th>{c}</th>" for c in COLUMNS)
    body = []
    for r in analysis.rows:
        cells = []
        for c in COLUMNS:
            v = r[c]
            text = "" if v is None else " ".join(map(str, v)) if isinstance(v, list) else \
                f"{v:,.0f}" if isinstance(v, (int, float)) and c != "index" else str(v)
            sort = v if isinstance(v, (int, float)) else text
            cells.append(f'<td data-sort="{html.escape(str(sort))}">{html.escape(text)}</td>')
        body.append(f'<tr data-op="{r["index"]}">' + "".join(cells) + "</tr>")
    return f'<table id="layers"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


_STYLE = """body{font:13px system-ui,sans-serif;margin:16px;color:#222}h1{font-size:18px}
h2{font-size:15px;margin-top:24px}
#top{display:flex;gap:16px;align-items:flex-start}#graphbox{overflow:auto;max-height:80vh;border:1px solid #ccc;flex:1}
#details{width:380px;position:sticky;top:8px;border:1px solid #ccc;padding:8px;font-size:12px;white-space:pre-wrap}
.node rect{fill:#e8f0fe;stroke:#3367d6}.node.io rect{fill:#eee;stroke:#888}.node.op{cursor:pointer}
.node.selected rect{fill:#ffd54f}.node text{text-anchor:middle;font-size:12px}
.edge{fill:none;stroke:#888}.shape{font-size:10px;fill:#555}.bar{fill:#3367d6}#costs text{font-size:11px}
table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ddd;padding:2px 6px;text-align:right}
th{cursor:pointer;background:#f4f4f4}tr.selected td{background:#fff3c4}"""

_SCRIPT = """
const DETAILS = JSON.parse(document.getElementById('data').textContent);
function show(i) {
  const d = DETAILS[i];
  document.querySelectorAll('.selected').forEach(e => e.classList.remove('selected'));
  document.querySelectorAll('[data-op="' + i + '"]').forEach(e => e.classList.add('selected'));
  document.getElementById('details').textContent = 'operator ' + d.index + ': ' + d.op + '\\n\\n' +
    JSON.stringify({options: d.options, inputs: d.inputs, outputs: d.outputs}, null, 1);
}
document.querySelectorAll('.node.op').forEach(n => n.addEventListener('click', () => show(+n.dataset.op)));
document.querySelectorAll('#layers tbody tr').forEach(r => r.addEventListener('click', () => show(+r.dataset.op)));
document.querySelectorAll('#layers th').forEach((th, col) => th.addEventListener('click', () => {
  const body = document.querySelector('#layers tbody');
  const up = th.dataset.dir !== 'up';
  th.dataset.dir = up ? 'up' : 'down';
  const key = r => { const v = r.children[col].dataset.sort; return isNaN(+v) || v === '' ? v : +v; };
  [...body.rows].sort((a, b) => (key(a) > key(b) ? 1 : key(a) < key(b) ? -1 : 0) * (up ? 1 : -1))
    .forEach(r => body.appendChild(r));
}));
"""


def html_report(analysis: Analysis, plan: dict[str, Any] | None = None) -> str:
    """The page as a string; ``plan`` (``Interpreter.arena_report()``) adds the memory plan picture."""
    t, m = analysis.totals, analysis.memory
    summary = (f"{t['operators']} operators, {t['macs']:,} MACs, {t['weight_bytes']:,} B of weights (flash)"
               + (f"; arena head {m['head_bytes']:,} B + tail {m['tail_bytes']:,} B ({m['planner']}), TFLM's "
                  f"planner head {m['tflm_head_bytes']:,} B, live-set lower bound {m['lower_bound_bytes']:,} B"
                  if "head_bytes" in m else f"; memory: {m.get('error', '-')}"))
    picture = ""
    if plan is not None:
        try:
            from micronn.planners.plot import plan_svg

            svg = plan_svg(plan)
            picture = "<h2>Memory plan</h2>" + svg[svg.find("<svg"):]
        except (ImportError, MicronnError) as e:
            picture = f"<h2>Memory plan</h2><p>not drawn: {html.escape(str(e))}</p>"
    data = json.dumps(analysis.details).replace("</", "<\\/")
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>micronn analyze: "
            f"{html.escape(analysis.model)}</title><style>{_STYLE}</style></head><body>"
            f"<h1>{html.escape(analysis.model)}</h1><p id='summary'>{html.escape(summary)}</p>"
            f"<div id='top'><div id='graphbox'>{_graph_svg(analysis)}</div>"
            f"<div id='details'>Click an operator to see its tensors, options and quantization.</div></div>"
            f"<h2>Layers</h2>{_table(analysis)}<h2>Cost per operator</h2>{_bars_svg(analysis)}{picture}"
            f"<script type='application/json' id='data'>{data}</script><script>{_SCRIPT}</script></body></html>")


def write_report(analysis: Analysis, path: str | Path) -> Path:
    """Write :func:`html_report` (with the analysis's memory plan) to ``path``."""
    page = html_report(analysis, analysis.plan)
    with writing(path):
        Path(path).write_text(page, encoding="utf-8")
    return Path(path)
