"""Standalone firmware: a model compiled into a C project that runs on the microcontroller by itself.

``export`` writes the project: the model as kernel calls with every argument fixed (``codegen``), weights as
``const`` arrays, one static arena sized by micronn's plan, only the kernels the model uses, start-up code and a
linker script for the target, a Makefile (``arm-none-eabi-gcc`` or zig's clang) and a README. No flatbuffer, no
interpreter, no op resolver, no malloc, no C library. ``build`` compiles it; ``run`` loads the image on an
emulated device (Unicorn, or QEMU through the GDB protocol) or the host, feeds inputs, reads outputs and checks
them byte for byte against micronn's interpreter::

    project = micronn.export.export("person_detect.tflite", "pd_fw", target="cortex-m4")
    result = micronn.export.run(project)        # result.identical, result.instructions, result.outputs

``NativeModel`` runs the same C on the host (one native call per invoke), for fast exact simulation.
``export_tflm`` is for applications that keep TFLM: the model with micronn's plan as offline metadata and an op
resolver registering only the model's operators.
"""

from micronn.export.codegen import ExportError
from micronn.export.firmware import RunResult, build, run
from micronn.export.native import NativeModel
from micronn.export.project import Project, export, load
from micronn.export.report import report_html
from micronn.export.tflm import TflmProject, export_tflm

__all__ = ["ExportError", "NativeModel", "Project", "RunResult", "TflmProject", "build", "export", "export_tflm",
           "load", "report_html", "run"]
