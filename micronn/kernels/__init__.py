"""Reference kernels, one module per op (``conv_2d.py`` is CONV_2D). Importing this package registers them."""

from __future__ import annotations

import importlib
import pkgutil

from micronn.kernels.base import REGISTRY, Kernel, Node, register

for _m in pkgutil.iter_modules(__path__):
    if _m.name != "base":
        importlib.import_module(f"{__name__}.{_m.name}")

__all__ = ["REGISTRY", "Kernel", "Node", "register"]
