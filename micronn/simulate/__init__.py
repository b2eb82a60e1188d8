"""Running models on the host, exactly as TFLM would: ``run`` (one invoke with outputs, arena and an optional per-op
profile) and ``demo`` (micronn's main job on bundled data). Batched and compiled execution land here."""

from micronn.simulate.run import demo, run

__all__ = ["demo", "run"]
