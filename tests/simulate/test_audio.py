"""micro_speech end to end (audio -> signal-library front end -> keyword), byte-identical to the TFLM wheel."""

from __future__ import annotations

import wave
from pathlib import Path

import numpy as np
import pytest

from micronn.errors import MicronnError
from micronn.models import bundled_model
from micronn.simulate import audio_features, keyword, read_wav
from micronn.simulate.audio import FRAMES, HOP, WINDOW, bundled_audio
from micronn.testing import run_tflm


def tflm_features(samples: np.ndarray) -> np.ndarray:
    """The wheel's features: one interpreter over the 49 frames, as TFLM's micro_speech example runs it."""
    from tflite_micro.python.tflite_micro import runtime

    it = runtime.Interpreter.from_bytes(bundled_model("audio_preprocessor_int8"), arena_size=1 << 16)
    frames = []
    for i in range(FRAMES):
        it.set_input(samples[i * HOP:i * HOP + WINDOW].reshape(1, WINDOW), 0)
        it.invoke()
        frames.append(np.array(it.get_output(0), copy=True))
    return np.stack(frames)


@pytest.mark.parametrize("name,expected", [("yes", "yes"), ("no", "no"), ("silence", "silence"),
                                           ("noise", "silence")])
def test_keyword_features_and_scores_match_tflm(name: str, expected: str) -> None:
    res = keyword(name)
    features = tflm_features(bundled_audio(name))
    assert res["features"].tobytes() == features.tobytes()
    scores = run_tflm(bundled_model("micro_speech_quantized"), [features.reshape(1, -1)])[0]
    assert res["raw_scores"].tobytes() == scores.tobytes()
    assert res["keyword"] == expected


def test_random_audio_matches_tflm() -> None:
    """Loud random audio drives the front end's scaling and noise tracking to their limits."""
    samples = np.random.default_rng(3).integers(-32768, 32768, 16000).astype(np.int16)
    assert audio_features(samples).tobytes() == tflm_features(samples).tobytes()


def test_wav_paths_and_bad_audio(tmp_path: Path) -> None:
    path = tmp_path / "tone.wav"
    tone = (8000 * np.sin(np.arange(16000) * 0.3)).astype(np.int16)
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(16000), w.writeframes(tone.tobytes())
    assert read_wav(path).tobytes() == tone.tobytes()
    assert keyword(str(path))["audio"] == str(path)
    stereo = tmp_path / "stereo.wav"
    with wave.open(str(stereo), "wb") as w:
        w.setnchannels(2), w.setsampwidth(2), w.setframerate(16000), w.writeframes(bytes(400))
    with pytest.raises(MicronnError, match="16-bit mono"):
        read_wav(stereo)
    (tmp_path / "text.wav").write_text("not audio")
    with pytest.raises(MicronnError, match="not a valid .wav"):
        read_wav(tmp_path / "text.wav")
    with pytest.raises(MicronnError, match="at least"):
        audio_features(tone[:1000])
    with pytest.raises(MicronnError, match="no bundled recording"):
        bundled_audio("maybe")
