"""Offline plans: store a plan in the model as TFLM's ``OfflineMemoryAllocation`` metadata.

TFLM (and micronn) then place those tensors at the given offsets instead of planning online, so a
better plan found on the host shrinks the arena of the real TFLM on the device.
"""

from __future__ import annotations

import copy

import numpy as np

from micronn.ir import Model
from micronn.planners.base import OFFLINE_KEY, Plan

FORMAT_VERSION = 1


def offline_metadata(model: Model, plan: Plan) -> bytes:
    """The metadata bytes for ``plan`` of the main subgraph: version, subgraph count, tensor count, offsets."""
    offsets = [-1] * sum(len(sg.tensors) for sg in model.subgraphs)
    for off, r in zip(plan.offsets, plan.requests):
        if r.tensor is not None:
            offsets[r.tensor] = off
    return np.array([FORMAT_VERSION, len(model.subgraphs), len(offsets), *offsets], "<i4").tobytes()


def with_offline_plan(model: Model, plan: Plan) -> Model:
    """A copy of ``model`` (weights shared) that carries ``plan`` as offline metadata.

    TFLM cannot plan scratch buffers offline: it places them online around the fixed tensors, exactly
    as ``TflmPlanner`` does on requests carrying these offsets, which predicts the head TFLM will get.
    """
    out = copy.copy(model)
    out.metadata = dict(model.metadata)
    out.metadata[OFFLINE_KEY] = offline_metadata(model, plan)
    return out
