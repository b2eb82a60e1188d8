"""Real models bundled with the package (TFLM's figures for them are in ``tests/conftest.py``)."""

from importlib import resources

from micronn.errors import ModelError


def bundled_model(name: str) -> bytes:
    """A model shipped inside the package, e.g. ``"person_detect"``."""
    path = resources.files(__name__).joinpath(f"{name}.tflite")
    if not path.is_file():
        names = sorted(p.name[:-7] for p in resources.files(__name__).iterdir() if p.name.endswith(".tflite"))
        raise ModelError(f"no bundled model {name!r}: bundled are {', '.join(names)}")
    return path.read_bytes()
