"""Data sets for ``micronn eval``: where samples and labels come from, and how values become a model's inputs.

Sources (``load_data``):

* ``.npy``: samples stacked along axis 0 (``N x input shape``, or ``N x`` the shape without its leading 1), for
  models with one input; memory-mapped, so only a chunk is read at a time;
* ``.npz``: key ``x`` (one input) or one array per model input, keyed ``arr_0``, ``arr_1``, ... (``numpy.savez``'s
  names) or by the inputs' tensor names; an optional ``y`` holds the labels;
* a folder of images (PNG, JPEG, BMP, PGM/PPM; read with Pillow), resized to the model's input (bilinear),
  grayscale for one channel, RGB for three; a folder of 16 kHz 16-bit mono ``.wav`` clips for micro_speech-like
  models (1960 int8 features in, computed by ``micronn.simulate.audio``); or a folder of ``.npy`` files, one
  sample each. Sub-folders are classes (their names are the labels); files are taken in sorted order;
* Python: a numpy array (stacked), a tuple of them (one per input) or any iterable of samples.

Values become inputs as TFLM's examples feed them: float values are quantized with the input's scale and zero point
(``round(x / scale) + zero_point``, halves away from zero, as TFLM's QUANTIZE rounds; then clamped); integers of
the input's type go in unchanged; image pixels (0..255) go in as ``pixel - 128`` for int8 inputs (TFLM's
person-detection example), as they are for uint8 and as ``pixel / 255`` for float inputs. A float model compared
against a quantized one gets the float values, or the quantized model's integer inputs dequantized.
"""

from __future__ import annotations

import csv
import dataclasses
import os
import re
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from micronn.errors import MicronnError
from micronn.ir import Tensor
from micronn.quant import dtype_range, tflite_round

IMAGE_EXTENSIONS = frozenset({".png", ".jpg", ".jpeg", ".bmp", ".pgm", ".ppm"})
_INLINE_LABELS = re.compile(r"^[\w\- ]+(,[\w\- ]*)*$")


@dataclasses.dataclass
class Dataset:
    """Samples (raw values, chunked by :func:`chunks`) and what is known about them."""

    samples: Any  # a stacked array, a tuple of them, or an iterable of samples
    count: int | None  # None: an iterable of unknown length
    labels: np.ndarray | None = None  # one class index per sample
    classes: list[str] | None = None  # class names in the model's output order (from class folders or classes=)
    names: list[str] | None = None  # the file of each sample (folders)
    kind: str = "arrays"
    raw_labels: list[str] | None = None  # labels as read (names or numbers), mapped once the classes are known


def load_data(source: Any, inputs: list[Tensor]) -> Dataset:
    """The samples of ``source`` for a model with input tensors ``inputs`` (see the module docstring)."""
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if os.path.isdir(path):
            return _folder(path, inputs)
        if not os.path.exists(path):
            raise MicronnError(f"no data at {path!r}")
        if path.endswith(".npz"):
            return _npz(path, inputs)
        if path.endswith(".npy"):
            x = _load_npy(path, mmap=True)
            return Dataset(x, len(x) if x.ndim else 0, kind="npy")
        raise MicronnError(f"data {path!r} is not a .npy, .npz or folder of images, .wav or .npy files")
    if isinstance(source, np.ndarray):
        return Dataset(source, len(source) if source.ndim else 0)
    if isinstance(source, tuple) and source and all(isinstance(x, np.ndarray) for x in source):
        return Dataset(source, len(source[0]))
    if isinstance(source, (bytes, dict)) or not isinstance(source, Iterable):
        raise MicronnError(f"data is a path, a numpy array, a tuple of arrays or an iterable of samples, not "
                           f"{type(source).__name__}")
    return Dataset(source, len(source) if hasattr(source, "__len__") else None)


def _load_npy(path: str, mmap: bool = False) -> np.ndarray:
    try:
        return np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except OSError as e:
        raise MicronnError(f"cannot read {path!r}: {e.strerror or e}") from e
    except (ValueError, EOFError) as e:
        why = "it holds Python objects, which micronn never unpickles" if "allow_pickle" in str(e) else str(e)
        raise MicronnError(f"{path!r} is not a valid .npy file: {why}") from e


def _npz(path: str, inputs: list[Tensor]) -> Dataset:
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except (OSError, ValueError, EOFError) as e:
        raise MicronnError(f"{path!r} is not a readable .npz file: {e}") from e
    y = arrays.pop("y", None)
    keys = list(arrays)
    if len(inputs) == 1 and "x" in arrays:
        xs: list[np.ndarray] = [arrays["x"]]
    elif all(f"arr_{i}" in arrays for i in range(len(inputs))):
        xs = [arrays[f"arr_{i}"] for i in range(len(inputs))]
    elif all(t.name in arrays for t in inputs):
        xs = [arrays[t.name] for t in inputs]
    elif len(inputs) == 1 and len(keys) == 1:
        xs = [arrays[keys[0]]]
    else:
        raise MicronnError(f"{path!r} holds {keys or 'no arrays'}: give the inputs as 'x' (one input), 'arr_0'... or "
                           f"the input names {[t.name for t in inputs]}, and the labels as 'y'")
    counts = {len(x) if x.ndim else 0 for x in xs}
    if len(counts) != 1:
        raise MicronnError(f"the inputs in {path!r} hold different numbers of samples")
    ds = Dataset(xs[0] if len(xs) == 1 else tuple(xs), counts.pop(), kind="npz")
    if y is not None:
        ds.labels = _label_array(y, f"'y' of {path!r}")
    return ds


def _folder(path: str, inputs: list[Tensor]) -> Dataset:
    entries = sorted(os.listdir(path))
    subdirs = [e for e in entries if os.path.isdir(os.path.join(path, e)) and not e.startswith(".")]
    files: list[tuple[str, str | None]] = []  # (relative path, class folder)
    for e in entries:
        if os.path.isfile(os.path.join(path, e)):
            files.append((e, None))
    for d in subdirs:
        for root, _dirs, names in sorted(os.walk(os.path.join(path, d))):
            _dirs.sort()
            for n in sorted(names):
                rel = os.path.relpath(os.path.join(root, n), path)
                files.append((rel, d))
    kinds = {_kind(f) for f, _ in files} - {None}
    if not kinds:
        raise MicronnError(f"the folder {path!r} holds no images ({', '.join(sorted(IMAGE_EXTENSIONS))}), .wav or "
                           ".npy files")
    if len(kinds) > 1:
        raise MicronnError(f"the folder {path!r} mixes {' and '.join(sorted(kinds))} files: keep one kind")
    kind = kinds.pop()
    files = [(f, c) for f, c in files if _kind(f) == kind]
    if subdirs and any(c is None for _, c in files):
        raise MicronnError(f"the folder {path!r} has class sub-folders and loose files beside them: move the files "
                           "into a class folder")
    if len(inputs) != 1:
        raise MicronnError(f"folders of {kind} feed models with one input; this model has {len(inputs)}")
    full = [os.path.join(path, f) for f, _ in files]
    load = {"image": _image_loader, "audio": _audio_loader, "npy": _npy_loader}[kind](inputs[0])
    ds = Dataset(_LazySamples(full, load), len(full), names=[f for f, _ in files], kind=kind + "s")
    if subdirs:
        ds.raw_labels = [c for _, c in files]  # type: ignore[misc]
    return ds


def _kind(name: str) -> str | None:
    ext = os.path.splitext(name)[1].lower()
    return "image" if ext in IMAGE_EXTENSIONS else "audio" if ext == ".wav" else "npy" if ext == ".npy" else None


class _LazySamples:
    """Files read one by one when iterated: a folder's samples never all sit in memory."""

    def __init__(self, paths: list[str], load: Any):
        self.paths, self.load = paths, load

    def __len__(self) -> int:
        return len(self.paths)

    def __iter__(self) -> Iterator[np.ndarray]:
        for p in self.paths:
            yield self.load(p)


def _image_loader(t: Tensor) -> Any:
    shape = tuple(t.shape)
    hwc = shape[1:] if len(shape) == 4 and shape[0] == 1 else shape
    if len(hwc) != 3 or hwc[2] not in (1, 3):
        raise MicronnError(f"images need an input of shape [1, height, width, 1 or 3]; this model's is {t.spec}")
    if t.dtype not in (np.int8, np.uint8, np.float32):
        raise MicronnError(f"images feed int8, uint8 or float32 inputs; this model's is {t.spec}")
    try:
        from PIL import Image, UnidentifiedImageError
    except ImportError as e:
        raise MicronnError("reading images needs Pillow: pip install 'micronn[eval]'") from e
    h, w, c = hwc

    def load(path: str) -> np.ndarray:
        try:
            with Image.open(path) as im:
                im = im.convert("L" if c == 1 else "RGB")
                if im.size != (w, h):
                    im = im.resize((w, h), Image.Resampling.BILINEAR)
                pixels = np.asarray(im, np.uint8).reshape(h, w, c)
        except (OSError, UnidentifiedImageError) as e:
            raise MicronnError(f"cannot read image {path!r}: {e}") from e
        return pixels_to_input(pixels, t)

    return load


def pixels_to_input(pixels: np.ndarray, t: Tensor) -> np.ndarray:
    """8-bit pixels as the input's values: ``p - 128`` for int8, ``p`` for uint8, ``p / 255`` for float32."""
    if t.dtype == np.int8:
        return (pixels.astype(np.int16) - 128).astype(np.int8)
    if t.dtype == np.uint8:
        return pixels
    return (pixels.astype(np.float32) / np.float32(255)).astype(t.dtype)


def _audio_loader(t: Tensor) -> Any:
    from micronn.simulate.audio import FRAMES, audio_features, read_wav

    if t.dtype != np.int8 or int(np.prod(t.shape)) != FRAMES * 40:
        raise MicronnError(f".wav clips become {FRAMES}x40 int8 features (micro_speech's front end); this model's "
                           f"input is {t.spec}")

    def load(path: str) -> np.ndarray:
        try:
            return audio_features(read_wav(path)).reshape(t.shape)
        except MicronnError as e:
            msg = str(e)
            raise MicronnError(msg if path in msg else f"{path!r}: {msg}") from e

    return load


def _npy_loader(t: Tensor) -> Any:
    return lambda path: _load_npy(path)


# -- labels ------------------------------------------------------------------------------------------------------

def read_labels(source: Any, names: list[str] | None = None) -> list[str] | np.ndarray:
    """Labels from a .npy, .txt (one per line) or .csv file, or an inline ``a,b,c`` list: class indices (an array)
    or names (a list of strings, mapped to classes later). A .csv with two or more columns whose first column names
    the files of a folder data set is matched by file name; otherwise its last column is taken in order."""
    if isinstance(source, np.ndarray):
        return _label_array(source, "labels")
    if isinstance(source, (list, tuple)):
        return _label_array(np.asarray(source), "labels") if all(
            isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in source) else [str(v) for v in source]
    if not isinstance(source, (str, os.PathLike)):
        raise MicronnError(f"labels are an array, a list or a path, not {type(source).__name__}")
    path = os.fspath(source)
    if not os.path.exists(path):
        if "," in path and _INLINE_LABELS.match(path):
            return _strings_or_ints([v.strip() for v in path.split(",")])
        raise MicronnError(f"no labels file {path!r}")
    if path.endswith(".npy"):
        return _label_array(_load_npy(path), f"labels {path!r}")
    try:
        with open(path, newline="", encoding="utf-8") as f:
            if path.endswith(".csv"):
                rows = [r for r in csv.reader(f) if r and any(c.strip() for c in r)]
            else:
                rows = [[line.strip()] for line in f if line.strip()]
    except (OSError, UnicodeDecodeError) as e:
        raise MicronnError(f"cannot read labels {path!r}: {e}") from e
    if rows and len(rows[0]) >= 2 and names is not None:
        by_file = {r[0].strip(): r[-1].strip() for r in rows}
        keyed = [by_file.get(n, by_file.get(os.path.basename(n))) for n in names]
        if all(v is not None for v in keyed):
            return _strings_or_ints(keyed)  # type: ignore[arg-type]
        missing = next(n for n, v in zip(names, keyed) if v is None)
        raise MicronnError(f"labels {path!r} name no label for {missing!r}")
    values = [r[-1].strip() for r in rows]
    if values and not _is_int(values[0]) and len(values) > 1 and all(_is_int(v) for v in values[1:]):
        values = values[1:]  # a header line
    return _strings_or_ints(values)


def _is_int(s: str) -> bool:
    return bool(re.fullmatch(r"[+-]?\d+", s))


def _strings_or_ints(values: list[str]) -> list[str] | np.ndarray:
    return np.array([int(v) for v in values], np.int64) if values and all(map(_is_int, values)) else values


def _label_array(y: np.ndarray, what: str) -> np.ndarray:
    """Class indices from integers (N,) or one-hot/score rows (N, C)."""
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] > 1:
        return np.argmax(y, axis=1).astype(np.int64)
    y = y.reshape(len(y), -1)[:, 0] if y.ndim == 2 else y
    if y.ndim != 1 or y.dtype.kind not in "iu" and not (y.dtype.kind == "f" and np.all(y == np.round(y))):
        raise MicronnError(f"{what} must be class indices (N,) or one-hot rows (N, classes), got "
                           f"{y.dtype.name}{list(y.shape)}")
    return y.astype(np.int64)


def class_indices(labels: list[str] | np.ndarray, classes: list[str] | None, n_classes: int,
                  what: str = "labels") -> tuple[np.ndarray, list[str]]:
    """Labels as class indices and the class names in output order.

    Integer labels are indices. Names map through ``classes`` (the names in the model's output order) when given;
    without it, names that are all integers are indices, and other names are sorted (as Keras orders class folders),
    which needs exactly one name per model output."""
    if classes is not None and len(classes) != n_classes:
        raise MicronnError(f"{len(classes)} class names given, but the model scores {n_classes} classes")
    names = list(classes) if classes is not None else [str(i) for i in range(n_classes)]
    if isinstance(labels, np.ndarray):
        idx = labels.astype(np.int64)
    else:
        if classes is not None:
            lookup = {c: i for i, c in enumerate(classes)}
        elif all(_is_int(v) for v in labels):
            lookup = {v: int(v) for v in labels}
        else:
            found = sorted(set(labels))
            if len(found) != n_classes:
                raise MicronnError(f"the {what} name {len(found)} classes ({', '.join(found)}) but the model scores "
                                   f"{n_classes}: give the names in output order (classes=[...], --classes a,b,...)")
            lookup = {c: i for i, c in enumerate(found)}
            names = found
        unknown = sorted({v for v in labels if v not in lookup})
        if unknown:
            raise MicronnError(f"{what} {', '.join(map(repr, unknown[:5]))} name no class of {names}")
        idx = np.array([lookup[v] for v in labels], np.int64)
    bad = np.flatnonzero((idx < 0) | (idx >= n_classes))
    if len(bad):
        raise MicronnError(f"{what}: sample {int(bad[0])} has class {int(idx[bad[0]])}, outside the model's "
                           f"{n_classes} classes")
    return idx, names


# -- values -> inputs --------------------------------------------------------------------------------------------

def chunks(samples: Any, inputs: list[Tensor], size: int) -> Iterator[list[np.ndarray]]:
    """Raw samples in chunks of at most ``size``: one array per input, ``(n, *input shape)``, values as given."""
    if isinstance(samples, np.ndarray) or isinstance(samples, tuple) and samples and all(
            isinstance(x, np.ndarray) for x in samples):
        stacked = (samples,) if isinstance(samples, np.ndarray) else samples
        if len(stacked) != len(inputs):
            raise MicronnError(f"the model has {len(inputs)} input(s), the data gives {len(stacked)}")
        arrays = [_shaped(x, t, i, None) for i, (x, t) in enumerate(zip(stacked, inputs))]
        for s in range(0, len(arrays[0]), size):
            yield [np.asarray(a[s:s + size]) for a in arrays]
        return
    chunk: list[list[np.ndarray]] = []
    for k, sample in enumerate(samples):
        parts = sample if isinstance(sample, (tuple, list)) and len(inputs) > 1 else [sample]
        if len(parts) != len(inputs):
            raise MicronnError(f"sample {k}: the model has {len(inputs)} input(s), the sample gives {len(parts)}")
        chunk.append([_shaped(np.asarray(x)[None], t, i, k)[0] for i, (x, t) in enumerate(zip(parts, inputs))])
        if len(chunk) == size:
            yield [np.stack(c) for c in zip(*chunk)]
            chunk = []
    if chunk:
        yield [np.stack(c) for c in zip(*chunk)]


def _shaped(x: np.ndarray, t: Tensor, i: int, k: int | None) -> np.ndarray:
    shape = tuple(t.shape)
    if x.ndim >= 1 and (x.shape[1:] == shape or (shape[:1] == (1,) and x.shape[1:] == shape[1:])) and (
            x.dtype.kind in "iufb"):
        return x.reshape((len(x), *shape))
    where = f"sample {k}, input {i}" if k is not None else f"input {i}"
    got = f"{x.dtype.name}{list(x.shape[1:] if k is not None else x.shape)}"
    raise MicronnError(f"{where} ({t.name!r}) expects {t.spec}" + (" values" if k is not None else
                       " samples stacked along a new first axis") + f", got {got}")


def to_input(x: np.ndarray, t: Tensor, ref: Tensor | None = None, first: int = 0) -> np.ndarray:
    """Values ``x`` (a chunk) as input ``t``'s type: floats quantized with its scale and zero point, integers of
    another quantized input (``ref``) dequantized for a float input, other integers cast where they fit."""
    if x.dtype == t.dtype:
        return x
    if x.dtype.kind == "f":
        if t.dtype.kind == "f":
            return x.astype(t.dtype)
        if t.dtype.kind not in "iu" or t.quant is None or not len(t.quant.scale) or t.scale == 0:
            raise MicronnError(f"float values cannot feed input {t.name!r} ({t.spec}): it is not quantized")
        bad = ~np.isfinite(x)
        if bad.any():
            k = first + int(np.flatnonzero(bad.reshape(len(x), -1).any(axis=1))[0])
            raise MicronnError(f"sample {k} holds NaN or infinity, which has no quantized value")
        lo, hi = dtype_range(t.dtype)
        with np.errstate(over="ignore"):  # huge values clamp below
            q = tflite_round(x.astype(np.float32) / np.float32(t.scale)) + t.zero_point
        return np.clip(q, lo, hi).astype(t.dtype)
    if x.dtype.kind in "iub":
        if t.dtype.kind == "f":
            if ref is not None and ref.dtype == x.dtype and ref.quant is not None and ref.scale:
                return ((x.astype(np.float32) - np.float32(ref.zero_point)) * np.float32(ref.scale)).astype(t.dtype)
            return x.astype(t.dtype)
        if t.dtype.kind in "iu":
            lo, hi = dtype_range(t.dtype)
            if x.size and (x.min() < lo or x.max() > hi):
                hint = " (images in 0..255 go into int8 inputs as pixel - 128)" if t.dtype == np.int8 and \
                    x.dtype == np.uint8 else ""
                raise MicronnError(f"{x.dtype.name} values from {x.min()} to {x.max()} do not fit input {t.name!r} "
                                   f"({t.spec}){hint}; give {t.dtype.name} values, or floats to quantize")
            return x.astype(t.dtype)
    raise MicronnError(f"{x.dtype.name} values cannot feed input {t.name!r} ({t.spec})")
