"""TinySeg (issue 5): spill idle tensors to storage and fuse their fetching so segmentation models fit in less RAM,
byte-identically. ``cold_ranges`` (Algorithm 2), ``transform`` (Algorithm 3), ``optimize`` (Algorithm 1),
``storage`` (where spilled bytes go), ``latency`` (what it costs)."""

from micronn.tinyseg.cold import ColdRange, cold_ranges
from micronn.tinyseg.optimize import Result, Step, optimize

__all__ = ["ColdRange", "Result", "Step", "cold_ranges", "optimize"]
