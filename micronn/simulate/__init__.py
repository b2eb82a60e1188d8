"""Running models on the host, exactly as TFLM would: ``run`` (one invoke with outputs, arena and an optional per-op
profile) and ``demo`` (micronn's main job on bundled data). Batched and compiled execution land here."""

from micronn.simulate.run import check_output, demo, load_inputs, run, save_outputs

__all__ = ["check_output", "demo", "load_inputs", "run", "save_outputs"]
