"""Schedule templates (generated kernels) and apply-best of tuning logs.

A template module turns a layer's shape and a config of knobs into one C function that takes the same argument
words as the generic kernel it replaces (``shape_of(symbol, args)`` says whether a task is one it covers). A
tuning log (``micronn.micro.tune``) records measured configs per target and layer shape; ``apply`` swaps every
covered task of a lowered model for the best verified config of its shape, and returns the generated sources to
compile beside ``lower.sources()``. Tasks without a logged shape (or a log for another target) stay as they are.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any

from micronn.errors import MicronnError
from micronn.micro import lower
from micronn.micro.templates import (
    add,
    conv_2d,
    conv_2d_1x1,
    conv_2d_1x1_s16,
    conv_2d_s16,
    depthwise_conv_2d,
    fully_connected,
    mul,
    pool_2d,
    softmax,
    svdf,
)
from micronn.micro.toolchain import cache_dir

# conv_2d after conv_2d_1x1 (and conv_2d_s16 after conv_2d_1x1_s16): the 1x1 templates keep the layers they cover
TEMPLATES = {conv_2d_1x1.NAME: conv_2d_1x1, depthwise_conv_2d.NAME: depthwise_conv_2d, conv_2d.NAME: conv_2d,
             svdf.NAME: svdf, fully_connected.NAME: fully_connected, conv_2d_1x1_s16.NAME: conv_2d_1x1_s16,
             conv_2d_s16.NAME: conv_2d_s16, pool_2d.NAME: pool_2d, add.NAME: add,
             mul.NAME: mul, softmax.NAME: softmax}
LOG_VERSION = 1


class TuningLogError(MicronnError):
    """A tuning log cannot be read: missing file, malformed JSON, records without their fields."""


Log = str | os.PathLike | list[dict[str, Any]]
SHIPPED = Path(__file__).resolve().parents[1] / "tuned"  # the logs micronn ships, one per model and target
AUTO = "auto"  # as a log: every shipped log (apply-best keeps each target's own records)


def load_log(log: Log) -> list[dict[str, Any]]:
    """The records of a tuning log: a path to a JSON-lines file (or a JSON list), the records themselves, or
    ``"auto"``: every log shipped in ``micronn/micro/tuned/``."""
    if isinstance(log, str) and log == AUTO:
        return [r for path in sorted(SHIPPED.glob("*.json")) for r in load_log(path)]
    if isinstance(log, list):
        records = log
    else:
        path = Path(log)
        try:
            text = path.read_text()
        except OSError as e:
            raise TuningLogError(f"cannot read tuning log {path}: {e.strerror or e}") from e
        try:
            if text.lstrip().startswith("["):
                records = json.loads(text)
            else:
                lines = [line for line in text.splitlines() if line.strip()]
                cut = not text.endswith("\n")  # records end in a newline: a run killed mid-write leaves none
                records = [json.loads(line) for line in (lines[:-1] if cut else lines)]
                if cut and lines:
                    try:
                        records.append(json.loads(lines[-1]))
                    except json.JSONDecodeError:  # its last record is lost, not the log
                        warnings.warn(f"tuning log {path}: dropped its last line, cut short (a killed run?)",
                                      UserWarning, stacklevel=2)
        except json.JSONDecodeError as e:
            raise TuningLogError(f"tuning log {path} is not JSON lines: {e}") from e
    need = ("target", "template", "key", "config", "instructions", "verified")
    for i, r in enumerate(records):
        if not isinstance(r, dict) or any(k not in r for k in need):
            raise TuningLogError(f"record {i} of the tuning log lacks some of {', '.join(need)}: {r!r}")
    return records


def best(records: list[dict[str, Any]], target: str) -> dict[tuple[str, str], dict[str, Any]]:
    """(template, shape key) -> the verified record of ``target`` with the fewest instructions, among those that
    beat the generic kernel where the log measured it (``baseline_instructions``)."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for r in records:
        t = TEMPLATES.get(r["template"])
        if t is None or r["target"] != target or not r["verified"] or r["instructions"] is None:
            continue
        if r.get("version", t.VERSION) != t.VERSION:  # measured on code the template no longer writes
            continue
        base = r.get("baseline_instructions")
        if base is not None and r["instructions"] >= base:
            continue
        k = (r["template"], r["key"])
        if k not in out or r["instructions"] < out[k]["instructions"]:
            out[k] = r
    return out


def write_source(symbol: str, text: str) -> Path:
    """The generated source as a file (under the build cache, named by its symbol, which hashes its config)."""
    d = cache_dir() / "generated"
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{symbol}.c"
    if not path.exists() or path.read_text() != text:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
    return path


def covered(task: lower.Task) -> tuple[Any, Any] | None:
    """(template module, shape) of the first template that covers ``task``, or None."""
    for t in TEMPLATES.values():
        shape = t.shape_of(task.symbol, task.args)
        if shape is not None:
            return t, shape
    return None


# Targets that run the records of another: the Cortex-M7 and M33 execute the M4's instruction set (Thumb-2 with the
# DSP extension), so a config verified on the M4 compiles to correct code there; its measured count is the M4's and
# the M4's best need not be theirs, so a target's own records, where a log has them, win shape by shape.
TWINS = {"cortex-m7": "cortex-m4", "cortex-m33": "cortex-m4"}


def best_for(records: list[dict[str, Any]], target: str) -> dict[tuple[str, str], dict[str, Any]]:
    """``best`` for ``target``, shapes it has no records of taken from its twin in ``TWINS``."""
    own = best(records, target)
    return {**best(records, TWINS[target]), **own} if target in TWINS else own


def apply(tasks: list[lower.Task], log: Log, target: str) -> tuple[list[lower.Task], list[Path], list[dict]]:
    """Tasks with every covered one whose shape ``log`` tuned for ``target`` calling its generated kernel; the
    generated sources; what was applied (op index, template, key, config, symbol)."""
    chosen = best_for(load_log(log), target)
    out, sources, applied, seen = [], [], [], {}
    for task in tasks:
        hit = covered(task)
        rec = chosen.get((hit[0].NAME, hit[1].key)) if hit else None
        if rec is None:
            out.append(task)
            continue
        t, shape = hit
        try:
            config = t.check_config(rec["config"])
        except (TypeError, ValueError) as e:  # a hand-edited or foreign log: say which record, not a traceback
            raise TuningLogError(f"tuning log record for {shape.key} on {rec['target']}: {e}") from e
        name, text = t.generate(shape, config)
        if name not in seen:
            seen[name] = write_source(name, text)
            sources.append(seen[name])
        out.append(lower.Task(name, list(task.args), task.op))
        applied.append({"op": task.op, "template": t.NAME, "key": shape.key, "config": config, "symbol": name,
                        "instructions": rec["instructions"], "baseline_instructions": rec.get("baseline_instructions"),
                        "measured_on": rec["target"]})
    return out, sources, applied
