"""micronn: run TensorFlow Lite models the way TFLM runs them on a microcontroller, from Python."""

from micronn.errors import (
    ArenaTooSmallError,
    InvokeError,
    MicronnError,
    ModelError,
    PrepareError,
    UnsupportedError,
)

__version__ = "0.1.0"

__all__ = [
    "ArenaTooSmallError",
    "InvokeError",
    "MicronnError",
    "ModelError",
    "PrepareError",
    "UnsupportedError",
]
