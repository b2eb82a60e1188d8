"""TinySeg (issue 5): spill idle tensors to storage and fuse their fetching so segmentation models fit in less RAM,
byte-identically. ``cold_ranges`` (Algorithm 2), ``transform`` (Algorithm 3), ``optimize`` (Algorithm 1),
``latency`` (what it costs), ``optimize_and_verify`` (``micronn optimize``: write the result and check it). Spilled
bytes go to a ``micronn.storage`` backend."""

from micronn.tinyseg.cold import ColdRange, cold_ranges
from micronn.tinyseg.optimize import Result, Step, optimize
from micronn.tinyseg.verify import optimize_and_verify

__all__ = ["ColdRange", "Result", "Step", "cold_ranges", "optimize", "optimize_and_verify"]
