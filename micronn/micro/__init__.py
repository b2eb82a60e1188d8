"""Bare-metal devices from Python, in the style of μTVM: sessions, device memory, lazy task queues.

``Session(target)`` is the entry point; backends live in ``unicorn``, ``gdb`` and ``host``, targets in ``target``,
compilers in ``toolchain``, whole models in ``runtime``. Emulator and compiler imports wait until a device needs them.
"""

from micronn.micro import (
    lower_elementwise,  # noqa: F401  (registers its lowerings)
    lower_f32,  # noqa: F401  (registers its lowerings)
    lower_lstm,  # noqa: F401  (registers its lowerings)
    lower_s16,  # noqa: F401  (registers its lowerings)
    lower_signal,  # noqa: F401  (registers its lowerings)
    lower_tinyseg,  # noqa: F401  (registers its lowerings)
)
from micronn.micro.device import Cost, DeviceFault, ExecResult, LowLevelDevice
from micronn.micro.runtime import DeviceModel, devices, run_model
from micronn.micro.session import DeviceArray, DeviceFunction, Module, Session, SessionError
from micronn.micro.target import TARGETS, Target, get_target
from micronn.micro.toolchain import ToolchainError

__all__ = ["Cost", "DeviceArray", "DeviceFault", "DeviceFunction", "DeviceModel", "ExecResult", "LowLevelDevice",
           "Module", "Session", "SessionError", "TARGETS", "Target", "ToolchainError", "devices", "get_target",
           "run_model"]
