"""``evaluate``: metrics checked against counts made by hand, every data source and label form, float inputs
quantized as TFLM rounds, disagreements with a float model, and the HTML report parsed."""

from __future__ import annotations

import json
import wave
from html.parser import HTMLParser
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
from conftest import model_bytes, model_path

from micronn.errors import MicronnError
from micronn.simulate import evaluate, keyword, write_eval_report
from micronn.simulate.audio import bundled_audio
from micronn.simulate.evaluate import _ranked
from micronn.testing import T, op_model

AUDIO = Path("/work/shared/models/audio")


def scorer(classes: int = 4, dtype: str = "int8", scale: float = 0.5) -> bytes:
    """A classifier whose scores are its input: RESHAPE of a (1, classes) tensor, so every prediction is chosen by
    the test's data."""
    q = dict(scale=scale, zero_point=0) if dtype != "float32" else {}
    return op_model("RESHAPE", [T((1, classes), dtype, **q)], [T((1, classes), dtype, **q)])


def test_metrics_match_counts_by_hand() -> None:
    rng = np.random.default_rng(0)
    x = rng.integers(-128, 128, (200, 4), dtype=np.int8)
    y = rng.integers(0, 4, 200)
    ev = evaluate(scorer(), x, y, top_k=(1, 2, 3, 9), progress=False, batch=16)
    pred = np.argmax(x, axis=1)
    assert ev.samples == 200 and ev.predictions.tolist() == pred.tolist()
    order = [sorted(range(4), key=lambda c, r=r: (-int(r[c]), c)) for r in x]  # ties: lower index first
    for k in (1, 2, 3):
        assert ev.top_k[k] == sum(int(y[i]) in order[i][:k] for i in range(200)) / 200
    assert 9 not in ev.top_k and ev.accuracy == ev.top_k[1]
    for t in range(4):
        for p in range(4):
            assert ev.confusion[t, p] == sum(1 for a, b in zip(y, pred) if a == t and b == p)
        tp = ev.confusion[t, t]
        assert ev.precision[t] == pytest.approx(tp / (pred == t).sum())
        assert ev.recall[t] == pytest.approx(tp / (y == t).sum())
    d = json.loads(json.dumps(ev.to_dict()))
    assert d["top_k"]["1"] == ev.accuracy and d["confusion"] == ev.confusion.tolist()
    assert d["label_counts"] == np.bincount(y, minlength=4).tolist() and "float" not in d
    text = str(ev)
    assert "top-1" in text and "confusion" in text and f"{ev.accuracy:.2%}" in text


def test_ties_rank_by_index_and_int8_extremes() -> None:
    s = np.array([[-128, 127, 127, -128], [5, 5, 5, 5], [-128, -128, -127, -128]], np.int8)
    assert _ranked(s).tolist() == [[1, 2, 0, 3], [0, 1, 2, 3], [2, 0, 1, 3]]
    f = np.array([[np.nan, 0.5, 1.0]], np.float32)
    assert _ranked(f).tolist() == [[2, 1, 0]]


def test_float_values_are_quantized_with_halves_away_from_zero() -> None:
    x = np.array([[0.25, -0.25, 0.75, 100.0], [-100, 0.2, -0.74, 0.0]], np.float32)  # scale 0.5
    ev = evaluate(scorer(), x, progress=False)
    assert ev.scores.tolist() == [[1, -1, 2, 127], [-128, 0, -1, 0]]
    with pytest.raises(MicronnError, match="sample 1 holds NaN"):
        evaluate(scorer(), np.array([[0, 0, 0, 0], [0, np.nan, 0, 0]], np.float32), progress=False)
    with pytest.raises(MicronnError, match=r"do not fit input .*pixel - 128"):
        evaluate(scorer(), np.full((2, 4), 200, np.uint8), progress=False)
    ev = evaluate(scorer(), np.array([[1, 2, 3, -4]], np.int64), progress=False)  # integers that fit are cast
    assert ev.scores.tolist() == [[1, 2, 3, -4]]


def test_disagreements_with_the_float_model() -> None:
    """0.26 and 0.30 both quantize to 1 (scale 0.5): the tie goes to class 0, the float model picks class 1."""
    x = np.array([[0.26, 0.30, 0, 0], [1.0, 0.2, 0, 0], [0, 0, 0.1, 0.9], [0.1, 0.0, 0.70, 0.74]], np.float32)
    ev = evaluate(scorer(), x, [1, 0, 3, 3], float_model=scorer(dtype="float32"), progress=False)
    assert ev.predictions.tolist() == [0, 0, 3, 2] and ev.float_predictions.tolist() == [1, 0, 3, 3]
    assert ev.disagreements == [0, 3] and ev.agreement == 0.5
    assert ev.accuracy == 0.5 and ev.float_top_k[1] == 1.0
    assert ev.to_dict()["float"]["disagreements"] == [0, 3]
    assert "2 disagreement(s): samples 0, 3" in str(ev)
    # integer data: the float model gets it dequantized with the quantized input's scale
    ints = np.array([[2, 3, 0, 0]], np.int8)
    ev = evaluate(scorer(), ints, float_model=scorer(dtype="float32"), progress=False)
    assert ev.disagreements == [] and ev.float_predictions.tolist() == [1]
    with pytest.raises(MicronnError, match="do not score the same classes"):
        evaluate(scorer(), ints, float_model=scorer(classes=3, dtype="float32"), progress=False)


def test_npy_npz_and_label_files(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    x = rng.integers(-128, 128, (30, 1, 4), dtype=np.int8)
    y = rng.integers(0, 4, 30)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    np.save(tmp_path / "onehot.npy", np.eye(4)[y])
    (tmp_path / "y.txt").write_text("\n".join(map(str, y)) + "\n")
    (tmp_path / "y.csv").write_text("label\n" + "\n".join(map(str, y)) + "\n")
    np.savez(tmp_path / "xy.npz", x=x, y=y)
    np.savez(tmp_path / "arr.npz", x)
    reference = evaluate(scorer(), x, y, progress=False)
    for data, labels in ((tmp_path / "x.npy", tmp_path / "y.npy"), (tmp_path / "x.npy", tmp_path / "onehot.npy"),
                         (tmp_path / "x.npy", tmp_path / "y.txt"), (str(tmp_path / "x.npy"), str(tmp_path / "y.csv")),
                         (tmp_path / "xy.npz", None), (tmp_path / "arr.npz", y), (x, ",".join(map(str, y)))):
        ev = evaluate(scorer(), data, labels, progress=False, batch=7)
        assert ev.confusion.tolist() == reference.confusion.tolist() and ev.top_k == reference.top_k
    named = evaluate(scorer(), x, [("a", "b", "c", "d")[v] for v in y], progress=False)
    assert named.classes == ["a", "b", "c", "d"] and named.top_k == reference.top_k
    with pytest.raises(MicronnError, match="29 labels for 30 samples"):
        evaluate(scorer(), x, y[:29], progress=False)
    with pytest.raises(MicronnError, match="outside the model's 4 classes"):
        evaluate(scorer(), x, y + 4, progress=False)
    with pytest.raises(MicronnError, match="name 2 classes .* scores 4"):
        evaluate(scorer(), x[:2], ["cat", "dog"], progress=False)
    with pytest.raises(MicronnError, match="'emu' name no class"):
        evaluate(scorer(), x[:2], ["cat", "emu"], classes=["cat", "dog", "cow", "pig"], progress=False)
    with pytest.raises(MicronnError, match="no labels file"):
        evaluate(scorer(), x, tmp_path / "missing.npy", progress=False)
    np.savez(tmp_path / "odd.npz", a=x, b=x)
    with pytest.raises(MicronnError, match=r"holds \['a', 'b'\]"):
        evaluate(scorer(), tmp_path / "odd.npz", progress=False)
    with pytest.raises(MicronnError, match="expects int8"):
        evaluate(scorer(), np.zeros((3, 5), np.int8), progress=False)


def bundled_pixels(name: str) -> np.ndarray:
    return np.load(resources.files("micronn.data").joinpath(f"{name}.npy").open("rb")).reshape(96, 96)


def test_image_folder_with_class_folders(tmp_path: Path) -> None:
    """person_detect on the bundled photos saved as PNG (exact) and as larger BMPs (resized): class folders are
    labels, pixels go in as pixel - 128 (``micronn demo``'s values)."""
    image = pytest.importorskip("PIL.Image", reason="reading images needs Pillow")
    for name in ("person", "no_person"):
        (tmp_path / name).mkdir()
        image.fromarray(bundled_pixels(name)).save(tmp_path / name / "a.png")
        image.fromarray(bundled_pixels(name)).resize((128, 128)).convert("RGB").save(tmp_path / name / "b.bmp")
    (tmp_path / "person" / "notes.txt").write_text("ignored")
    ev = evaluate(model_path("person_detect"), tmp_path, progress=False)
    assert ev.classes == ["no_person", "person"] and ev.labels.tolist() == [0, 0, 1, 1]
    assert ev.names == ["no_person/a.png", "no_person/b.bmp", "person/a.png", "person/b.bmp"]
    assert ev.accuracy == 1.0 and ev.confusion.tolist() == [[2, 0], [0, 2]]
    for k, name in ((0, "no_person"), (2, "person")):  # the PNGs give exactly demo's input
        x = (bundled_pixels(name).astype(np.int16) - 128).astype(np.int8).reshape(1, 96, 96, 1)
        alone = evaluate(model_path("person_detect"), x[None], progress=False)
        assert ev.scores[k].tolist() == alone.scores[0].tolist()
    (tmp_path / "labels.csv").write_text("file,label\nperson/a.png,1\nperson/b.bmp,0\nno_person/a.png,0\n"
                                         "no_person/b.bmp,0\n")
    ev = evaluate(model_path("person_detect"), tmp_path, tmp_path / "labels.csv", progress=False)
    assert ev.labels.tolist() == [0, 0, 1, 0] and ev.accuracy == 0.75
    (tmp_path / "loose.png").write_bytes((tmp_path / "person" / "a.png").read_bytes())
    with pytest.raises(MicronnError, match="loose files"):
        evaluate(model_path("person_detect"), tmp_path, progress=False)
    (tmp_path / "loose.png").unlink()
    (tmp_path / "person" / "bad.png").write_text("not an image")
    with pytest.raises(MicronnError, match="cannot read image"):
        evaluate(model_path("person_detect"), tmp_path, progress=False)


def test_wav_folder_through_the_audio_front_end(tmp_path: Path) -> None:
    labels = ["no", "silence", "yes"]
    for name in labels:
        (tmp_path / name).mkdir()
        with wave.open(str(tmp_path / name / f"{name}.wav"), "wb") as w:
            w.setnchannels(1), w.setsampwidth(2), w.setframerate(16000)
            w.writeframes(bundled_audio(name).tobytes())
    ev = evaluate(model_path("micro_speech_quantized"), tmp_path, classes=["silence", "unknown", "yes", "no"],
                  progress=False)
    assert [ev.classes[p] for p in ev.predictions] == [keyword(n)["keyword"] for n in labels]
    assert ev.scores[2].tolist() == keyword("yes")["raw_scores"].tolist()
    assert ev.accuracy == 1.0
    with pytest.raises(MicronnError, match="49x40 int8 features"):
        evaluate(model_path("person_detect"), tmp_path, progress=False)


def test_folder_errors(tmp_path: Path) -> None:
    with pytest.raises(MicronnError, match="no data at"):
        evaluate(model_bytes("hello_world_int8"), tmp_path / "nothing", progress=False)
    with pytest.raises(MicronnError, match="holds no images"):
        evaluate(model_bytes("hello_world_int8"), tmp_path, progress=False)
    np.save(tmp_path / "a.npy", np.zeros((1, 1), np.int8))
    (tmp_path / "b.wav").write_bytes(b"")
    with pytest.raises(MicronnError, match="mixes"):
        evaluate(model_bytes("hello_world_int8"), tmp_path, progress=False)
    (tmp_path / "b.wav").unlink()
    np.save(tmp_path / "b.npy", np.ones((1, 1), np.int8))
    assert evaluate(model_bytes("hello_world_int8"), tmp_path, progress=False).samples == 2


class _Page(HTMLParser):
    """Element ids, and the cells of each table, of an HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: dict[str, str] = {}
        self.tables: dict[str, list[list[str]]] = {}
        self._table: str | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        if "id" in a:
            self.ids[a["id"]] = tag
        if tag == "table":
            self._table = a.get("id", "")
            self.tables[self._table] = []
        elif tag == "tr" and self._table is not None:
            self.tables[self._table].append([])

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._table = None

    def handle_data(self, data: str) -> None:
        if self._table is not None and self.tables[self._table] and data.strip():
            self.tables[self._table][-1].append(data.strip())


def test_html_report(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the report draws with matplotlib")
    x = np.array([[0.26, 0.30, 0, 0], [1.0, 0.2, 0, 0], [0, 0, 0.1, 0.9], [0.1, 0.0, 0.70, 0.74]], np.float32)
    ev = evaluate(scorer(), x, [1, 0, 3, 3], float_model=scorer(dtype="float32"), progress=False,
                  classes=["ant", "bee", "cat", "dog"])
    page = _Page()
    page.feed(write_eval_report(ev, tmp_path / "r.html").read_text())
    assert page.ids["confusion"] == "svg" and page.ids["per-class"] == "svg"
    summary = dict(r for r in page.tables["summary"] if len(r) == 2)
    assert summary["samples"] == "4" and summary["top-1 accuracy"] == "50.00%"
    assert [r[0] for r in page.tables["classes"][1:]] == ["ant", "bee", "cat", "dog"]
    assert page.tables["disagreements"][1:] == [["0", "ant", "bee", "bee"], ["3", "cat", "dog", "dog"]]
    text = (tmp_path / "r.html").read_text()
    assert not any(f'{a}="http' in text or f"{a}='http" in text for a in ("src", "href"))  # nothing fetched
    unlabeled = evaluate(scorer(), x, progress=False)
    page = _Page()
    page.feed(write_eval_report(unlabeled, tmp_path / "u.html").read_text())
    assert page.ids["predicted"] == "svg" and "confusion" not in page.ids
