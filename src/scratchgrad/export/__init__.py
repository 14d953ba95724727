"""``scratchgrad.export``: trained models as standalone C for microcontrollers (float or int8).

    to_c(model, example_input, out_dir, name)                      float32 C99
    to_c(model, example_input, out_dir, name, quantize="int8",
         calibration=typical_inputs)                                 int8 C99

See docs/deploy.md. ONNX export is ``scratchgrad.onnx.export``.
"""

from scratchgrad.export.c import to_c
from scratchgrad.export.quantize import QuantizedModel

__all__ = ["QuantizedModel", "to_c"]
