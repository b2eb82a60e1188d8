"""Pictures of arena plans: operators on the x axis, arena offset on the y axis, one rectangle per buffer.

A patched plan (the report has ``patches``, from :func:`micronn.patch.layout.patch_layout`) adds the patch grid of
each stage (the stripes over the joined output, and the rows of the source each reads, halo included) and the live
arena bytes at every operator step, coloured by the patch that step computes; each patch's steps are shaded on the
plan too. The file's metadata (``Description``) says how many patches it shows.

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


def live_bytes(buffers: list[dict[str, Any]], t: int) -> int:
    """Arena bytes in use at step ``t``: the union of the live buffers' byte ranges (members that share memory
    count once)."""
    spans = sorted((b["offset"], b["offset"] + b["size"]) for b in buffers if b["first"] <= t <= b["last"])
    total, end = 0, 0
    for a, z in spans:
        if z > end:
            total += z - max(a, end)
            end = z
    return total


def describe(report: dict[str, Any]) -> str:
    """One line for the picture's metadata."""
    p = report.get("patches")
    if not p:
        return f"micronn arena plan ({report['planner']}): head {report['head_bytes']} B"
    return (f"micronn arena plan ({report['planner']}): head {report['head_bytes']} B; {p['count']} patches in "
            f"{len(p['stages'])} patched stages")


def _patch_colours(report: dict[str, Any]) -> dict[int, tuple[int, int, Any]]:
    """Operator index -> (stage, patch, colour) for every operator that belongs to a patch."""
    import matplotlib

    cmaps = [matplotlib.colormaps[c] for c in ("Blues", "Oranges", "Greens", "Purples", "Reds")]
    out = {}
    for s, st in enumerate(report["patches"]["stages"]):
        n = len(st["patches"])
        for k, p in enumerate(st["patches"]):
            colour = cmaps[s % len(cmaps)](0.35 + 0.55 * k / max(n - 1, 1))
            out.update({o: (s, k, colour) for o in p["ops"]})
    return out


def _draw_grid(ax: Any, st: dict[str, Any], s: int, colours: dict[int, tuple[int, int, Any]]) -> None:
    """The stage's joined output cut into its stripes (left) and the source rows each stripe reads (right)."""
    from matplotlib.patches import Rectangle

    _, h, w, c = st["shape"]
    src = st["source_shape"]
    sw = w if src is None else src[2]
    gap = max(w, sw) * 0.25
    for k, p in enumerate(st["patches"]):
        colour = colours[p["ops"][0]][2]
        a, z = p["rows"]
        ax.add_patch(Rectangle((0, a), w, z - a + 1, facecolor=colour, edgecolor="black", linewidth=0.6))
        ax.text(w / 2, (a + z + 1) / 2, f"patch {k}: rows {a}..{z}", ha="center", va="center", fontsize=6)
        if src is not None and p["source_rows"] is not None:
            lo, hi = p["source_rows"]
            scale = h / src[1]  # draw the source at the output's height, so the two sides line up
            x0 = w + gap + k * sw / len(st["patches"])
            ax.add_patch(Rectangle((x0, lo * scale), sw / len(st["patches"]), (hi - lo + 1) * scale,
                                   facecolor=colour, edgecolor="black", linewidth=0.4, alpha=0.8))
    if src is not None:
        ax.add_patch(Rectangle((w + gap, 0), sw, h, fill=False, edgecolor="black", linewidth=0.8))
        ax.text(w + gap + sw / 2, -0.02 * h, f"source {src[1]}x{src[2]}x{src[3]}: rows read (halo overlaps)",
                ha="center", va="bottom", fontsize=6)
    ax.text(w / 2, -0.02 * h, f"output {h}x{w}x{c}", ha="center", va="bottom", fontsize=6)
    ax.set_xlim(-1, w + gap + sw + 1)
    ax.set_ylim(h * 1.08, -h * 0.1)  # row 0 on top, as in the image
    ax.set_xticks([])
    ax.set_ylabel("output row")
    ax.set_title(f"stage {s}: {len(st['patches'])} patches, joined by op {st['join']}", fontsize=8)


def _draw_live(ax: Any, report: dict[str, Any], colours: dict[int, tuple[int, int, Any]]) -> None:
    """Live arena bytes at every step, each patch's steps in its colour (the others grey)."""
    bufs = report["buffers"]
    last = max((b["last"] for b in bufs), default=1)
    for t in range(last + 1):
        who = colours.get(t - 1)
        ax.bar(t, live_bytes(bufs, t), width=0.9, color="lightgrey" if who is None else who[2],
               edgecolor="black" if who is not None else "none", linewidth=0.3)
    for s, st in enumerate(report["patches"]["stages"]):
        for k, p in enumerate(st["patches"]):
            steps = sorted(o + 1 for o in p["ops"])
            ax.text(steps[len(steps) // 2], p["peak_live_bytes"], f"{s}.{k}", ha="center", va="bottom",
                    fontsize=5)
    ax.axhline(report["head_bytes"], color="red", linewidth=0.8)
    ax.set_xlim(-1, last + 1)
    ax.set_xlabel("time (operator index + 1); label stage.patch")
    ax.set_ylabel("live arena bytes")
    ax.set_title("live memory per step, coloured by patch", fontsize=8)


def _patched_figure(report: dict[str, Any], compare: dict[str, Any] | None) -> Any:
    import matplotlib.pyplot as plt

    stages = report["patches"]["stages"]
    colours = _patch_colours(report)
    reports = [compare, report] if compare is not None else [report]
    cols = max(len(stages), len(reports))
    fig = plt.figure(figsize=(7 * cols, 14))
    grid = fig.add_gridspec(3, cols, height_ratios=[1, 1.2, 0.9])
    for s, st in enumerate(stages):
        _draw_grid(fig.add_subplot(grid[0, s]), st, s, colours)
    top = max(max(r["head_bytes"] for r in reports), 1) * 1.1
    for j, r in enumerate(reports):
        ax = fig.add_subplot(grid[1, j * cols // len(reports):(j + 1) * cols // len(reports)])
        if r is report:
            for o, (_, _, colour) in colours.items():
                ax.axvspan(o + 0.5, o + 1.5, color=colour, alpha=0.25, linewidth=0)
        _draw(ax, r, r["planner"])
        ax.set_ylim(0, top)
    _draw_live(fig.add_subplot(grid[2, :]), report, colours)
    fig.tight_layout()
    return fig


def _figure(report: dict[str, Any], compare: dict[str, Any] | None) -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise MicronnError("plotting needs matplotlib: pip install 'micronn[plot]'") from e
    if report.get("patches"):
        return _patched_figure(report, compare)
    reports = [compare, report] if compare is not None else [report]
    fig, axes = plt.subplots(1, len(reports), figsize=(7 * len(reports), 5), squeeze=False, sharey=True)
    for ax, r in zip(axes[0], reports):
        _draw(ax, r, r["planner"])
    axes[0][0].set_ylim(0, max(max(r["head_bytes"] for r in reports), 1) * 1.1)  # axes share y
    fig.tight_layout()
    return fig


def _metadata(report: dict[str, Any]) -> dict[str, Any]:
    """A patched plan's picture says what it shows in its metadata (others are written as before)."""
    return {"metadata": {"Description": describe(report)}} if report.get("patches") else {}


def plan_svg(report: dict[str, Any], compare: dict[str, Any] | None = None) -> str:
    """The plan picture as an SVG document (for pages that embed it)."""
    import matplotlib.pyplot as plt

    fig = _figure(report, compare)
    buf = io.StringIO()
    fig.savefig(buf, format="svg", **_metadata(report))
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
    fig.savefig(path, dpi=130, **_metadata(report))
    plt.close(fig)
    return path
