"""What every template shares: checking a config against its knobs."""

from __future__ import annotations


def check_config(name: str, knobs: dict[str, tuple[int, ...]], config: dict[str, int]) -> dict[str, int]:
    """``config`` with every knob of template ``name`` present and in range (raises ValueError otherwise)."""
    if set(config) != set(knobs):
        raise ValueError(f"a {name} config has the knobs {', '.join(knobs)}; got {', '.join(sorted(config))}")
    for k, values in knobs.items():
        if config[k] not in values:
            raise ValueError(f"knob {k} of {name} takes {values}, got {config[k]!r}")
    return {k: int(config[k]) for k in knobs}
