"""``micronn optimize``: TinySeg's optimizer, the result written out and checked against the original."""

from __future__ import annotations

from typing import Any

from micronn.errors import check_writable, writing
from micronn.interpreter import Interpreter
from micronn.ir import Model, random_inputs
from micronn.storage import open_storage
from micronn.tflite.reader import Source, read
from micronn.tflite.writer import write
from micronn.tinyseg.latency import breakdown
from micronn.tinyseg.optimize import optimize
from micronn.tinyseg.report import write_report


def _outputs(model: Model | bytes, inputs: list[Any], **kw: Any) -> list[Any]:
    it = Interpreter(model, **kw)
    for i, x in enumerate(inputs):
        it.set_input(x, i)
    it.invoke()
    return [it.get_output(i) for i in range(len(it.model.main.outputs))]


def optimize_and_verify(model: Model | Source, output: str | None = None, target_bytes: int | None = None,
                        storage: str = "memory", *, report: str | None = None, seed: int = 0) -> dict[str, Any]:
    """:func:`optimize`, the result written to ``output``, and a check that the written model, run with
    ``storage``, gives the original's outputs on random inputs. ``report`` writes an HTML page with the steps,
    the plans before and after and the latency breakdown. Output paths are checked before the (long) search."""
    for path in (output, report):
        if path is not None:
            check_writable(path)
    m = model if isinstance(model, Model) else read(model)
    res = optimize(m, target_bytes, storage)
    out = res.as_dict()
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
    if report is not None:
        models = {"base": res.steps[0].model, "+ temporary tensor reduction": res.steps[0].model,
                  "+ spilling": optimize(m, target_bytes, storage, fuse=False).model,
                  "+ fused fetching": res.model}
        out["report"] = str(write_report(report, m, res, breakdown(models), out["verified"]))
    return out
