"""What a model is and what it needs: ``analyze`` (one row per operator and the model's totals), ``info`` (ops,
tensors, sizes, memory summary, cold ranges), ``plan_report``
(the arena plan with TFLM's whole arena on the host and a Cortex-M, offline-plan export, pictures) and
``reorder_report`` (the operator order with the smallest peak, written back as .tflite). The top feature layer:
it may draw on the others (TinySeg's cold ranges)."""

from micronn.analyze.info import info
from micronn.analyze.layers import Analysis, analyze
from micronn.analyze.plan import plan_report, reorder_report
from micronn.analyze.report import html_report, write_report

__all__ = ["Analysis", "analyze", "html_report", "info", "plan_report", "reorder_report", "write_report"]
