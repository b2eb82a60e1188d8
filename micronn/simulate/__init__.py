"""Running models on the host, exactly as TFLM would: ``run`` (one invoke with outputs, arena and an optional per-op
profile) and ``demo`` (micronn's main job on bundled data), ``keyword`` (micro_speech from audio). Batched and compiled
execution land here."""

from micronn.simulate.audio import audio_features, keyword, read_wav
from micronn.simulate.run import check_output, demo, load_inputs, run, save_outputs

__all__ = ["audio_features", "check_output", "demo", "keyword", "load_inputs", "read_wav", "run", "save_outputs"]
