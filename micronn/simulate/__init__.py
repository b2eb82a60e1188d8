"""Running models on the host, exactly as TFLM would: ``run`` (one invoke with outputs, arena and an optional per-op
profile), ``simulate`` (many samples, in chunks, in-process or on Ray, byte-identical to one invoke each),
``evaluate`` (accuracy, confusion matrix and float-model disagreements over a data set), ``demo`` (micronn's main
job on bundled data) and ``keyword`` (micro_speech from audio). ``simulate`` and ``evaluate`` run the device's C
kernels compiled for the host where they can (``backend="auto"``; ``micronn.simulate.batch``), with the numpy
interpreter as fallback and reference."""

from micronn.simulate.audio import audio_features, keyword, read_wav
from micronn.simulate.batch import simulate
from micronn.simulate.evaluate import Evaluation, evaluate
from micronn.simulate.report import eval_html, write_eval_report
from micronn.simulate.run import check_output, demo, load_inputs, run, save_outputs

__all__ = ["Evaluation", "audio_features", "check_output", "demo", "eval_html", "evaluate", "keyword", "load_inputs",
           "read_wav", "run", "save_outputs", "simulate", "write_eval_report"]
