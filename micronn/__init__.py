"""micronn: run TensorFlow Lite models the way TFLM runs them on a microcontroller, from Python."""

from micronn.errors import (
    ArenaTooSmallError,
    InvokeError,
    MicronnError,
    ModelError,
    OutputError,
    PrepareError,
    UnsupportedError,
)

__version__ = "0.1.0"

__all__ = [
    "ArenaTooSmallError",
    "InvokeError",
    "MicronnError",
    "ModelError",
    "OutputError",
    "PrepareError",
    "UnsupportedError",
]

from micronn.interpreter import Interpreter, SharedArena  # noqa: E402
from micronn.kernels import Kernel, Node, register  # noqa: E402
from micronn.resolver import OpResolver  # noqa: E402
from micronn.tflite.reader import read  # noqa: E402

__all__ += ["SharedArena", "Interpreter", "Kernel", "Node", "OpResolver", "read", "register"]
