"""Patch-based execution (issue 17, MCUNetV2-style): run the first layers of a network stripe by stripe so their
large activations never exist whole, written with standard TFLite operators and byte-identical outputs.
``transform`` rewrites the graph, ``search`` chooses where to cut and how many stripes, ``combine`` joins it with
TinySeg's spilling for ``micronn optimize --patches auto``, ``layout`` finds the patches of a patched graph again
(for ``micronn plan --plot``)."""

from micronn.patch.combine import PATCH_MODES, optimize_and_verify
from micronn.patch.layout import patch_layout
from micronn.patch.search import Choice, Result, search
from micronn.patch.transform import PatchError, Run, Stage, find_run, macs, patch, patch_stages

__all__ = ["PATCH_MODES", "Choice", "PatchError", "Result", "Run", "Stage", "find_run", "macs", "optimize_and_verify",
           "patch", "patch_layout", "patch_stages", "search"]
