"""``micronn optimize --patches auto``: patch-based execution, then TinySeg's spilling on the patched graph.

Patching shrinks the early, large activations; spilling moves tensors that sit idle across the peak to storage.
Both are tried: TinySeg on the model as it is and on the best patched model (``search``), and the smaller total
(head + TFLM's tail, as TinySeg prices every step) wins. ``patches="off"`` is exactly ``tinyseg.optimize_and_verify``.
The written model is checked against the original, not against the patched one.
"""

from __future__ import annotations

from typing import Any

from micronn import tinyseg
from micronn.errors import MicronnError, check_writable, writing
from micronn.interpreter import Interpreter
from micronn.ir import Model, random_inputs
from micronn.patch.search import search
from micronn.storage import open_storage
from micronn.tflite.reader import Source, read
from micronn.tflite.writer import write
from micronn.tinyseg.optimize import Step, optimize, tflm_tail

PATCH_MODES = ("auto", "off")
SPILL_STEPS = ("+ spilling", "+ fused fetching", "+ streaming")


def _outputs(model: Model | bytes, inputs: list[Any], **kw: Any) -> list[Any]:
    it = Interpreter(model, **kw)
    for i, x in enumerate(inputs):
        it.set_input(x, i)
    it.invoke()
    return [it.get_output(i) for i in range(len(it.model.main.outputs))]


def optimize_and_verify(model: Model | Source, output: str | None = None, target_bytes: int | None = None,
                        storage: str = "memory", *, report: str | None = None, seed: int = 0,
                        patches: str = "off", max_extra_macs: float = 0.2) -> dict[str, Any]:
    """TinySeg's :func:`micronn.tinyseg.optimize_and_verify`, with ``patches="auto"`` also on the best patched model
    (added MACs at most ``max_extra_macs`` of the model's); the smaller total is written and verified."""
    if patches not in PATCH_MODES:
        raise MicronnError(f"patches must be one of {', '.join(PATCH_MODES)}, got {patches!r}")
    if patches == "off":
        return tinyseg.optimize_and_verify(model, output, target_bytes, storage, report=report, seed=seed)
    if report is not None:
        raise MicronnError("--report describes TinySeg's steps alone: use it with --patches off")
    if output is not None:
        check_writable(output)
    m = model if isinstance(model, Model) else read(model)
    found = search(m, max_extra_macs, tail=tflm_tail)  # priced as TinySeg prices its steps
    plain = optimize(m, target_bytes, storage)
    res, steps = plain, list(plain.steps)
    if found.patched:
        patched = optimize(found.model, target_bytes, storage)
        if patched.after.total < plain.after.total:
            b = found.best
            pre = [s for s in patched.steps if s.name not in SPILL_STEPS][-1]
            step = Step("+ patches", pre.head, pre.tail, f"{b.describe()}, +{found.as_dict()['extra_macs_pct']}% MACs",
                        model=pre.model)
            res, steps = patched, [*[s for s in plain.steps if s.name not in SPILL_STEPS], step,
                                   *[s for s in patched.steps if s.name in SPILL_STEPS]]
    out = {"before": _bytes(steps[0]), "after": _bytes(steps[-1]), "target_bytes": target_bytes,
           "reduction": round(1 - steps[-1].total / steps[0].total, 4), "steps": [s.as_dict() for s in steps],
           "patches": {**found.as_dict(), "used": res is not plain}}
    data = write(res.model)
    if output is not None:
        with writing(output), open(output, "wb") as f:
            f.write(data)
        out["path"] = output
    inputs = random_inputs(m, seed)
    want = _outputs(m, inputs)
    with open_storage(storage) as st:
        got = _outputs(data, inputs, storage=st)
    out["verified"] = all(a.dtype == b.dtype and a.tobytes() == b.tobytes() for a, b in zip(want, got))
    return out


def _bytes(s: Step) -> dict[str, int]:
    return {"head_bytes": s.head, "tail_bytes": s.tail, "total_bytes": s.total}
