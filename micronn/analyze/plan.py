"""``micronn plan`` and ``micronn reorder``: the arena plan as data (with TFLM's whole arena, offline-plan export and
pictures), and the operator order with the smallest peak written back as .tflite."""

from __future__ import annotations

from typing import Any

from micronn.errors import MicronnError, check_writable, writing
from micronn.footprint import tflm_footprint
from micronn.interpreter import Interpreter
from micronn.ir import Model
from micronn.patch.combine import PATCH_MODES
from micronn.patch.layout import patch_layout
from micronn.patch.search import search
from micronn.planners import Sharing
from micronn.planners.offline import with_offline_plan
from micronn.planners.plot import live_bytes, plot_plan
from micronn.planners.reorder import best_order, peak_of_order, reorder
from micronn.tflite.reader import Source, read
from micronn.tflite.writer import save


def plan_report(model: Model | Source, planner: str = "optimal", sharing: bool | Sharing = True, *,
                offline_out: str | None = None, plot: str | None = None, compare: str | None = None,
                patches: str = "off", max_extra_macs: float = 0.2) -> dict[str, Any]:
    """The arena plan of ``planner``: head/tail/total, lower bound and every buffer's offset and lifetime,
    and (``target``) the whole arena TFLM needs with this head on the host and on a 32-bit Cortex-M.

    ``offline_out`` writes the model with the plan as TFLM offline-plan metadata (plans without memory
    sharing only: TFLM places each tensor at its own offset) and reports the head TFLM will plan for it;
    ``plot`` draws the plan (png/svg/html), beside the ``compare`` planner's if given. Output paths are checked
    before any work, so a typo costs no planning time.

    ``patches="auto"`` plans the best patched model (:func:`micronn.patch.search`, at most ``max_extra_macs`` more
    MACs; its figures under ``patch_search``). A patched plan, searched or read from a model ``micronn optimize
    --patches auto`` wrote, reports its ``patches``: every stage's stripes, the operators and source rows of each,
    and each patch's peak live bytes (operator indices of the graph as planned, ``Interpreter.model``: with PAD
    folding, the folded PADs are gone); ``plot`` then draws the patch grid and the live bytes per step too.
    """
    if patches not in PATCH_MODES:
        raise MicronnError(f"patches must be one of {', '.join(PATCH_MODES)}, got {patches!r}")
    for path in (offline_out, plot):
        if path is not None:
            check_writable(path)
    m = model if isinstance(model, Model) else read(model)
    found = search(m, max_extra_macs) if patches == "auto" else None
    if found is not None:
        m = found.model
    it = Interpreter(m, planner=planner, sharing=sharing)
    report = it.arena_report()
    if found is not None:
        report["patch_search"] = found.as_dict()
    stages = patch_layout(it.model)  # the graph planned (PADs folded away): its operators are the plan's steps
    if stages:
        for st in stages:
            for p in st["patches"]:
                p["peak_live_bytes"] = max(live_bytes(report["buffers"], o + 1) for o in p["ops"])
        report["patches"] = {"count": sum(len(st["patches"]) for st in stages), "stages": stages}
    # the arena to give TFLM running this plan (offline), on the host wheel and on a 32-bit Cortex-M
    report["target"] = tflm_footprint(m, head=report["head_bytes"])
    if offline_out is not None:
        if it.sharing != Sharing.none():  # TFLM runs its own kernels on the file as written
            it = Interpreter(m, planner=planner, sharing=False)
            it.allocate_tensors()
            report["offline_plan_note"] = ("TFLM runs the model as written with its own kernels' scratch: wrote the "
                                           "plan without memory sharing, PAD folding or compact scratch")
        out = with_offline_plan(m, it.plan)
        save(out, offline_out)
        tflm = Interpreter(out, planner="tflm")
        tflm.allocate_tensors()
        report["offline"] = {"path": offline_out, "head_bytes": it.head, "tflm_head_bytes": tflm.head,
                             "tflm_original_head_bytes": Interpreter(m, planner="tflm").arena_report()["head_bytes"]}
    if plot is not None:
        other = Interpreter(m, planner=compare).arena_report() if compare else None
        with writing(plot):  # the folder can still vanish, or the disk fill, while drawing
            report["plot"] = str(plot_plan(report, plot, other))
    return report


def reorder_report(model: Model | Source, output: str | None = None, max_states: int = 200_000) -> dict[str, Any]:
    """Find the operator order with the smallest peak live set; write it as .tflite to ``output``."""
    if output is not None:
        check_writable(output)
    m = model if isinstance(model, Model) else read(model)
    it = Interpreter(m, planner="tflm")
    it.allocate_tensors()
    scratch: dict[int, int] = {}  # an operator's scratch buffers, all of them (SVDF asks for two)
    for r in it.base_requests:
        if r.scratch is not None and r.subgraph == 0:
            scratch[r.scratch[0]] = scratch.get(r.scratch[0], 0) + r.size
    n = len(m.main.operators)
    order, exact = best_order(m.main, scratch, max_states)
    out = reorder(m, order)
    res: dict[str, Any] = {"order": order, "exact": exact, "changed": order != list(range(n)),
                           "peak_before_bytes": peak_of_order(m.main, list(range(n)), scratch),
                           "peak_after_bytes": peak_of_order(m.main, order, scratch)}
    tflm_after = Interpreter(out, planner="tflm")
    tflm_after.allocate_tensors()
    res["tflm_head_before_bytes"], res["tflm_head_after_bytes"] = it.head, tflm_after.head
    if output is not None:
        save(out, output)
        res["path"] = output
    return res
