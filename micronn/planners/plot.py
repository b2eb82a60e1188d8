"""Pictures of arena plans: operators on the x axis, arena offset on the y axis, one rectangle per buffer.

Needs matplotlib (``pip install micronn[plot]``). ``.png`` and ``.svg`` are written by matplotlib;
``.html`` is a self-contained page with the SVG inline.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from micronn.errors import MicronnError


def _peak_time(buffers: list[dict[str, Any]]) -> int:
    times = {t for b in buffers for t in (b["first"], b["last"])}
    return max(times, key=lambda t: sum(b["size"] for b in buffers if b["first"] <= t <= b["last"]), default=0)


def _draw(ax: Any, report: dict[str, Any], title: str) -> None:
    from matplotlib.patches import Rectangle

    bufs = report["buffers"]
    cmap = __import__("matplotlib").colormaps["tab20"]
    for i, b in enumerate(bufs):
        scratch = b.get("kind") == "scratch"
        ax.add_patch(Rectangle((b["first"] - 0.45, b["offset"]), b["last"] - b["first"] + 0.9, b["size"],
                               facecolor="lightgrey" if scratch else cmap(i % 20), edgecolor="black", linewidth=0.4,
                               hatch="//" if scratch else None))
        if b["size"] >= report["head_bytes"] * 0.04:
            label = f"scratch op{b['op']}" if scratch else f"t{b['tensor']}"
            ax.text((b["first"] + b["last"]) / 2, b["offset"] + b["size"] / 2, label, ha="center", va="center",
                    fontsize=6)
    peak = _peak_time(bufs)
    ax.axhline(report["head_bytes"], color="red", linewidth=0.8)
    ax.axvline(peak, color="red", linestyle=":", linewidth=0.8)
    ax.text(peak, report["head_bytes"], f" peak at op {peak - 1}: head {report['head_bytes']:,} B", color="red",
            fontsize=7, va="bottom")
    last = max((b["last"] for b in bufs), default=1)
    ax.set_xlim(-1, last + 1)
    ax.set_xlabel("time (operator index + 1)")
    ax.set_ylabel("arena offset (bytes)")
    ax.set_title(f"{title}: head {report['head_bytes']:,} + tail {report['tail_bytes']:,} = "
                 f"{report['total_bytes']:,} B (lower bound {report['lower_bound_bytes']:,})", fontsize=8)


def _figure(report: dict[str, Any], compare: dict[str, Any] | None) -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise MicronnError("plotting needs matplotlib: pip install 'micronn[plot]'") from e
    reports = [compare, report] if compare is not None else [report]
    fig, axes = plt.subplots(1, len(reports), figsize=(7 * len(reports), 5), squeeze=False, sharey=True)
    for ax, r in zip(axes[0], reports):
        _draw(ax, r, r["planner"])
    axes[0][0].set_ylim(0, max(max(r["head_bytes"] for r in reports), 1) * 1.1)  # axes share y
    fig.tight_layout()
    return fig


def plan_svg(report: dict[str, Any], compare: dict[str, Any] | None = None) -> str:
    """The plan picture as an SVG document (for pages that embed it)."""
    import matplotlib.pyplot as plt

    fig = _figure(report, compare)
    buf = io.StringIO()
    fig.savefig(buf, format="svg")
    plt.close(fig)
    return buf.getvalue()


def plot_plan(report: dict[str, Any], path: str | Path, compare: dict[str, Any] | None = None) -> Path:
    """Draw ``report`` (``Interpreter.arena_report()``), beside ``compare`` if given, to png/svg/html."""
    path = Path(path)
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in ("png", "svg", "html"):
        raise MicronnError(f"cannot draw to {path.name}: use .png, .svg or .html")
    if fmt == "html":
        path.write_text(f"<!doctype html><meta charset='utf-8'><title>micronn arena plan</title>"
                        f"<body style='margin:0'>{plan_svg(report, compare)}</body>")
        return path
    import matplotlib.pyplot as plt

    fig = _figure(report, compare)
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path
