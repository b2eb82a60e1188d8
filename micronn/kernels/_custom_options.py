"""Custom operators' options: FlexBuffer maps (TinySeg's Spill/Fetch, TFLM's signal library and detection ops)."""

from __future__ import annotations

from typing import Any

from flatbuffers import flexbuffers

from micronn.kernels.base import Node


def custom_options(**options: Any) -> bytes:
    """Encode custom-op options as a FlexBuffer map (TinySeg's ops, tests of TFLM's custom ops)."""
    return bytes(flexbuffers.Dumps(options))


def _fits(value: Any, kind: type) -> bool:
    if kind is list:  # lists are lists of ints
        return isinstance(value, list) and all(_fits(v, int) for v in value)
    if kind is bool:  # converters write flags as bools or as ints
        return isinstance(value, (bool, int))
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, kind) and not isinstance(value, bool)


def read_options(node: Node, kinds: dict[str, type], defaults: dict[str, Any] | None = None) -> dict[str, Any]:
    """Decode ``node``'s FlexBuffer custom options: every name in ``kinds`` must be there with that type
    (``list``: a list of ints) unless ``defaults`` gives it a value; unknown names are ignored."""
    raw = node.op.custom_options
    try:
        opts = flexbuffers.Loads(bytes(raw)) if raw else None
    except Exception as e:  # a corrupt FlexBuffer fails in many ways inside the decoder
        raise node.fail(f"custom options are not a valid FlexBuffer: {type(e).__name__}: {e}") from e
    if not isinstance(opts, dict):
        raise node.fail("custom options must be a FlexBuffer map")
    out = dict(defaults or {})
    for name, kind in kinds.items():
        if name not in opts and name not in out:
            raise node.fail(f"custom option {name!r} is missing")
        if name in opts and not _fits(opts[name], kind):
            what = "a list of ints" if kind is list else kind.__name__
            raise node.fail(f"custom option {name!r} = {opts[name]!r} is not {what}")
        out[name] = opts.get(name, out.get(name))
    return out
