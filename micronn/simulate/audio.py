"""micro_speech end to end: 1 s of 16 kHz audio through TFLM's audio front end into the keyword model.

TFLM's micro_speech example computes its features with the signal library: ``audio_preprocessor_int8`` turns
each 30 ms window (480 samples, hopping by 20 ms) into 40 int8 filterbank features, keeping noise estimates
from frame to frame, so one interpreter sees the frames in order. 49 frames make ``micro_speech_quantized``'s
1x1960 input; its four int8 scores (scale 1/256) name the keyword.
"""

from __future__ import annotations

import os
import wave
from importlib import resources
from typing import Any

import numpy as np

from micronn.errors import MicronnError
from micronn.interpreter import Interpreter
from micronn.models import bundled_model

SAMPLE_RATE = 16_000
WINDOW, HOP = 480, 320  # 30 ms frames every 20 ms
FRAMES = 1 + (SAMPLE_RATE - WINDOW) // HOP  # 49 in one second
LABELS = ("silence", "unknown", "yes", "no")
BUNDLED_AUDIO = ("yes", "no", "silence", "noise")


def read_wav(path: str | os.PathLike[str]) -> np.ndarray:
    """The samples of a 16 kHz, 16-bit mono PCM .wav file as int16."""
    name = os.fspath(path)
    try:
        with wave.open(name, "rb") as w:
            shape = (w.getnchannels(), w.getsampwidth(), w.getframerate())
            if shape != (1, 2, SAMPLE_RATE):
                raise MicronnError(f"audio {name!r} is {shape[0]} channel(s) of {8 * shape[1]}-bit samples at "
                                   f"{shape[2]} Hz; micro_speech needs 16-bit mono at {SAMPLE_RATE} Hz")
            return np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.int16)
    except OSError as e:
        raise MicronnError(f"cannot read audio {name!r}: {e.strerror or e}") from e
    except (wave.Error, EOFError) as e:
        raise MicronnError(f"audio {name!r} is not a valid .wav file: {e or 'truncated'}") from e


def bundled_audio(name: str) -> np.ndarray:
    """One of the four recordings of TFLM's micro_speech example shipped with micronn."""
    if name not in BUNDLED_AUDIO:
        raise MicronnError(f"no bundled recording {name!r}: bundled are {', '.join(BUNDLED_AUDIO)}")
    with resources.as_file(resources.files("micronn.data").joinpath(f"{name}_1000ms.wav")) as p:
        return read_wav(p)


def audio_features(samples: np.ndarray, preprocessor: bytes | None = None) -> np.ndarray:
    """49x40 int8 features of one second of int16 audio, frame by frame through one front-end interpreter."""
    samples = np.asarray(samples)
    if samples.dtype != np.int16 or samples.ndim != 1 or samples.size < WINDOW + (FRAMES - 1) * HOP:
        raise MicronnError(f"audio must be at least {WINDOW + (FRAMES - 1) * HOP} int16 samples "
                           f"(1 s at {SAMPLE_RATE} Hz), got {samples.dtype} of shape {samples.shape}")
    it = Interpreter(preprocessor if preprocessor is not None else bundled_model("audio_preprocessor_int8"))
    it.allocate_tensors()
    frames = []
    for i in range(FRAMES):
        it.set_input(samples[i * HOP:i * HOP + WINDOW].reshape(1, WINDOW))
        it.invoke()
        frames.append(it.get_output(0).copy())
    return np.stack(frames)


def keyword(audio: str | os.PathLike[str] | np.ndarray = "yes") -> dict[str, Any]:
    """The keyword micro_speech hears in ``audio``: a bundled recording's name, a .wav path or int16 samples."""
    if isinstance(audio, np.ndarray):
        samples, name = audio, "samples"
    elif isinstance(audio, str) and audio in BUNDLED_AUDIO:
        samples, name = bundled_audio(audio), audio
    else:
        samples, name = read_wav(audio), os.fspath(audio)
    feats = audio_features(samples)
    it = Interpreter(bundled_model("micro_speech_quantized"))
    it.allocate_tensors()
    it.set_input(feats.reshape(1, -1))
    it.invoke()
    q = it.get_output(0).ravel()
    scores = (q.astype(np.float64) + 128) / 256  # output scale 1/256, zero point -128
    best = int(np.argmax(q))
    return {"audio": name, "keyword": LABELS[best], "scores": dict(zip(LABELS, map(float, scores))),
            "features": feats, "raw_scores": q}
